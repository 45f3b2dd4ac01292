"""A server that outlives its client (issue 8; K15.11): one reader always drains the server's stdout,
clients attach and detach without stopping it, and while nothing is attached the session answers the
server's requests itself (the :class:`~kandev_lsp.lsp.Endpoint` router's defaults) and tracks its
diagnostics. Real gopls for the protocol; the fake server for a flood no client reads."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.lifecycle import InstallPolicy, Lifecycle
from kandev_lsp.process import ProcessSupervisor
from kandev_lsp.session import Attachment, BridgeLimits, ClientTooSlow, ServerSession
from kandev_lsp.taskenv import Task, TaskEnvironment
from stream_testkit import StreamKit

GOPLS = "/usr/bin/gopls"


async def _answer(attachment: Attachment, request_id: int | str, timeout: float = 30.0) -> dict[str, Any]:
    """Read ``attachment`` until the response to ``request_id``."""
    async with asyncio.timeout(timeout):
        async for body in attachment.messages():
            message = json.loads(body)
            if message.get("id") == request_id:  # the echo server's copy, or gopls's response
                return message
    raise AssertionError(f"the server's output ended before the answer to {request_id}")


def _send(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


# The fake server: a flood nobody reads ------------------------------------------------------------------
def test_a_flood_no_client_reads_never_blocks_the_reader(kit: StreamKit) -> None:
    """A client that reads nothing is dropped at its queue bound (ClientTooSlow), not waited for; the
    reader goes on draining, so a later client gets its answer from the same process at once."""

    async def scenario() -> None:
        limits = BridgeLimits(attachment_queue_bytes=256 * 1024)
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await lifecycle.launch("fake-echo", kit.task(), InstallPolicy(), limits=limits)
            try:
                idle = session.attach("idle")
                flood = {"jsonrpc": "2.0", "method": "test/flood", "params": {"count": 400, "size": 10_000}}
                await session.send(_send(flood))  # ~4 MB, 16 x the idle client's bound
                async with asyncio.timeout(20):
                    while not idle.ended:
                        await asyncio.sleep(0.02)
                with pytest.raises(ClientTooSlow):
                    async with aclosing(idle.messages()) as messages:
                        async for _ in messages:
                            pass
                assert session.attachments == 0
                # Nothing attached now: the rest of the flood goes to the headless endpoint; a second
                # flood with nobody attached at all must not block either.
                await session.send(_send(flood))
                later = session.attach("later")
                ping = {"jsonrpc": "2.0", "id": "ping", "method": "custom/ping"}
                await session.send(_send(ping))
                assert (await _answer(later, "ping", timeout=20))["method"] == "custom/ping"
                assert session.returncode is None
            finally:
                await session.aclose()

    asyncio.run(scenario())


def test_detach_keeps_the_server_and_the_next_client_gets_answers(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await lifecycle.launch("fake-echo", kit.task(), InstallPolicy())
            try:
                first = session.attach("first")
                await session.send(_send({"jsonrpc": "2.0", "id": 1, "method": "custom/one"}))
                assert (await _answer(first, 1))["id"] == 1
                session.detach(first)
                assert first.ended and session.attachments == 0
                pid = session.pid
                # The server asks something while nobody is attached: the router answers it (-32601 for an
                # unknown method), so the echo server sees the answer and writes it back, headless.
                await session.send(_send({"jsonrpc": "2.0", "id": 7, "method": "custom/question"}))
                await asyncio.sleep(0.3)
                second = session.attach("second")
                await session.send(_send({"jsonrpc": "2.0", "id": 2, "method": "custom/two"}))
                assert (await _answer(second, 2))["id"] == 2
                assert session.pid == pid and session.returncode is None
            finally:
                await session.aclose()

    asyncio.run(scenario())


# Real gopls --------------------------------------------------------------------------------------------
BROKEN_GO = 'package main\n\nfunc main() {\n\tvar unused int = "text"\n}\n'


def _go_task(root: Path) -> Task:
    workspace = root / "project"
    workspace.mkdir()
    (workspace / "go.mod").write_text("module example.com/project\n\ngo 1.19\n", encoding="utf-8")
    (workspace / "main.go").write_text(BROKEN_GO, encoding="utf-8")
    home = root / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "GOPATH": str(root / "gopath"),
        "GOCACHE": str(root / "gocache"),
        "GOPROXY": "off",
        "GOFLAGS": "-mod=mod",
    }
    return Task(str(workspace), TaskEnvironment.from_agent(env))


@pytest.mark.skipif(not os.path.exists(GOPLS), reason="Debian gopls is not installed")
def test_real_gopls_without_a_client_is_answered_and_publishes_diagnostics(tmp_path: Path) -> None:
    """gopls 0.5.0 stalls until its ``window/workDoneProgress/create`` is answered (FACTS): with the client
    gone right after didOpen, the session must answer it (and configuration) itself, then the diagnostics
    arrive in the headless store; a second client attaches to the same process and gets answers."""

    async def scenario() -> None:
        from kandev_lsp.host import PluginHost

        plugins = PluginHost.load(environ={})
        task = _go_task(tmp_path)
        uri = (Path(task.workspace) / "main.go").as_uri()
        async with ProcessSupervisor() as supervisor:
            session = await ServerSession.start(
                (GOPLS, "serve"),
                task,
                language=plugins.language("go"),
                plugins=plugins,
                supervisor=supervisor,
            )
            try:
                first = session.attach("first")
                initialize = {
                    "processId": None,
                    "rootUri": Path(task.workspace).as_uri(),
                    "workspaceFolders": [{"uri": Path(task.workspace).as_uri(), "name": "project"}],
                    "capabilities": {"window": {"workDoneProgress": True}},
                }
                await session.send(
                    _send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
                )
                assert "result" in await _answer(first, 1, timeout=60)
                await session.send(_send({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
                document = {"uri": uri, "languageId": "go", "version": 1, "text": BROKEN_GO}
                await session.send(
                    _send(
                        {
                            "jsonrpc": "2.0",
                            "method": "textDocument/didOpen",
                            "params": {"textDocument": document},
                        }
                    )
                )
                session.detach(first)  # gone before gopls asks anything
                pid = session.pid
                endpoint = session.headless_endpoint()
                async with asyncio.timeout(60):
                    while not ((entry := endpoint.diagnostics.get(uri)) and entry.diagnostics):
                        await asyncio.sleep(0.05)
                assert session.configuration_requests >= 1  # gopls went past its stall: it asked for settings
                assert session.returncode is None and session.pid == pid

                second = session.attach("second")
                symbols = {"textDocument": {"uri": uri}}
                await session.send(
                    _send(
                        {
                            "jsonrpc": "2.0",
                            "id": 2,
                            "method": "textDocument/documentSymbol",
                            "params": symbols,
                        }
                    )
                )
                answer = await _answer(second, 2, timeout=30)
                assert [item["name"] for item in answer["result"]] == ["main"]
                assert session.pid == pid
                status = await session.stop()  # graceful: shutdown, exit, wait
                assert session.exit_requested
                assert status == 0
            finally:
                await session.aclose()

    asyncio.run(scenario())
    shutil.rmtree(tmp_path / "gopath", ignore_errors=True)


def test_graceful_stop_sends_shutdown_then_exit_and_the_server_exits_by_itself(kit: StreamKit) -> None:
    """stop(): shutdown (bounded), exit, wait; the fake exits 0 on ``exit`` as LSP says, so the status is
    its own (an aclose() alone would close stdin and stop it: status None, exit not requested)."""

    async def scenario() -> None:
        limits = BridgeLimits(shutdown_timeout=1.0, exit_grace=5.0)
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await lifecycle.launch("fake-echo", kit.task(), InstallPolicy(), limits=limits)
            try:
                client = session.attach()
                initialize = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"capabilities": {}},
                }
                await session.send(_send(initialize))
                assert "result" in await _answer(client, 1)
                async with asyncio.timeout(10):
                    status = await session.stop()
                assert client.ended and session.exit_requested
                assert status == 0
            finally:
                await session.aclose()

    asyncio.run(scenario())
