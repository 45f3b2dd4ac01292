"""Owner-scoped settings through the shipped commands (issue 18 items 8-9; K14.8-K14.10): ``kandev-lsp
broker --owner-settings DIR`` in front of ``kandev-lsp serve`` running a real pyright. Two users' pages
(page tickets naming their owners) get a lease each; each pyright answers with its owner's
``python.analysis.typeCheckingMode`` (alice's "strict" reports the wrong return type, bob's "off" does
not), and a save of bob's settings reaches his running server, which then reports it too.

Before the fix serve answered ``workspace/configuration`` from the task host's one settings file and the
broker passed no per-owner settings: every lease got the same configuration whoever's page it was."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from routekit import request
from test_cli_broker import _environ, _ready, _serve_with_directory, _start, _stop
from test_cli_page_tickets import PAGE, _page
from test_route_real_pyright import next_frame
from websockets.asyncio.client import ClientConnection

if TYPE_CHECKING:
    from stream_testkit import RealServers

pytestmark = [pytest.mark.real_server]

SOURCE = "def f() -> int:\n    return 'no'\n"


def _owner_file(folder: Path, owner: str, mode: str) -> None:
    settings = {"lsp_server_configs": {"python": {"analysis": {"typeCheckingMode": mode}}}}
    temporary = folder / f".{owner}.tmp"
    temporary.write_text(json.dumps(settings))
    os.replace(temporary, folder / f"{owner}.json")  # saved atomically, as a settings store does


def _published(frame: dict[str, Any]) -> bool:
    return frame.get("method") == "textDocument/publishDiagnostics" and frame["params"]["uri"].endswith(
        "main.py"
    )


def _return_type_errors(frame: dict[str, Any]) -> list[Any]:
    return [
        d
        for d in frame["params"]["diagnostics"]
        if "return" in d["message"].lower() or '"str"' in d["message"]
    ]


async def _open(ws: ClientConnection, uri: str, root: str) -> dict[str, Any]:
    """initialize, open main.py, the first diagnostics pyright publishes for it."""
    capabilities = {
        "textDocument": {"publishDiagnostics": {"versionSupport": True}},
        "workspace": {"configuration": True},
    }
    await request(ws, 1, "initialize", {"processId": None, "rootUri": root, "capabilities": capabilities})
    await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    opened = {"uri": uri, "languageId": "python", "version": 1, "text": SOURCE}
    await ws.send(
        json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": opened}})
    )
    return await next_frame(ws, _published)


def test_each_owners_settings_reach_their_own_pyright_and_a_save_reaches_it_live(
    tmp_path: Path, tag: str, real_servers: RealServers
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "main.py").write_text(SOURCE)
    uri = (workspace / "main.py").as_uri()
    owners = tmp_path / "owners"
    owners.mkdir()
    _owner_file(owners, "alice", "strict")
    _owner_file(owners, "bob", "off")

    async def scenario() -> None:
        serve, directory = await _serve_with_directory(tmp_path, workspace, tag, real_servers.overrides())
        broker, line = await _start(
            "broker", "--directory", str(directory), "--allow-origin", PAGE, "--owner-settings", str(owners),
            environ=_environ(KANDEV_FEATURES_LSP_BROWSER_CONTINUITY="1"),
        )  # fmt: skip
        try:
            url = f"{line['url']}/lsp/sess-1?language=python"

            async def ticket(owner: str) -> str:
                async with httpx.AsyncClient() as http:
                    answer = await http.post(
                        f"http://127.0.0.1:{line['port']}/lsp/tickets",
                        json={"sessionId": "sess-1", "language": "python", "owner": owner},
                        headers={"Authorization": f"Bearer {line['token']}"},
                    )
                assert answer.status_code == 201, answer.text
                return str(answer.json()["ticket"])

            async with (
                await _page(url, await ticket("alice")) as alice,
                await _page(url, await ticket("bob")) as bob,
            ):
                alice_ready, bob_ready = await _ready(alice), await _ready(bob)
                assert alice_ready["lease"] != bob_ready["lease"]  # an owner never takes another's lease
                strict = await _open(alice, uri, alice_ready["workspaceUri"])
                off = await _open(bob, uri, bob_ready["workspaceUri"])
                assert _return_type_errors(strict), strict  # alice's strict mode reports it
                assert not _return_type_errors(off), off  # bob's "off" does not
                _owner_file(owners, "bob", "strict")  # bob saves his settings
                saved = await next_frame(
                    bob, lambda frame: _published(frame) and bool(_return_type_errors(frame))
                )
                assert saved["params"]["version"] == 1
        finally:  # both stopped, whatever either answers
            statuses = [await _stop(broker), await _stop(serve)]
        assert statuses == [0, 0]
        assert broker.stderr is not None
        log = (await broker.stderr.read()).decode()
        assert "event=settings_pushed" in log and "alice" not in log and "bob" not in log

    asyncio.run(scenario())
