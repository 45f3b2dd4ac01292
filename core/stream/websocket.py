"""A WebSocket connection as a :class:`~kandev_lsp.stream.bridge.ClientChannel`.

Each text (or binary) message from the client is one LSP message body; each body from the server is sent
as one text message. Incoming messages are received fragment by fragment and checked to be UTF-8 (RFC 6455
requires it of text frames; LSP bodies are UTF-8 JSON, so binary frames are held to it too): a message
that is not is refused with 1007 instead of being passed to the server. Outgoing bodies are checked to be
UTF-8, since a text frame must be.

Why fragment by fragment (``recv_streaming``) instead of ``recv``: ``recv`` keeps every fragment of a
message as its own object until the last one arrives and then joins them, so a client sending an
oversized message as thousands of small fragments made ``serve`` hold the limit's worth of small
allocations, which the allocator does not give back (tens of MiB of RSS left after the refusal). Here each
fragment is appended to one buffer and dropped at once; the WebSocket layer checks the running size
against ``max_size`` on every fragment's header and refuses the message (1009) as soon as it passes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Iterable

from kandev_lsp.protocol.errors import MalformedMessage, ReceivedFrameTooLarge, RemoteProtocolError
from kandev_lsp.stream.bridge import ClientGone
from websockets.asyncio.connection import Connection
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.protocol import State


class ClientClosedAbnormally(RemoteProtocolError):
    """The WebSocket layer failed the connection (a malformed frame: 1002, or another RFC 6455 error).

    :ivar code: the close code the WebSocket layer sent.
    """

    def __init__(self, message: str, code: int) -> None:
        self.code = code
        super().__init__(message)


def check_utf8(body: bytes) -> None:
    """Raise :class:`MalformedMessage` when ``body`` is not UTF-8 (ASCII, the usual case, is a fast scan)."""
    if body.isascii():
        return
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedMessage(
            f"the client sent a message that is not valid UTF-8 (byte {exc.start})"
        ) from None


async def close_within(websocket: Connection, code: int, reason: str, deadline: float) -> bool:
    """Close ``websocket`` with ``code``/``reason``, the whole closing handshake bounded by ``deadline``.

    websockets waits for its close frame to drain into the socket before its own ``close_timeout``
    starts, so a peer that stopped reading would keep the TCP connection until a keepalive fired (and
    forever without keepalive). After ``deadline`` seconds the transport is dropped. Returns whether the
    handshake finished in time.
    """
    try:
        async with asyncio.timeout(deadline):
            await websocket.close(code, reason)
        return True
    except TimeoutError:
        websocket.transport.abort()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(websocket.wait_closed(), 1.0)
        return False


def closed_by(websocket: Connection) -> tuple[int | None, int | None]:
    """The close codes sent and received on ``websocket`` (None for a side that sent none)."""
    protocol = websocket.protocol
    sent = protocol.close_sent.code if protocol.close_sent is not None else None
    received = protocol.close_rcvd.code if protocol.close_rcvd is not None else None
    return sent, received


def is_open(websocket: Connection) -> bool:
    return websocket.protocol.state is State.OPEN


class WebSocketChannel:
    """The client side of a stream connection.

    :param pending: messages received before the bridge started (see the install hand-off rule in
        ``docs/stream-contract.md``); they are delivered first, in order.
    :param max_message: the connection's ``max_size``, for the error raised when websockets refused a
        larger message.
    """

    def __init__(self, websocket: Connection, *, pending: Iterable[bytes] = (), max_message: int) -> None:
        self._ws = websocket
        self._pending = list(pending)
        self._max_message = max_message

    async def messages(self) -> AsyncGenerator[bytes, None]:
        pending, self._pending = self._pending, []
        for body in pending:
            check_utf8(body)
            yield body
        while True:
            try:
                body = await self._receive()
            except ConnectionClosed as exc:
                self._closed(exc)
                return
            check_utf8(body)
            yield body

    async def _receive(self) -> bytes:
        fragments = self._ws.recv_streaming(decode=False)
        first = await anext(fragments)
        assert isinstance(first, bytes)
        buffer: bytearray | None = None
        async for fragment in fragments:  # only a fragmented message gets here
            if buffer is None:
                buffer = bytearray(first)
            assert isinstance(fragment, bytes)
            buffer += fragment
        return first if buffer is None else bytes(buffer)

    def _closed(self, exc: ConnectionClosed) -> None:
        """Turn the way the connection closed into the bridge's outcome: return for a close by the
        client (or by us), raise for a refusal by the WebSocket layer."""
        sent = exc.sent
        if sent is None or (exc.rcvd is not None and exc.rcvd_then_sent):
            return  # the client closed first (or the TCP connection dropped): the client left
        if sent.code == CloseCode.MESSAGE_TOO_BIG:
            raise ReceivedFrameTooLarge(
                f"the client sent a message over the {self._max_message}-byte limit",
                part="body",
                limit=self._max_message,
                size=self._max_message + 1,
            )
        if sent.code in (CloseCode.NORMAL_CLOSURE, CloseCode.GOING_AWAY):
            return  # our own close (teardown): the caller knows why
        raise ClientClosedAbnormally(
            f"the WebSocket layer closed the connection with {sent.code} ({sent.reason or 'no reason'})",
            sent.code,
        )

    async def send(self, body: bytes) -> None:
        if not body.isascii():
            try:
                body.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise MalformedMessage(
                    f"the server sent a message that is not valid UTF-8 (byte {exc.start})"
                ) from None
        try:
            await self._ws.send(body, text=True)
        except ConnectionClosed:
            raise ClientGone from None
