"""A browser page through the shipped ``kandev-lsp broker`` (issue 18 items 1-2), as processes: the
embedder's backend mints a ticket with the broker's token, the page presents it as a subprotocol and
reaches a real gopls behind a real ``kandev-lsp serve``; a spent ticket, an expired one and a page from
another origin are upgraded and closed at once with a code the page can read, and nothing is started.

Before the fix the command accepted only ``Authorization: Bearer``, which a page cannot send: every
placement of the token a browser can use got HTTP 401, seen by a page as close 1006 (a network failure,
which the K18 reconnect policy retries forever)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from kandev_lsp.testing import processes_tagged
from routekit import closed_with, frame_with, needs_gopls, request
from test_cli_broker import TAG, _environ, _ready, _serve_with_directory, _start, _stop
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

PAGE = "http://127.0.0.1:8411"  # the embedder's web app


async def _page(url: str, ticket: str, origin: str = PAGE) -> Any:
    return connect(
        url,
        subprotocols=["kandev-lsp.v1", f"kandev-lsp.ticket.{ticket}"],  # type: ignore[list-item]
        origin=origin,  # type: ignore[arg-type]
    )


@needs_gopls
def test_a_page_with_a_ticket_reaches_gopls_through_the_command_and_reads_every_refusal(
    tmp_path: Path, tag: str
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "go.mod").write_text("module example.com/w\n\ngo 1.19\n")

    async def scenario() -> None:
        serve, directory = await _serve_with_directory(tmp_path, workspace, tag)
        broker, line = await _start(
            "broker",
            "--directory",
            str(directory),
            "--allow-origin",
            PAGE,
            "--ticket-ttl",
            "2",
            environ=_environ(KANDEV_FEATURES_LSP_BROWSER_CONTINUITY="1"),
        )
        tickets: list[str] = []
        try:
            base = f"http://127.0.0.1:{line['port']}"
            url = f"{line['url']}/lsp/sess-1?language=go"

            async def mint(**body: str) -> str:
                async with httpx.AsyncClient() as http:
                    answer = await http.post(
                        f"{base}/lsp/tickets",
                        json={"sessionId": "sess-1", "language": "go", **body},
                        headers={"Authorization": f"Bearer {line['token']}"},
                    )
                assert answer.status_code == 201, answer.text
                assert answer.json()["expiresIn"] == 2
                tickets.append(answer.json()["ticket"])
                return tickets[-1]

            ticket = await mint()
            async with await _page(url, ticket) as ws:
                assert ws.subprotocol == "kandev-lsp.v1"  # selected; the ticket is never echoed
                ready = await _ready(ws)
                assert ready["resumed"] is False
                answer = await request(
                    ws,
                    1,
                    "initialize",
                    {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}},
                )
                assert answer["result"]["capabilities"]  # a real gopls answered
                assert processes_tagged(TAG, tag)
                await ws.send(json.dumps({"control": "stop", "id": "s"}))
                assert await frame_with(ws, "ack") == {
                    "ack": "stop",
                    "id": "s",
                    "ok": True,
                    "confirmed": True,
                }
            assert processes_tagged(TAG, tag) == []

            refused = [
                (ticket, PAGE, (4401, "unauthorized")),  # spent
                (await mint(), "https://evil.example", (4403, "forbidden_origin")),
                (await mint(language="python"), PAGE, (4401, "unauthorized")),  # another language's
            ]
            for presented, origin, outcome in refused:
                async with await _page(url, presented, origin) as ws:
                    assert await closed_with(ws) == outcome
            expired = await mint()
            await asyncio.sleep(2.5)
            async with await _page(url, expired) as ws:
                assert await closed_with(ws) == (4401, "unauthorized")
            assert processes_tagged(TAG, tag) == []  # nothing was started for a refused page

            # A client that sends no Origin (a shim) keeps the HTTP answer.
            with pytest.raises(InvalidStatus) as caught:
                async with connect(f"{url}&ticket={ticket}"):
                    pass
            assert caught.value.response.status_code == 401
        finally:  # both stopped, whatever either answers
            statuses = [await _stop(broker), await _stop(serve)]
        assert statuses == [0, 0]
        assert broker.stderr is not None
        log = (await broker.stderr.read()).decode()
        assert "why=expired" in log and "why=unknown" in log and "why=mismatch" in log
        assert "event=ticket_minted" in log
        assert not any(value in log for value in tickets)  # never logged
        assert "Traceback" not in log

    asyncio.run(scenario())
