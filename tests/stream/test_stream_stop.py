"""The stream's stop control frame: ``{"control":"stop"}`` stops the server gracefully, reaps its whole
tree, and only then closes with 1000 ``stopped``, so the close proves the cleanup (the broker's stop,
K16.2, K12.14). Normal JSON-RPC traffic is never taken for it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from kandev_lsp.session import BridgeLimits
from kandev_lsp.stream.contract import is_stop_frame, stop_frame
from stream_testkit import StreamKit, pid_alive, tagged_alive
from websockets.exceptions import ConnectionClosed

#: Short graces so the stubborn server's SIGKILL comes quickly; it still takes the full sequence.
LIMITS = BridgeLimits(exit_grace=0.3, stop_grace=0.5, shutdown_timeout=0.5)


async def _ready(ws: Any) -> None:
    frame = json.loads(await ws.recv())
    assert frame["status"] == "ready", frame


async def _request(ws: Any, number: int, method: str, params: Any = None) -> dict[str, Any]:
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params}))
    async with asyncio.timeout(10):
        while True:
            message = json.loads(await ws.recv())
            if message.get("id") == number and "method" not in message:
                return dict(message)


def test_a_stop_frame_closes_1000_only_after_a_server_that_ignores_exit_is_reaped(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve(limits=LIMITS) as server, kit.connect(server, "fake-stubborn") as ws:
            await _ready(ws)
            await _request(ws, 1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
            await ws.send('{"jsonrpc":"2.0","method":"initialized","params":{}}')
            # What the broker sends: shutdown, exit (ignored by this server), then the stop frame.
            await _request(ws, 2, "shutdown")
            await ws.send('{"jsonrpc":"2.0","method":"exit"}')
            await asyncio.sleep(0.2)
            pids = tagged_alive(kit.tag)
            assert len(pids) == 1  # it ignored exit
            await ws.send(stop_frame())
            async with asyncio.timeout(10):
                try:
                    while True:
                        await ws.recv()
                except ConnectionClosed as exc:
                    assert exc.rcvd is not None
                    # Checked the moment the close arrives: the tree is already gone.
                    assert not any(pid_alive(pid) for pid in pids), "closed before the tree was reaped"
                    assert (exc.rcvd.code, exc.rcvd.reason) == (1000, "stopped")

    asyncio.run(scenario())


def test_a_stop_frame_before_initialize_stops_the_server_and_closes_1000(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve(limits=LIMITS) as server, kit.connect(server, "fake-stubborn") as ws:
            await _ready(ws)
            await asyncio.sleep(0.1)
            pids = tagged_alive(kit.tag)
            assert pids
            await ws.send('{"control": "stop", "id": 7}')  # other keys and spacing are fine
            async with asyncio.timeout(10):
                try:
                    while True:
                        await ws.recv()
                except ConnectionClosed as exc:
                    assert not any(pid_alive(pid) for pid in pids)
                    assert exc.rcvd is not None and (exc.rcvd.code, exc.rcvd.reason) == (1000, "stopped")

    asyncio.run(scenario())


def test_json_rpc_traffic_that_mentions_control_is_forwarded_untouched(kit: StreamKit) -> None:
    bodies = [
        '{"jsonrpc":"2.0","method":"x/notify","params":{"control":"stop"}}',
        '{"control":"stop","jsonrpc":"2.0","method":"x/control"}',
        '{"control":"stop" ,"jsonrpc":"2.0","method":"x/control","params":"' + "y" * 2000 + '"}',
    ]

    async def scenario() -> None:
        async with kit.serve(limits=LIMITS) as server, kit.connect(server, "fake-echo") as ws:
            await _ready(ws)
            for body in bodies:
                await ws.send(body)
                async with asyncio.timeout(10):
                    assert await ws.recv() == body  # the echo server got it byte for byte
            assert ws.close_code is None

    asyncio.run(scenario())


def test_is_stop_frame_is_exact() -> None:
    assert is_stop_frame(b'{"control":"stop"}')
    assert is_stop_frame(b'{"control": "stop", "id": 3}')
    assert not is_stop_frame(b'{"control":"release"}')
    assert not is_stop_frame(b'{"control":"stop","jsonrpc":"2.0"}')
    assert not is_stop_frame(b' {"control":"stop"}')  # the fast path: only frames that start with it
    assert not is_stop_frame(b'{"jsonrpc":"2.0","method":"m","params":{"control":"stop"}}')
    assert not is_stop_frame(b'{"control":"stop"' + b" " * 2000 + b"}")  # over the size looked at
    assert not is_stop_frame(b'{"control":"stop"')  # not JSON


def test_a_stop_frame_during_an_install_cancels_it_and_closes_1000_after_the_cleanup(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve() as server, kit.connect(server, "fake-slow", auto_install=True) as ws:
            assert json.loads(await ws.recv())["status"] == "installing"
            assert kit.release is not None
            async with asyncio.timeout(10):  # the download has started and stalls
                while "/1.0.0/slow-ls" not in kit.release.requests:
                    await asyncio.sleep(0.02)
            await ws.send(stop_frame())
            async with asyncio.timeout(10):
                try:
                    while True:
                        await ws.recv()
                except ConnectionClosed as exc:
                    assert exc.rcvd is not None and (exc.rcvd.code, exc.rcvd.reason) == (1000, "stopped")
                    staging = kit.home / ".kandev" / "lsp-servers" / "fake-slow"
                    assert not [p for p in staging.rglob("*") if "staging" in p.name]  # cleaned up first
            assert not tagged_alive(kit.tag)

    asyncio.run(scenario())
