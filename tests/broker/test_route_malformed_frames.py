"""Frames the JSON parser refuses, from either side of a lease (trial of issue 18; K14, K15.10-K15.11).

The lease mode parsed with ``json.loads`` and caught only ``ValueError``. A frame nested deeper than the
parser's recursion limit (200 KB of brackets) raised ``RecursionError``: from a page, websockets logged
"connection handler failed" with a traceback and the page got 1000 with no reason (the contract says
1008 for a frame that is not a JSON object); from serve, the upstream reader died and left the upstream
connection open, so serve kept the server running for a lease that was gone. ``NaN`` and ``Infinity``
(not JSON) were accepted and written on to serve as ``NaN``, which the server cannot parse: the request
was never answered. The lease mode now parses with the project's one strict parser
(``protocol.jsonrpc.parse_message``)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from routekit import (
    attached,
    closed_with,
    fake_upstream,
    initialize,
    messages_until_stop,
    ready,
    request,
    stand_in,
)
from test_route_real_pyright import next_frame
from websockets.asyncio.server import ServerConnection

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("params", [DEEP, "NaN", "[Infinity]", "1e400", "[-1e400]"])
def test_a_client_frame_that_is_no_json_object_is_closed_1008_and_the_lease_lives_on(
    params: str, caplog: pytest.LogCaptureFixture
) -> None:
    record: list[dict[str, Any]] = []

    async def scenario() -> None:
        async with fake_upstream("lsp", record) as url, attached(url, continuity=True) as (server, ws):
            frame = await ready(ws)
            await initialize(ws, frame["workspaceUri"])
            await ws.send('{"jsonrpc":"2.0","id":2,"method":"x/refused","params":' + params + "}")
            assert await closed_with(ws) == (1008, "policy violation")
            async with server_client(server, frame["lease"]) as again:
                resumed = await ready(again)
                assert resumed["resumed"] is True and resumed["lease"] == frame["lease"]

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    assert not [m for m in record if m.get("method") == "x/refused"], "an invalid message reached serve"
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert "connection handler failed" not in caplog.text
    [detached] = [r.getMessage() for r in caplog.records if "lease_detached" in r.getMessage()][:1]
    assert "code=1008" in detached


def server_client(server: Any, lease: str) -> Any:
    from routekit import client

    return client(server, f"/lsp/s1?language=go&lease={lease}")


def test_a_server_message_the_parser_refuses_is_skipped_and_the_lease_reads_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def upstream(ws: ServerConnection) -> None:
        async for message in messages_until_stop(ws):
            if message.get("method") in ("initialize", "shutdown", "x/ping"):
                await ws.send('{"jsonrpc":"2.0","method":"x/deep","params":' + DEEP + "}")
                await ws.send(
                    json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}})
                )

    async def scenario() -> None:
        async with stand_in(upstream) as url, attached(url, continuity=True) as (_, ws):
            frame = await ready(ws)
            await initialize(ws, frame["workspaceUri"])
            answer = await request(ws, 5, "x/ping", {})
            assert answer["result"] == {"capabilities": {}}  # the reader read on past the deep one
            await ws.send(json.dumps({"control": "stop", "id": "s"}))
            ack = await next_frame(ws, lambda f: f.get("ack") == "stop")
            assert ack["confirmed"] is True

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    assert "reason=server_exit" not in caplog.text
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
