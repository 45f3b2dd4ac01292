"""What a client sends before ``ready`` (during an install) is held by the broker, within bounds: at most
256 frames and, in all, the size of one message (``max_message``, 16 MiB by default). Before, only the
count was bounded: 256 frames of 16 MiB, 4 GiB held in the broker's memory for one connection during a
pyright install, where the contract's clients send nothing at all."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from routekit import READY_FRAME, attached, closed_with
from websockets.asyncio.server import ServerConnection, serve


@asynccontextmanager
async def installing_upstream(done: asyncio.Event, received: list[str]) -> AsyncIterator[str]:
    """A stand-in serve that installs until ``done`` is set, then is ready; what it receives is kept."""

    async def handler(ws: ServerConnection) -> None:
        await ws.send(json.dumps({"status": "installing", "language": "go"}))
        installed = asyncio.ensure_future(done.wait())
        await asyncio.wait(
            [installed, asyncio.ensure_future(ws.wait_closed())], return_when="FIRST_COMPLETED"
        )
        if not installed.done():  # the broker left first (its teardown): serve cancels the install
            installed.cancel()
            return
        await ws.send(json.dumps({"status": "installed", "language": "go"}))
        await ws.send(json.dumps(READY_FRAME))
        async for raw in ws:
            received.append(str(raw))
            message = json.loads(raw)
            if message.get("control") == "stop":
                await ws.close(1000, "stopped")
                return
            if message.get("method") == "shutdown":
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": None}))

    async with serve(handler, "127.0.0.1", 0) as server:
        yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/api/v1/lsp/stream"


def _note(size: int) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": "x/held", "params": "x" * size})


def test_frames_held_during_an_install_are_bounded_in_bytes_and_within_it_delivered_after_ready() -> None:
    async def scenario() -> None:
        done = asyncio.Event()
        received: list[str] = []
        async with (
            installing_upstream(done, received) as url,
            attached(url, continuity=True, max_message=4096) as (_, ws),
        ):
            assert json.loads(await ws.recv())["status"] == "installing"
            for _ in range(5):  # 5 x ~1 KB: within the frame count, beyond one message's size
                await ws.send(_note(1000))
            assert await closed_with(ws) == (1008, "policy violation")  # at once, during the install
            done.set()
        # Within the bound the frames wait for ready and reach serve in order.
        done = asyncio.Event()
        received = []
        async with (
            installing_upstream(done, received) as url,
            attached(url, continuity=True, max_message=4096) as (_, ws),
        ):
            assert json.loads(await ws.recv())["status"] == "installing"
            for _ in range(3):
                await ws.send(_note(1000))
            done.set()
            while json.loads(await ws.recv()).get("status") != "ready":
                pass
            async with asyncio.timeout(10):
                while len([r for r in received if "x/held" in r]) < 3:
                    await asyncio.sleep(0.02)

    asyncio.run(scenario())
