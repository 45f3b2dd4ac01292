"""The connections of the broker's listener: websockets' own, with two differences (issue 18 items 1, 11).

**One plain HTTP request: how ``POST /lsp/tickets`` is served.**

websockets parses only WebSocket handshakes: a request with a body is refused before any hook of ours
runs. The ticket route needs a JSON body on the same host and port as ``/lsp/{sessionId}`` (an embedder
configures one broker address). So the listener's connections are a subclass of websockets' own
(:func:`listener_connection`, through ``serve(create_connection=...)``, the library's documented way to
customize a connection): it looks at the first bytes a client sends. A ``POST`` is parsed by h11 (a
well-kept HTTP/1.1 parser; no hand-written one) and answered by the broker's handler, then the
connection is closed; anything else is handed to websockets unchanged, byte for byte.

Bounds: the request head is at most 16 KiB and the body at most ``max_body`` bytes (413 past it, before
it is buffered); the whole exchange shares websockets' opening-handshake deadline (``open_timeout``),
after which the library drops the connection. One request per connection (``Connection: close``).

**The documented close reason for an oversized message**, ``message too big`` instead of websockets'
own text: the connection class is :class:`~kandev_lsp.stream.websocket.DocumentedCloseConnection`'s,
which ``serve`` uses too.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Final

import h11
from kandev_lsp.stream.websocket import DocumentedCloseConnection
from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.server import ServerProtocol

__all__ = ["PlainAnswerer", "PlainRequest", "PlainResponse", "listener_connection"]

log = logging.getLogger("kandev_lsp.broker")

#: The first bytes of a request this module answers; everything else is a WebSocket handshake.
_PLAIN_METHOD: Final = b"POST "
_MAX_HEAD: Final = 16 * 1024


@dataclass(frozen=True, slots=True)
class PlainRequest:
    """A plain HTTP request: method, target (path and query), headers, whole body."""

    method: str
    target: str
    headers: Headers
    body: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class PlainResponse:
    """A JSON answer: status, body object, extra headers."""

    status: HTTPStatus
    body: dict[str, Any] = field(repr=False)
    headers: Sequence[tuple[str, str]] = ()


PlainAnswerer = Callable[[PlainRequest], Awaitable[PlainResponse]]


def _error(status: HTTPStatus, error: str, message: str) -> PlainResponse:
    return PlainResponse(status, {"error": error, "message": message})


class _Exchange:
    """The h11 side of one plain request, fed by the connection's ``data_received``."""

    def __init__(self, connection: _ListenerConnection, answer: PlainAnswerer, max_body: int) -> None:
        self._connection = connection
        self._answer = answer
        self._max_body = max_body
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
        self._head: h11.Request | None = None
        self._body = bytearray()
        self._done = False  # the request is whole, or was answered early: nothing more is read
        self.task: asyncio.Task[None] | None = None

    def receive(self, data: bytes) -> None:
        if self._done:
            return  # one request per connection: what follows the first is not read
        try:
            self._h11.receive_data(data)
            self._pump()
        except h11.RemoteProtocolError as exc:
            status = HTTPStatus(exc.error_status_hint)
            self._respond(_error(status, "bad_http_request", "the request is not valid HTTP/1.1"))

    def _pump(self) -> None:
        while not self._done:
            event = self._h11.next_event()
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            if isinstance(event, h11.Request):
                self._head = event
                length = _content_length(event.headers)
                if length is not None and length > self._max_body:
                    self._too_large()
                    return
            elif isinstance(event, h11.Data):
                self._body += event.data
                if len(self._body) > self._max_body:
                    self._too_large()
                    return
            elif isinstance(event, h11.EndOfMessage):
                self._done = True
                self.task = asyncio.ensure_future(self._dispatch())
                return
            elif isinstance(event, h11.ConnectionClosed):
                self._connection.transport.close()
                return

    def _too_large(self) -> None:
        message = f"the request body is larger than {self._max_body} bytes"
        self._respond(_error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "body_too_large", message))

    async def _dispatch(self) -> None:
        assert self._head is not None
        headers = Headers(
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in self._head.headers.raw_items()
        )
        request = PlainRequest(
            self._head.method.decode("ascii", "replace"),
            self._head.target.decode("ascii", "replace"),
            headers,
            bytes(self._body),
        )
        try:
            response = await self._answer(request)
        except Exception:  # a bug: say so in our format, answer 500, keep serving others
            log.exception("event=plain_request_crashed")
            response = _error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal_error", "see the broker's log")
        self._respond(response)

    def _respond(self, response: PlainResponse) -> None:
        self._done = True  # answered (maybe before the request was whole): never read the rest
        transport = self._connection.transport
        if transport.is_closing():
            return
        body = (json.dumps(response.body) + "\n").encode("utf-8")
        headers = [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            ("Connection", "close"),
            *response.headers,
        ]
        try:
            data = self._h11.send(h11.Response(status_code=int(response.status), headers=headers))
            data += self._h11.send(h11.Data(data=body)) or b""
            data += self._h11.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:  # h11 could not frame an answer to this input: just close
            transport.close()
            return
        transport.write(data or b"")
        transport.close()


def _content_length(headers: Any) -> int | None:
    for name, value in headers:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class _ListenerConnection(DocumentedCloseConnection):
    """websockets' server connection, answering a plain ``POST`` itself (see the module docstring)."""

    answer: PlainAnswerer
    max_body: int

    def __init__(self, protocol: ServerProtocol, *args: Any, **kwargs: Any) -> None:
        super().__init__(protocol, *args, **kwargs)
        self._sniffed: bytes | None = b""
        self._exchange: _Exchange | None = None

    def data_received(self, data: bytes) -> None:
        if self._exchange is not None:
            self._exchange.receive(data)
            return
        if self._sniffed is not None:
            start = self._sniffed + data
            if len(start) < len(_PLAIN_METHOD) and _PLAIN_METHOD.startswith(start):
                self._sniffed = start  # too little to tell yet
                return
            self._sniffed = None
            if start.startswith(_PLAIN_METHOD):
                self._exchange = _Exchange(self, type(self).answer, type(self).max_body)
                self._exchange.receive(start)
                return
            data = start
        super().data_received(data)

    # asyncio lets a protocol return True to keep a half-closed transport open; websockets' own
    # connection never does and narrowed the return type to None.
    def eof_received(self) -> bool | None:  # type: ignore[override]
        if self._exchange is not None:
            return True  # a client that half-closes after its request still gets the answer
        return super().eof_received()


def listener_connection(answer: PlainAnswerer, max_body: int) -> type[ServerConnection]:
    """A connection class for ``websockets.asyncio.server.serve(create_connection=...)`` whose plain
    ``POST`` requests are answered by ``answer`` (bodies up to ``max_body`` bytes) and whose 1009 says
    ``message too big``."""

    class BrokerConnection(_ListenerConnection):
        pass

    BrokerConnection.answer = staticmethod(answer)
    BrokerConnection.max_body = max_body
    return BrokerConnection
