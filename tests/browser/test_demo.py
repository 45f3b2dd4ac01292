"""web/README.md's second command, ``web/demo.py``, as a user runs it: it prints the page's URL, the page
shows pyright's marker in Chromium, and Ctrl-C (SIGINT) stops everything it started (issue 18 item 12)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid

import pytest
from cdp import Cdp, Page
from chromium import Chromium
from kandev_lsp.testing import processes_tagged
from pagekit import ERROR_LINE, TAG, WEB, markers, reap, state
from stream_testkit import RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry]


def test_the_demo_prints_a_url_whose_page_shows_a_marker_and_ctrl_c_stops_everything(
    chromium: Chromium, real_servers: RealServers
) -> None:
    tag = uuid.uuid4().hex
    environ = {
        **{key: value for key, value in os.environ.items() if not key.startswith("KANDEV_")},
        **real_servers.overrides(),  # the installed pyright, found in this HOME's managed cache
        TAG: tag,  # every process the demo starts inherits it
    }
    with subprocess.Popen(
        [sys.executable, str(WEB / "demo.py"), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ,
        text=True,
    ) as demo:
        try:
            _run_the_demo(demo, chromium, tag)
        finally:
            if demo.poll() is None:
                demo.kill()
                demo.wait()
            reap(tag)


def _run_the_demo(demo: subprocess.Popen[str], chromium: Chromium, tag: str) -> None:
    assert demo.stdout is not None and demo.stderr is not None
    line = json.loads(demo.stdout.readline() or "{}")
    assert line.get("event") == "listening", demo.stderr.read()

    async def scenario() -> None:
        async with Cdp.connect(chromium.devtools_url) as cdp:
            page = await Page.open(cdp)
            try:
                await page.goto(line["url"])
                assert await state(page, "ready") == "ready"
                [[marked, _]] = await markers(page)
                assert marked == ERROR_LINE
            finally:
                await page.close()

    asyncio.run(scenario())
    started = processes_tagged(TAG, tag)
    assert len(started) >= 5  # the demo, serve, the broker, the backend, pyright
    demo.send_signal(signal.SIGINT)  # Ctrl-C
    _, errors = demo.communicate(timeout=60)
    assert demo.returncode == 0 and "Traceback" not in errors, errors
    assert processes_tagged(TAG, tag) == []
