"""The smaller divergences of issue 18 item 11, each as a client or an operator meets it: the 1009
reason, the reason after a stop or release ack, one structured line (no traceback) for a client that
vanishes, no URL in the broker's log, and ``kandev-lsp broker --detach-timeout``.

Before the fix: 1009 carried websockets' text ("frame with ... bytes exceeds limit ..."); the 1000 after
an ack was empty where the contract's control table says ``stopped`` / ``released``; each abrupt
disconnect logged websockets' "connection handler failed" with a ~20-line traceback; the log's
``broker_listening`` line held the URL; the detached lifetime had no flag."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from routekit import (
    BROKER_TOKEN,
    attached,
    broker,
    client,
    closed_with,
    fake_upstream,
    frame_with,
    initialize,
    one_session,
    ready,
    until,
)
from websockets.asyncio.client import connect


def test_an_oversized_message_is_closed_1009_message_too_big() -> None:
    async def scenario() -> None:
        async with fake_upstream("lsp") as url, attached(url, continuity=True, max_message=4096) as (_, ws):
            await ready(ws)
            await ws.send("x" * 8192)
            assert await closed_with(ws) == (1009, "message too big")

    asyncio.run(scenario())


@pytest.mark.parametrize(("control", "reason"), [("stop", "stopped"), ("release", "released")])
def test_the_close_after_an_ack_says_what_was_acknowledged(control: str, reason: str) -> None:
    async def scenario() -> None:
        async with fake_upstream("lsp") as url, attached(url, continuity=True) as (_, ws):
            frame = await ready(ws)
            await initialize(ws, frame["workspaceUri"])
            await ws.send(json.dumps({"control": control, "id": 1}))
            assert (await frame_with(ws, "ack"))["ok"] is True
            assert await closed_with(ws) == (1000, reason)

    asyncio.run(scenario())


def test_a_client_that_vanishes_is_one_structured_line_not_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        async with fake_upstream("lsp") as url, attached(url, continuity=True) as (_, ws):
            frame = await ready(ws)
            await initialize(ws, frame["workspaceUri"])
            ws.transport.abort()  # no close frame: a killed tab, a closed laptop lid
            await until(lambda: "event=lease_detached" in caplog.text)
        # Leaving the broker's context waits for every connection handler to end (websockets'
        # wait_closed), so whatever the disconnect would log has been logged by the assertions below.

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    [detached] = [r.getMessage() for r in caplog.records if "event=lease_detached" in r.getMessage()]
    assert "how=lost" in detached and "code=1006" in detached
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert "connection handler failed" not in caplog.text


def test_broker_command_detach_timeout_and_no_url_in_its_log(tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("KANDEV_LSP_", "KANDEV_FEATURES"))}
    environ.update(KANDEV_LSP_BROKER_TOKEN=BROKER_TOKEN, KANDEV_FEATURES_LSP_BROWSER_CONTINUITY="1")
    command = [sys.executable, "-m", "kandev_lsp.cli", "broker"]

    async def scenario() -> None:
        async with fake_upstream("lsp") as url:
            directory = tmp_path / "directory.json"
            execution = {"executor": "local", "streamUrl": url, "token": "t" * 20, "workspace": "/w"}
            directory.write_text(json.dumps({"sessions": {"s1": "x1"}, "executions": {"x1": execution}}))
            process = await asyncio.create_subprocess_exec(
                *command,
                "--directory",
                str(directory),
                "--detach-timeout",
                "1.5",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=environ,
            )
            assert process.stdout is not None and process.stderr is not None
            try:
                async with asyncio.timeout(30):
                    line = json.loads(await process.stdout.readline())
                headers = {"Authorization": f"Bearer {BROKER_TOKEN}"}
                async with connect(f"{line['url']}/lsp/s1?language=go", additional_headers=headers) as ws:
                    frame = await ready(ws)
                    await initialize(ws, frame["workspaceUri"])
                log = b""
                async with asyncio.timeout(20):  # the detached lease expires after 1.5 s
                    while b"event=lease_expired" not in log:
                        log += await process.stderr.readline()
            finally:
                process.send_signal(signal.SIGTERM)
                async with asyncio.timeout(30):
                    assert await process.wait() == 0
            log += await process.stderr.read()
            text = log.decode()
            assert "reason=detached_timeout" in text
            assert "event=broker_listening port=" in text and "ws://" not in text  # no URL in the log

        for flag, value in (("--detach-timeout", "0"), ("--claim-policy", "sometimes")):
            bad = await asyncio.create_subprocess_exec(
                *command, "--directory", str(directory), flag, value,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=environ,
            )  # fmt: skip
            out, err = await bad.communicate()
            assert bad.returncode == 2 and out == b"" and flag.encode() in err

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("policy", "claims_unhinted", "claims_stale"),
    [(None, True, False), ("never", False, False), ("always", True, True)],
)
def test_the_claim_policy_on_the_route(policy: str | None, claims_unhinted: bool, claims_stale: bool) -> None:
    """Issue 18 item 10 (K12.9, K12.15): by default a tab without a hint claims the detached lease, a
    tab whose hint names no lease (expired, evicted) starts fresh; ``never`` and ``always`` as named."""
    from kandev_lsp.broker.leases import ClaimPolicy

    config = {} if policy is None else {"claim_policy": ClaimPolicy(policy)}

    async def resumed(server: Any, target: str) -> bool:
        async with client(server, target) as ws:
            frame = await ready(ws)
            if not frame["resumed"]:
                await initialize(ws, frame["workspaceUri"])
            return bool(frame["resumed"])

    async def scenario() -> None:
        async with fake_upstream("lsp") as url, broker(one_session(url), continuity=True, **config) as server:
            assert await resumed(server, "/lsp/s1?language=go") is False  # the first tab: a new lease
            await until(lambda: server.mode.counts().detached == 1)
            assert await resumed(server, "/lsp/s1?language=go&lease=evicted-hint") is claims_stale
            await until(lambda: server.mode.counts().detached >= 1)
            assert await resumed(server, "/lsp/s1?language=go") is claims_unhinted

    asyncio.run(scenario())
