"""A request the server never answers does not wait forever (issue 18 item 6, K15.5): the running broker
answers it -32803 "request timed out" after the request timeout and sends the server ``$/cancelRequest``
for it; a late answer is dropped.

Two servers behind a real ``serve``: pyright stopped with SIGSTOP (the client side, with a real server),
and a stand-in that records every message and never answers a hover (the server side: it is the oracle
for the ``$/cancelRequest`` it received). Before the fix ``LeasePeer.expire`` existed but the running
broker never called it: a hover waited, unanswered, for as long as the server did."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kandev_lsp.testing import processes_tagged
from routekit import TAG, broker, client, initialize, one_session, ready, real_serve, request, until
from test_route_real_pyright import next_frame
from test_route_settings import LANGUAGE, received, recorder_serve
from websockets.asyncio.client import ClientConnection

if TYPE_CHECKING:
    from stream_testkit import RealServers

TIMEOUT = 1.5
#: pyright's: its warm-up hover (the first after analysis) must never be the one that times out.
PYRIGHT_TIMEOUT = 3.0


def _hover(uri: str) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 4}}


async def _timed_request(
    ws: ClientConnection, number: int, method: str, params: Any
) -> tuple[dict[str, Any], float]:
    loop = asyncio.get_running_loop()
    started = loop.time()
    answer = await request(ws, number, method, params)
    return answer, loop.time() - started


def test_an_unanswered_request_is_cancelled_at_the_server_and_answered_with_a_timeout(
    tmp_path: Path, tag: str
) -> None:
    async def scenario() -> None:
        async with (
            recorder_serve(tmp_path, tag) as host,
            broker(one_session(host.upstream.url), continuity=True, request_timeout=TIMEOUT) as server,
            client(server, f"/lsp/s1?language={LANGUAGE}") as ws,
        ):
            record = host.record
            frame = await ready(ws)
            await initialize(ws, frame["workspaceUri"])
            answer, waited = await _timed_request(ws, "h1", "textDocument/hover", _hover("file:///w/a.py"))  # type: ignore[arg-type]
            assert answer["error"]["code"] == -32803
            assert answer["error"]["message"].startswith("request timed out")
            assert TIMEOUT - 0.2 <= waited < TIMEOUT + 10
            hover = next(m for m in received(record) if m.get("method") == "textDocument/hover")
            await until(lambda: any(m.get("method") == "$/cancelRequest" for m in received(record)))
            [cancel] = [m for m in received(record) if m.get("method") == "$/cancelRequest"]
            assert cancel["params"] == {"id": hover["id"]}  # the server-facing id it was sent under

    asyncio.run(scenario())


@pytest.mark.real_server
def test_a_stopped_pyright_does_not_hold_a_request_forever(
    tmp_path: Path, tag: str, real_servers: RealServers
) -> None:
    async def scenario() -> None:
        async with real_serve(tmp_path, tag, env=real_servers.overrides()) as upstream:
            source = tmp_path / "workspace" / "main.py"
            source.write_text("def f() -> int:\n    return 1\n")
            uri = source.as_uri()
            async with (
                broker(one_session(upstream.url), continuity=True, request_timeout=PYRIGHT_TIMEOUT) as server,
                client(server, "/lsp/s1?language=python") as ws,
            ):
                frame = await ready(ws)
                await initialize(ws, frame["workspaceUri"])
                opened = {"uri": uri, "languageId": "python", "version": 1, "text": source.read_text()}
                await ws.send(
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "method": "textDocument/didOpen",
                            "params": {"textDocument": opened},
                        }
                    )
                )
                await next_frame(ws, lambda f: f.get("method") == "textDocument/publishDiagnostics")
                assert (await request(ws, 2, "textDocument/hover", _hover(uri)))["result"]  # pyright works
                pids = processes_tagged(TAG, tag)
                assert pids
                try:
                    for pid in pids:
                        os.kill(pid, signal.SIGSTOP)
                    answer, waited = await _timed_request(ws, 3, "textDocument/hover", _hover(uri))
                    assert answer["error"]["code"] == -32803 and waited < PYRIGHT_TIMEOUT + 10
                finally:
                    for pid in pids:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGCONT)
                # pyright resumes: it answers (or refuses) request 3 late, which the client never sees,
                # and answers the next one.
                after = await request(ws, 4, "textDocument/hover", _hover(uri))
                assert after["result"]
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(1.0):
                        while True:
                            assert json.loads(await ws.recv()).get("id") != 3  # no second answer to 3

    asyncio.run(scenario())
