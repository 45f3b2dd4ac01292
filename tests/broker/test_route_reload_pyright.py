"""Reloads at any moment, with a real pyright behind a real ``serve`` (issue 18 items 3-5; K14, K17.4,
K17.6, K17.7): a page that reloads between ``initialize`` and ``initialized`` (before or after the answer)
leaves a lease the next page resumes with the capabilities, its diagnostics and a hover answer, and every
publication carries the page's own document versions.

Before the fix the server never got ``initialized`` (the page that began the handshake was gone and the
next one was told not to initialize), so pyright published nothing and answered nothing; the ready frame
said ``initialized: true`` as soon as the answer had arrived, and a page that resumed while it was
pending had ``capabilities: null`` and no way to learn them. Diagnostics came back in server-facing
versions (2 for a page that opened 1), which a client that drops unknown versions drops."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kandev_lsp.testing import processes_tagged
from routekit import TAG, SpyDirectory, broker, client, execution_for, frame_with, ready, real_serve, request
from test_route_real_pyright import diagnostics_with_errors, next_frame
from websockets.asyncio.client import ClientConnection

if TYPE_CHECKING:  # the suite's real_servers fixture puts tests/stream on sys.path
    from stream_testkit import RealServers

pytestmark = [pytest.mark.real_server]

SOURCE = "def f() -> int:\n    return 'no'\n"
CAPABILITIES = {"textDocument": {"publishDiagnostics": {"versionSupport": True}, "hover": {}}}


def _send(method: str, params: Any, number: int | None = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if number is not None:
        message["id"] = number
    return json.dumps(message)


async def _capabilities(ws: ClientConnection, frame: dict[str, Any]) -> dict[str, Any]:
    """What a resumed page learns of the server: from its ready frame, or (initialize still pending then)
    from the ``initialized`` frame that follows (item 4)."""
    if frame["capabilities"] is not None:
        assert frame["initialized"] is True
        return dict(frame["capabilities"])
    assert frame["initialized"] is False
    later = await frame_with(ws, "status")
    assert later["status"] == "initialized", later
    assert later["positionEncoding"] == "utf-16" and "suppressedProviders" in later
    return dict(later["capabilities"])


async def _resume_and_use(ws: ClientConnection, frame: dict[str, Any], uri: str) -> None:
    """The resumed page: capabilities, reopen at version 1, attachment-ready, its diagnostics (in its own
    version), an edit at version 2 diagnosed as 2, a hover answer."""
    assert frame["resumed"] is True
    capabilities = await _capabilities(ws, frame)
    assert capabilities["hoverProvider"] and capabilities["textDocumentSync"]
    opened = {"uri": uri, "languageId": "python", "version": 1, "text": SOURCE}
    await ws.send(_send("textDocument/didOpen", {"textDocument": opened}))
    await ws.send(json.dumps({"control": "attachment-ready", "id": "r"}))
    first = await next_frame(ws, diagnostics_with_errors)
    assert first["params"]["version"] == 1  # the page's own version, whatever the server has
    change = {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"text": SOURCE + "x: str = 1\n"}],
    }
    await ws.send(_send("textDocument/didChange", change))
    edited = await next_frame(ws, lambda f: diagnostics_with_errors(f) and f["params"]["version"] == 2)
    assert len(edited["params"]["diagnostics"]) >= 2
    hover = await request(
        ws, 7, "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 4}}
    )
    assert hover["result"] and "f" in json.dumps(hover["result"]["contents"])


def test_a_reload_between_initialize_and_initialized_leaves_a_lease_the_next_page_can_use(
    tmp_path: Path, tag: str, real_servers: RealServers
) -> None:
    async def scenario() -> None:
        async with real_serve(tmp_path, tag, env=real_servers.overrides()) as upstream:
            source = tmp_path / "workspace" / "main.py"
            source.write_text(SOURCE)
            uri = source.as_uri()
            directory = SpyDirectory({"s1": execution_for(upstream.url)})
            async with broker(directory, continuity=True) as server:
                target = "/lsp/s1?language=python"
                # 1. The page reloads right after sending initialize (during pyright's cold initialize).
                async with client(server, target) as ws:
                    frame = await ready(ws)
                    init = {"processId": None, "rootUri": frame["workspaceUri"], "capabilities": CAPABILITIES}
                    await ws.send(_send("initialize", init, 1))
                    opened = {"uri": uri, "languageId": "python", "version": 1, "text": SOURCE}
                    await ws.send(_send("textDocument/didOpen", {"textDocument": opened}))
                lease = frame["lease"]
                async with client(server, f"{target}&lease={lease}") as ws:
                    await _resume_and_use(ws, await ready(ws), uri)
                    pids = processes_tagged(TAG, tag)
                    await ws.send(json.dumps({"control": "stop", "id": "s"}))
                    assert (await frame_with(ws, "ack"))["confirmed"] is True
                assert pids and processes_tagged(TAG, tag) == []

                # 2. The page reloads after the answer, before sending initialized.
                async with client(server, target) as ws:
                    frame = await ready(ws)
                    init = {"processId": None, "rootUri": frame["workspaceUri"], "capabilities": CAPABILITIES}
                    answer = await request(ws, 1, "initialize", init)
                    assert answer["result"]["capabilities"]
                async with client(server, f"{target}&lease={frame['lease']}") as ws:
                    again = await ready(ws)
                    assert again["initialized"] is True and again["capabilities"]  # finished by the broker
                    await _resume_and_use(ws, again, uri)
                    await ws.send(json.dumps({"control": "stop", "id": "s"}))
                    assert (await frame_with(ws, "ack"))["confirmed"] is True
                assert processes_tagged(TAG, tag) == []

    asyncio.run(scenario())
