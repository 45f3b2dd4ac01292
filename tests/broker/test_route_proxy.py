"""The broker's route with browser continuity off: an authenticated proxy in front of a real ``serve``
running Debian's gopls, over real 127.0.0.1 WebSockets (K11.1-K11.6, K16.5, K18.2).

Fakes appear only for faults a real ``serve`` will not produce on demand: an upstream whose TCP
connection drops without a close frame, and one that closes with a given code.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.broker.auth import Caller, CallerRequest
from kandev_lsp.broker.directory import FileExecutionDirectory
from kandev_lsp.broker.route import BrokerServer
from kandev_lsp.testing import processes_tagged
from routekit import (
    BROKER_TOKEN,
    TAG,
    SpyDirectory,
    attached,
    broker,
    client,
    closed_with,
    fake_upstream,
    metrics,
    needs_gopls,
    one_session,
    real_serve,
    request,
)
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

# --- the proxy end to end ----------------------------------------------------------------------------


@needs_gopls
def test_the_proxy_carries_a_real_server_and_the_client_leaving_stops_it(tmp_path: Path, tag: str) -> None:
    async def scenario() -> None:
        async with real_serve(tmp_path, tag) as upstream:
            directory = one_session(upstream.url)
            async with broker(directory) as server, client(server, "/lsp/s1?language=go") as ws:
                ready = json.loads(await ws.recv())
                assert ready["status"] == "ready" and ready["language"] == "go"
                root = ready["workspaceUri"]
                answer = await request(
                    ws, 1, "initialize", {"processId": None, "rootUri": root, "capabilities": {}}
                )
                assert "capabilities" in answer["result"]
                assert processes_tagged(TAG, tag), "gopls runs behind serve"
                await ws.close()
            async with asyncio.timeout(10):
                while processes_tagged(TAG, tag):  # the proxy closed the upstream: serve stops gopls
                    await asyncio.sleep(0.05)
            assert directory.lookups == 1

    asyncio.run(scenario())


@needs_gopls
def test_a_stop_frame_through_the_proxy_reaches_serve_which_reaps_the_server_before_closing_1000(
    tmp_path: Path, tag: str
) -> None:
    """Continuity off: the client's ``{"control":"stop"}`` frame is relayed unchanged to serve, which
    stops gopls, reaps its tree and only then closes 1000 ``stopped``; the proxy forwards that close,
    so the client's close proves the cleanup (K16.2, K16.5)."""

    async def scenario() -> None:
        async with real_serve(tmp_path, tag) as upstream, attached(upstream.url) as (_, ws):
            ready = json.loads(await ws.recv())
            answer = await request(
                ws,
                1,
                "initialize",
                {"processId": None, "rootUri": ready["workspaceUri"], "capabilities": {}},
            )
            assert "capabilities" in answer["result"]
            assert processes_tagged(TAG, tag), "gopls runs behind serve"
            await ws.send('{"control":"stop"}')
            assert await closed_with(ws, timeout=20) == (1000, "stopped")
            assert processes_tagged(TAG, tag) == [], "the close came before gopls was reaped"

    asyncio.run(scenario())


def test_an_unauthenticated_caller_causes_no_lookup_and_learns_nothing() -> None:
    async def scenario() -> None:
        directory = one_session("ws://127.0.0.1:9/")
        async with broker(directory) as server:
            for target, token, status in [
                ("/lsp/s1?language=go", None, 401),
                ("/lsp/s1?language=go", "wrong-token-0123456789", 401),
                ("/lsp/s1", None, 401),  # a bad query is not even looked at
                ("/elsewhere", BROKER_TOKEN, 404),
                ("/lsp/s1?language=go&lease=a/b", BROKER_TOKEN, 400),
                ("/metrics", None, 401),
            ]:
                with pytest.raises(InvalidStatus) as caught:
                    async with client(server, target, token):
                        pass
                assert caught.value.response.status_code == status, target
            assert directory.lookups == 0

    asyncio.run(scenario())


def test_the_authorizer_sees_the_session_and_headers() -> None:
    seen: list[CallerRequest] = []

    class CookieAuthorizer:
        async def authorize(self, request: CallerRequest) -> Caller | None:
            seen.append(request)
            return Caller("alice") if request.headers.get("cookie") == "sid=ok" else None

    async def scenario() -> None:
        server = BrokerServer(directory=SpyDirectory({}), authorizer=CookieAuthorizer())
        async with server:
            async with connect(
                f"{server.url}/lsp/s9?language=go", additional_headers={"Cookie": "sid=ok"}
            ) as ws:
                assert await closed_with(ws) == (4002, "session unavailable")
            with pytest.raises(InvalidStatus):
                async with connect(f"{server.url}/lsp/s9?language=go"):
                    pass
        assert [request.session_id for request in seen] == ["s9", "s9"]

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("sessions", "code", "reason"),
    [
        ({"sessions": {}, "executions": {}}, 4002, "session unavailable"),
        (
            {
                "sessions": {"s1": "x1"},
                "executions": {
                    "x1": {
                        "executor": "sprites",
                        "streamUrl": "ws://127.0.0.1:9/",
                        "token": "t",
                        "workspace": "/w",
                    }
                },
            },
            4004,
            "executor unsupported",
        ),
        (  # nothing listens there: the upstream is unavailable
            {
                "sessions": {"s1": "x1"},
                "executions": {
                    "x1": {
                        "executor": "docker",
                        "streamUrl": "ws://127.0.0.1:9/",
                        "token": "t",
                        "workspace": "/w",
                    }
                },
            },
            4002,
            "session unavailable",
        ),
    ],
)
def test_directory_and_upstream_failures_close_with_their_codes(
    tmp_path: Path, sessions: dict[str, Any], code: int, reason: str
) -> None:
    path = tmp_path / "directory.json"
    path.write_text(json.dumps(sessions))

    async def scenario() -> None:
        async with (
            broker(FileExecutionDirectory(path)) as server,
            client(server, "/lsp/s1?language=go") as ws,
        ):
            assert await closed_with(ws) == (code, reason)

    asyncio.run(scenario())


@needs_gopls
def test_a_full_cap_closes_the_next_client_with_4005_and_metrics_show_the_slot(
    tmp_path: Path, tag: str
) -> None:
    async def scenario() -> None:
        async with real_serve(tmp_path, tag) as upstream:
            directory = one_session(upstream.url)
            async with broker(directory, capacity=1) as server:
                async with client(server, "/lsp/s1?language=go") as first:
                    assert json.loads(await first.recv())["status"] == "ready"
                    async with client(server, "/lsp/s1?language=go") as second:
                        assert await closed_with(second) == (4005, "too many language servers")
                    assert "lsp_lease_active 1.0" in await metrics(server)
                    assert directory.lookups == 2
                async with asyncio.timeout(10):  # the slot comes back once the upstream is closed
                    while "lsp_lease_active 0.0" not in await metrics(server):
                        await asyncio.sleep(0.05)
                async with client(server, "/lsp/s1?language=go") as third:
                    assert json.loads(await third.recv())["status"] == "ready"

    asyncio.run(scenario())


# --- upstream faults (fakes: a real serve will not drop its TCP connection on demand) -----------------


@pytest.mark.parametrize(
    ("behaviour", "code", "reason"),
    [("drop", 4009, "connection failed"), ("4006", 4006, "server stopped"), ("1011", 1011, "server stopped")],
)
def test_upstream_closes_are_forwarded_but_never_1006(behaviour: str, code: int, reason: str) -> None:
    async def scenario() -> None:
        async with fake_upstream(behaviour) as url, attached(url) as (_, ws):
            assert json.loads(await ws.recv())["status"] == "ready"
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            assert await closed_with(ws) == (code, reason)

    asyncio.run(scenario())
