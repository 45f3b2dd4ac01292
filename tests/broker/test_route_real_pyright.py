"""The reason leases exist, end to end with a real pyright installed from npm by a real ``serve``: the
install is relayed, a reload comes back to the same server process, and its diagnostics arrive in
order for the reopened text (K12, K14, K17.5-K17.7). The process list is the oracle for "the same
server"; versions are checked on the wire."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.testing import processes_tagged
from routekit import TAG, SpyDirectory, broker, client, execution_for, real_serve, tagged_named
from websockets.asyncio.client import ClientConnection

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry]


async def next_frame(ws: ClientConnection, want: Any) -> dict[str, Any]:
    """The next frame for which ``want(frame)`` holds; everything before it is returned in order too."""
    async with asyncio.timeout(120):
        while True:
            frame = json.loads(await ws.recv())
            if want(frame):
                return dict(frame)


def diagnostics_with_errors(frame: dict[str, Any]) -> bool:
    return frame.get("method") == "textDocument/publishDiagnostics" and bool(frame["params"]["diagnostics"])


def test_a_reload_returns_to_the_same_pyright_with_diagnostics_for_the_reopened_text(
    tmp_path: Path, tag: str
) -> None:
    async def scenario() -> None:
        async with real_serve(tmp_path, tag) as upstream:
            source = tmp_path / "workspace" / "main.py"
            source.write_text("def f() -> int:\n    return 'no'\n")
            opened = {"uri": source.as_uri(), "languageId": "python", "text": source.read_text()}
            directory = SpyDirectory({"s1": execution_for(upstream.url)})
            async with broker(directory, continuity=True) as server:
                async with client(server, "/lsp/s1?language=python&autoInstall=1") as ws:
                    statuses = []
                    while (frame := json.loads(await asyncio.wait_for(ws.recv(), 300)))["status"] != "ready":
                        statuses.append(frame["status"])
                    assert statuses == ["installing", "installed"]  # serve's install, relayed
                    lease = frame["lease"]
                    capabilities = {"textDocument": {"publishDiagnostics": {"versionSupport": True}}}
                    init = {"processId": None, "rootUri": frame["workspaceUri"], "capabilities": capabilities}
                    await ws.send(
                        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
                    )
                    await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
                    did_open = {"textDocument": {**opened, "version": 7}}
                    await ws.send(
                        json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": did_open})
                    )
                    first = await next_frame(ws, diagnostics_with_errors)
                    assert first["params"]["version"] == 7  # the client's own version (item 5)
                    pids = tagged_named(tag, "node")  # pyright itself, not the python it runs now and then
                    assert pids
                async with client(server, f"/lsp/s1?language=python&lease={lease}") as ws:
                    again = json.loads(await ws.recv())
                    assert again["status"] == "ready" and again["resumed"] is True
                    assert again["capabilities"]["textDocumentSync"]
                    assert tagged_named(tag, "node") == pids  # the same pyright
                    did_open = {"textDocument": {**opened, "version": 1}}  # the reloaded tab starts over
                    await ws.send(
                        json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": did_open})
                    )
                    await ws.send(json.dumps({"control": "attachment-ready", "id": "r"}))
                    seen: list[dict[str, Any]] = []

                    def record(frame: dict[str, Any]) -> bool:
                        seen.append(frame)
                        return diagnostics_with_errors(frame)

                    fresh = await next_frame(ws, record)
                    assert fresh["params"]["version"] == 1  # its own: the server has it as 2 (item 5)
                    assert {"ack": "attachment-ready", "id": "r", "ok": True} in seen
                    published = [f for f in seen if f.get("method") == "textDocument/publishDiagnostics"]
                    assert all(f["params"].get("version") == 1 for f in published)  # nothing stale
                    await ws.send(json.dumps({"control": "stop", "id": "s"}))
                    ack = await next_frame(ws, lambda frame: "ack" in frame and frame["ack"] == "stop")
                    assert ack["confirmed"] is True
                    assert processes_tagged(TAG, tag) == []

    asyncio.run(scenario())
