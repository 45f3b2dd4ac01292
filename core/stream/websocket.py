"""A WebSocket connection as a :class:`~kandev_lsp.stream.bridge.ClientChannel`.

Each text (or binary) message from the client is one LSP message body; each body from the server is sent
as one text message. Incoming messages are read without UTF-8 decoding (the server parses them anyway);
outgoing bodies are checked to be UTF-8, since a text frame must be.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable

from kandev_lsp.protocol.errors import MalformedMessage, ReceivedFrameTooLarge
from kandev_lsp.stream.bridge import ClientGone
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK
from websockets.frames import CloseCode


class WebSocketChannel:
    """The client side of a stream connection.

    :param pending: messages received before the bridge started (see the install hand-off rule in
        ``docs/stream-contract.md``); they are delivered first, in order.
    :param max_message: the connection's ``max_size``, for the error raised when websockets refused a
        larger message.
    """

    def __init__(
        self, websocket: ServerConnection, *, pending: Iterable[bytes] = (), max_message: int
    ) -> None:
        self._ws = websocket
        self._pending = list(pending)
        self._max_message = max_message

    async def messages(self) -> AsyncGenerator[bytes, None]:
        pending, self._pending = self._pending, []
        for body in pending:
            yield body
        while True:
            try:
                yield await self._ws.recv(decode=False)
            except ConnectionClosedOK:
                return
            except ConnectionClosed as exc:
                if exc.sent is not None and exc.sent.code == CloseCode.MESSAGE_TOO_BIG:
                    raise ReceivedFrameTooLarge(
                        f"the client sent a message over the {self._max_message}-byte limit",
                        part="body",
                        limit=self._max_message,
                        size=self._max_message + 1,
                    ) from None
                return

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
