"""A close during a real npm install proves its cleanup (issue 17 item 4; K16.2, K12.14, K8.9).

The stop frame's ``1000 stopped`` and teardown's ``1001`` are sent only once npm's whole process tree is
reaped and the staging folder removed: checked the moment the close arrives, on a real ``npm install
pyright`` (real npm, a shared npm cache), repeated. Before the fix both closes came while npm was still
running and its staging folder still there: the last caller leaving an install cancelled it without
waiting, and teardown closed connections before it stopped installs.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.host import PluginHost
from kandev_lsp.stream.contract import stop_frame
from stream_testkit import RealServers, StreamKit, tagged_alive
from websockets.exceptions import ConnectionClosed

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry]

ATTEMPTS = 3


def _staging(home: Path) -> list[Path]:
    versions = home / ".kandev" / "lsp-servers" / "python" / "versions"
    return sorted(versions.glob(".staging-*")) if versions.exists() else []


def _npm_running(tag: str) -> bool:
    for pid in tagged_alive(tag):
        try:
            if b"npm" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


async def _until_npm_is_installing(kit: StreamKit) -> None:
    async with asyncio.timeout(60):
        while not (_npm_running(kit.tag) and _staging(kit.home)):
            await asyncio.sleep(0.05)


async def _close_of(ws: Any, kit: StreamKit) -> tuple[int, str, list[Path], list[int]]:
    """The close code and reason, and what was left at the moment the close arrived."""
    async with asyncio.timeout(60):
        try:
            while True:
                await ws.recv()
        except ConnectionClosed as exc:
            left, alive = _staging(kit.home), tagged_alive(kit.tag)  # before anything else runs
            assert exc.rcvd is not None
            return exc.rcvd.code, exc.rcvd.reason, left, alive


@pytest.mark.parametrize(
    ("how", "expected"), [("stop", (1000, "stopped")), ("teardown", (1001, "going away"))]
)
def test_a_close_during_a_real_npm_install_comes_after_npm_is_reaped_and_staging_removed(
    kit: StreamKit, real_servers: RealServers, how: str, expected: tuple[int, str]
) -> None:
    plugins = PluginHost.load(environ={})
    task = kit.task(PATH="/usr/bin:/bin", npm_config_cache=str(real_servers.npm_cache))

    async def attempt() -> tuple[int, str, list[Path], list[int]]:
        serving = kit.serve(plugins, task=task)
        server = await serving.__aenter__()
        stopping: asyncio.Task[Any] | None = None
        try:
            async with kit.connect(server, "python", auto_install=True) as ws:
                assert json.loads(await ws.recv())["status"] == "installing"
                await _until_npm_is_installing(kit)
                if how == "stop":
                    await ws.send(stop_frame())
                else:
                    stopping = asyncio.ensure_future(serving.__aexit__(None, None, None))
                return await _close_of(ws, kit)
        finally:
            await (stopping if stopping is not None else serving.__aexit__(None, None, None))

    for number in range(ATTEMPTS):
        code, reason, left, alive = asyncio.run(attempt())
        assert (code, reason) == expected, f"attempt {number + 1}"
        assert left == [], f"attempt {number + 1}: the staging folder was still there at the close"
        assert alive == [], f"attempt {number + 1}: npm's tree was still running at the close: {alive}"
    assert not (kit.home / ".kandev" / "lsp-servers" / "python" / "current").exists()
