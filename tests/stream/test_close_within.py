"""``close_within`` on a connection the peer already ended while output was still queued.

A peer that half-closes its TCP connection (FIN) while the server's transport still holds unsent bytes,
then reads them all, makes asyncio close the transport once the buffer drains, without counting the
connection as lost. websockets' ``close()`` then aborts that transport, and on Python 3.11 the abort
raises ``AttributeError: 'NoneType' object has no attribute 'call_soon'``. The broker's routes, its lease
writer and ``serve`` all close through ``close_within``, so before the fix the handler crashed there (the
same race, client side, failed the stream suite's oversized-message test on CI).

The peer is a raw socket, not a WebSocket client: no WebSocket library half-closes with data pending.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os

from kandev_lsp.stream.websocket import close_within
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

_PENDING = 8 << 20  # far more than the kernel's socket buffers hold: the rest waits in the transport


async def _half_closing_peer(port: int) -> None:
    """Handshake, let the server's output pile up, send FIN, then read everything to the end."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    await reader.readuntil(b"\r\n\r\n")
    await asyncio.sleep(0.3)
    writer.write_eof()
    await asyncio.sleep(0.1)
    while await reader.read(1 << 20):
        pass
    writer.close()


def test_close_within_leaves_a_connection_the_peer_already_ended_alone() -> None:
    outcome: dict[str, object] = {}

    async def handler(ws: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):  # the peer's end may surface here or only in the state
            await ws.send(b"x" * _PENDING)
        outcome["state"] = ws.protocol.state
        try:
            outcome["in_time"] = await close_within(ws, 1000, "", 2.0)
        except Exception as exc:  # what the test is about: report it, do not let websockets log it
            outcome["raised"] = repr(exc)

    async def scenario() -> None:
        async with serve(handler, "127.0.0.1", 0, max_size=None) as server:
            port = server.sockets[0].getsockname()[1]
            async with asyncio.timeout(20):
                await _half_closing_peer(port)
                while "in_time" not in outcome and "raised" not in outcome:
                    await asyncio.sleep(0.02)

    asyncio.run(scenario())
    # The scenario must have produced the state the fix is about, or the test proves nothing.
    assert outcome["state"] is State.CLOSED, outcome
    assert "raised" not in outcome, outcome
    assert outcome["in_time"] is True
