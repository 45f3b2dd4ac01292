"""A WebSocket connection as a :class:`~kandev_lsp.stream.bridge.ClientChannel`.

Each text (or binary) message from the client is one LSP message body (except the stop control frame,
which ends :meth:`WebSocketChannel.messages` with :class:`~kandev_lsp.stream.bridge.StopRequested`); each
body from the server is sent as one text message. Incoming messages are received fragment by fragment and checked to be UTF-8 (RFC 6455
requires it of text frames; LSP bodies are UTF-8 JSON, so binary frames are held to it too): a message
that is not is refused with 1007 instead of being passed to the server. Outgoing bodies are checked to be
UTF-8, since a text frame must be.

Why fragment by fragment (``recv_streaming``) into a buffer of our own: ``recv`` keeps every fragment of
a message until the last one arrives, then joins them. The WebSocket layer checks the running size
against ``max_size`` on every fragment's header and refuses the message (1009) as soon as it passes, but
by then up to the limit (16 MiB) had been allocated on the heap, which the allocator keeps: ``serve``
stayed 14-18 MiB larger after each such refusal (measured by the test of issue 7 item 16). Here the
fragments of a fragmented message are copied, one at a time, into an anonymous memory mapping reserved
at the limit's size: only the pages written cost memory, and closing the mapping gives them all back,
whether the message completed or was refused. Unfragmented messages (nearly all) are used as received.
"""

from __future__ import annotations

import asyncio
import contextlib
import mmap
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from typing import Any

from kandev_lsp.protocol.errors import MalformedMessage, ReceivedFrameTooLarge, RemoteProtocolError
from kandev_lsp.stream.bridge import ClientGone, StopRequested
from kandev_lsp.stream.contract import (
    CLOSE_REASONS,
    CONTROL_PREFIX,
    control_object,
    is_stop_frame,
    refused_control,
    settings_ack,
    settings_request,
)
from websockets.asyncio.connection import Connection
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.protocol import State
from websockets.server import ServerProtocol


class _DocumentedReasons(ServerProtocol):
    """websockets' server protocol, failing an oversized message with the contracts' reason."""

    def fail(self, code: CloseCode | int, reason: str = "") -> None:
        if code == CloseCode.MESSAGE_TOO_BIG:
            reason = CLOSE_REASONS[CloseCode.MESSAGE_TOO_BIG]
        super().fail(code, reason)


class DocumentedCloseConnection(ServerConnection):
    """websockets' server connection whose 1009 says ``message too big``, as both contracts document.

    websockets refuses a client message over ``max_size`` itself, with 1009 and a reason of its own
    ("frame with 16777217 bytes exceeds limit of 16777216 bytes"), from inside its sans-io parser
    (``Protocol.parse`` calls ``self.fail(1009, str(exc))``). ``serve`` and the broker pass this class
    to ``websockets.asyncio.server.serve(create_connection=...)``, which is documented, but it
    customizes the connection only: ``serve()`` builds the ``ServerProtocol`` itself and offers no way
    to choose its class or that reason (checked against the websockets documentation; ``max_size=None``
    with a limit of our own would buffer a whole oversized frame first, which is what ``max_size``
    exists to prevent). So this reaches into the library: the protocol instance ``serve()`` built is
    given a subclass whose ``fail`` (a public method) substitutes the reason. Safe because the subclass
    adds no state and ``ServerProtocol`` has no ``__slots__``; only that exact class is swapped (another
    is left as it is: a cosmetic reason is not worth a failed connection), and the 1009 tests of both
    routes (tests/stream/test_stream_close.py, tests/broker/test_route_divergences.py) fail for a
    websockets release where this no longer holds.
    """

    def __init__(self, protocol: ServerProtocol, *args: Any, **kwargs: Any) -> None:
        if type(protocol) is ServerProtocol:  # only websockets' own class is known to take the swap
            protocol.__class__ = _DocumentedReasons
        super().__init__(protocol, *args, **kwargs)


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

    A connection already closed is left alone: websockets' ``close()`` would abort its transport, and on
    Python 3.11 a transport the peer half-closed while output was still buffered has already let go of
    its loop, so that abort raises ``AttributeError`` (``'NoneType' object has no attribute
    'call_soon'``) instead of doing nothing.
    """
    if websocket.protocol.state is State.CLOSED:
        return True
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


class FragmentBuffer:
    """The fragments of one message, joined in an anonymous mapping of ``capacity`` bytes.

    The mapping is reserved, not allocated: only the pages written count towards the process's memory,
    and :meth:`close` returns them to the system at once (a heap buffer of the same size would stay
    with the process after it is freed).
    """

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._map = mmap.mmap(-1, max(capacity, 1))
        self._size = 0

    def append(self, data: bytes) -> None:
        end = self._size + len(data)
        if end > self._capacity:  # the WebSocket layer refuses it first; this keeps the mapping safe
            raise ReceivedFrameTooLarge(
                f"the client sent a message over the {self._capacity}-byte limit",
                part="body",
                limit=self._capacity,
                size=end,
            )
        self._map[self._size : end] = data
        self._size = end

    def take(self) -> bytes:
        """The message so far, as bytes (a copy: the mapping is closed afterwards)."""
        return self._map[: self._size]

    def close(self) -> None:
        self._map.close()


class WebSocketChannel:
    """The client side of a stream connection.

    :param pending: messages received before the bridge started (see the install hand-off rule in
        ``docs/stream-contract.md``); they are delivered first, in order.
    :param max_message: the connection's ``max_size``, for the error raised when websockets refused a
        larger message.
    :param on_settings: applies a settings request (``ServerSession.use_settings``) and says whether
        the server's settings changed; the request is then answered with ``{"ack":"settings"}``.
    """

    def __init__(
        self,
        websocket: Connection,
        *,
        pending: Iterable[bytes] = (),
        max_message: int,
        on_settings: Callable[[Mapping[str, Any] | None], bool] | None = None,
    ) -> None:
        self._ws = websocket
        self._pending = list(pending)
        self._max_message = max_message
        self._on_settings = on_settings

    async def messages(self) -> AsyncGenerator[bytes, None]:
        pending, self._pending = self._pending, []
        for body in pending:
            check_utf8(body)
            if not (body.startswith(CONTROL_PREFIX) and await self._control(body)):
                yield body
        while True:
            try:
                body = await self._receive()
            except ConnectionClosed as exc:
                self._closed(exc)
                return
            check_utf8(body)
            # The stream's control frames (docs/stream-contract.md, "Control frames"); JSON-RPC
            # traffic pays one startswith and is never parsed here.
            if not (body.startswith(CONTROL_PREFIX) and await self._control(body)):
                yield body

    async def _control(self, body: bytes) -> bool:
        """Act on a control frame: True when ``body`` was one (it is not forwarded). One serve does not
        act on (an unknown control, a settings request over its limit) is answered with an error ack,
        never passed to the server, which would take it for a broken stream."""
        frame = control_object(body, self._max_message)  # parsed once, for every control frame
        if frame is None:
            return False
        if is_stop_frame(body, frame):
            raise StopRequested
        on_settings = self._on_settings
        request = settings_request(body, frame) if on_settings is not None else None
        if request is None or on_settings is None:
            answer = refused_control(frame, len(body))
        else:
            answer = settings_ack(on_settings(request.settings))
        with contextlib.suppress(ClientGone):
            await self.send(answer.encode("utf-8"))
        return True

    async def _receive(self) -> bytes:
        fragments = self._ws.recv_streaming(decode=False)
        first = await anext(fragments)
        assert isinstance(first, bytes)
        buffer: FragmentBuffer | None = None
        try:
            async for fragment in fragments:  # only a fragmented message gets here
                assert isinstance(fragment, bytes)
                if buffer is None:
                    buffer = FragmentBuffer(self._max_message)
                    buffer.append(first)
                buffer.append(fragment)
            return first if buffer is None else buffer.take()
        finally:
            if buffer is not None:
                buffer.close()

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
        _check_outgoing(body)
        try:
            await self._ws.send(body, text=True)
        except ConnectionClosed:
            raise ClientGone from None

    def send_now(self, body: bytes) -> bool:
        """Frame ``body`` as one text message if that needs no waiting; False when it would (the transport
        is over its high-water mark, or the connection is not open: :meth:`send` then waits or raises).

        The non-waiting part of websockets' own ``send`` without its two coroutines and context manager:
        the session's reader calls it for every message of a client that keeps up
        (:meth:`kandev_lsp.session.Attachment.write_directly`). The frame goes out at the next
        :meth:`flush_now`, which the reader calls once the messages of one read are all framed.
        """
        ws = self._ws
        if ws.paused or ws.send_in_progress is not None or ws.protocol.state is not State.OPEN:
            return False
        _check_outgoing(body)
        ws.protocol.send_text(body)
        return True

    def flush_now(self) -> None:
        """Hand the frames :meth:`send_now` made to the transport: joined into one write while they are
        small (several messages of one read: one system call), one write each otherwise (no copy)."""
        ws = self._ws
        protocol = ws.protocol
        writes = protocol.data_to_send()
        if not writes:
            return
        if not all(writes):  # an end-of-stream marker (never while open): websockets' own path
            protocol.writes[:0] = writes
            ws.send_data()
        elif len(writes) > 1 and sum(map(len, writes)) <= _JOIN_BELOW:
            ws.transport.write(b"".join(writes))
        else:
            for data in writes:
                ws.transport.write(data)


#: Frames are joined into one transport write up to this many bytes.
_JOIN_BELOW = 64 * 1024


def _check_outgoing(body: bytes) -> None:
    """A text frame must be UTF-8 (ASCII, the usual case, is a fast scan)."""
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedMessage(
                f"the server sent a message that is not valid UTF-8 (byte {exc.start})"
            ) from None
