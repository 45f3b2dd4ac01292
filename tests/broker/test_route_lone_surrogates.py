"""A message whose strings hold a lone surrogate crosses a lease both ways, and the lease lives on.

JSON allows ``"\\ud800"`` (an escape of half a surrogate pair), and a browser page writes exactly that:
a JavaScript string may hold a lone surrogate (a paste, an editor that splits a pair) and
``JSON.stringify`` escapes it since ES2019. The broker parses each message (it rewrites ids and
versions) and writes it again; written with ``ensure_ascii=False`` the lone surrogate came out raw, which
no UTF-8 text frame can carry. Before the fix the upstream writer died on ``UnicodeEncodeError`` (a
traceback in the broker's log), the upstream connection was dropped, serve stopped pyright, the lease
ended ``server_exit`` and the page got 4009, which the reference page retries: the same document then
kills the next server. Now the escape is written as the client wrote it."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from routekit import (
    READY_FRAME,
    SpyDirectory,
    attached,
    broker,
    client,
    execution_for,
    ready,
    real_serve,
    request,
    tagged_named,
)
from test_route_real_pyright import next_frame
from websockets.asyncio.server import ServerConnection, serve

if TYPE_CHECKING:  # the suite's real_servers fixture puts tests/stream on sys.path
    from stream_testkit import RealServers

#: A document as a page's JSON.stringify writes it: the escape of a lone high surrogate, inside a string.
LONE = '"\\ud800"'


def test_a_page_document_with_a_lone_surrogate_reaches_pyright_and_the_lease_lives_on(
    tmp_path: Path, tag: str, real_servers: RealServers, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with real_serve(tmp_path, tag, env=real_servers.overrides()) as upstream:
            uri = (tmp_path / "workspace" / "main.py").as_uri()
            directory = SpyDirectory({"s1": execution_for(upstream.url)})
            async with (
                broker(directory, continuity=True) as server,
                client(server, "/lsp/s1?language=python") as ws,
            ):
                frame = await ready(ws)
                init = {"processId": None, "rootUri": frame["workspaceUri"], "capabilities": {}}
                await request(ws, 1, "initialize", init)
                await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
                pids = tagged_named(tag, "node")  # pyright itself, not the python it runs now and then
                assert len(pids) == 1, pids
                opened = {
                    "uri": uri,
                    "languageId": "python",
                    "version": 1,
                    "text": 'x = "@"\nn: int = "no"\n',
                }
                body = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "method": "textDocument/didOpen",
                        "params": {"textDocument": opened},
                    }
                )
                await ws.send(body.replace("@", "\\ud800"))  # x = "<a lone surrogate>"
                published = await next_frame(
                    ws, lambda f: f.get("method") == "textDocument/publishDiagnostics"
                )
                assert published["params"]["version"] == 1
                hover = await request(
                    ws,
                    2,
                    "textDocument/hover",
                    {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 0}},
                )
                assert "int" in json.dumps(hover["result"]["contents"])
                assert tagged_named(tag, "node") == pids  # the same pyright: the lease lived on
                await ws.send(json.dumps({"control": "stop", "id": "s"}))
                assert (await next_frame(ws, lambda f: f.get("ack") == "stop"))["confirmed"] is True

    with caplog.at_level(logging.INFO, logger="kandev_lsp"):
        asyncio.run(scenario())
    assert "reason=server_exit" not in caplog.text
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


def test_a_server_message_with_a_lone_surrogate_reaches_the_page_and_the_upstream_gets_it_back() -> None:
    """The other direction, and the bytes: a stand-in serve (a fault a real one sends only with a
    server that escapes one) publishes a log message holding the escape; the page gets it, and what
    the page sends back reaches serve with the escape as the page wrote it."""
    received: list[str] = []

    async def upstream(ws: ServerConnection) -> None:
        await ws.send(json.dumps(READY_FRAME))
        async for raw in ws:
            assert isinstance(raw, str)
            received.append(raw)
            message = json.loads(raw)
            if message.get("control") == "stop":  # the broker's teardown: as serve, confirmed
                await ws.close(1000, "stopped")
                return
            if message.get("method") == "shutdown":
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": None}))
            if message.get("method") == "initialize":
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}}
                await ws.send(json.dumps(answer))
                await ws.send(
                    '{"jsonrpc":"2.0","method":"window/logMessage","params":{"type":3,"message":'
                    + LONE
                    + "}}"
                )

    async def scenario() -> None:
        async with serve(upstream, "127.0.0.1", 0) as stand_in:
            url = f"ws://127.0.0.1:{stand_in.sockets[0].getsockname()[1]}/api/v1/lsp/stream"
            async with attached(url, continuity=True) as (_, ws):
                frame = await ready(ws)
                init = {"processId": None, "rootUri": frame["workspaceUri"], "capabilities": {}}
                await request(ws, 1, "initialize", init)
                logged = await next_frame(ws, lambda f: f.get("method") == "window/logMessage")
                assert logged["params"]["message"] == "\ud800"
                await ws.send('{"jsonrpc":"2.0","method":"x/echo","params":{"text":' + LONE + "}}")
                async with asyncio.timeout(10):
                    while not any('"x/echo"' in raw for raw in received):
                        await asyncio.sleep(0.05)
                [echo] = [raw for raw in received if '"x/echo"' in raw]
                assert '"text":"\\ud800"' in echo
                message: dict[str, Any] = json.loads(echo)
                assert message["params"]["text"] == "\ud800"

    asyncio.run(scenario())


def test_frame_text_escapes_a_lone_surrogate_and_writes_everything_else_as_itself() -> None:
    from kandev_lsp.stream.contract import frame_text

    text = frame_text({"a": "\ud800 é \U0001f600 \udfff", "b": [1, None]})
    assert text == '{"a":"\\ud800 é \U0001f600 \\udfff","b":[1,null]}'
    assert json.loads(text) == {"a": "\ud800 é \U0001f600 \udfff", "b": [1, None]}
    text.encode("utf-8")  # a text frame can carry it
