"""A real HTTP server on 127.0.0.1 for download tests: ``release_server``.

It serves release assets laid out as ``/<version>/<asset>`` and can misbehave on request: answer any
status, hold the response headers, trickle the body, stall or hang up mid-body, redirect. Handlers run in
threads of this process; every wait also watches for the client hanging up, so a cancelled download
frees its server thread (and socket) at once, which the file-descriptor test relies on.
"""

from __future__ import annotations

import http.server
import select
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest


@dataclass
class Route:
    """How the server answers one path.

    ``content_length``: ``"auto"`` sends the body length, an int sends that (a lie, if it differs), None
    sends no length (the body ends when the connection closes). ``hold_headers`` never sends the response
    headers. ``chunk_size``/``chunk_delay`` trickle the body. ``stall_after`` sends that many body bytes
    then goes silent; ``close_after`` sends that many then hangs up.
    """

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    content_length: int | str | None = "auto"
    hold_headers: bool = False
    chunk_size: int | None = None
    chunk_delay: float = 0.0
    stall_after: int | None = None
    close_after: int | None = None


@dataclass(frozen=True)
class SeenRequest:
    path: str
    headers: dict[str, str]


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet test output
        pass

    def do_GET(self) -> None:
        owner = self.server.owner
        with owner.lock:
            owner.requests.append(SeenRequest(self.path, {k.lower(): v for k, v in self.headers.items()}))
            route = owner.routes.get(self.path) or owner.routes.get(self.path.split("?", 1)[0])
        if route is None:
            route = Route(b"not found\n", status=404)
        self.close_connection = True
        if route.hold_headers:
            self._hold()
            return
        self.send_response(route.status)
        for name, value in route.headers.items():
            self.send_header(name, value)
        length = len(route.body) if route.content_length == "auto" else route.content_length
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.send_header("Connection", "close")
        self.end_headers()
        self._send_body(route)

    def _send_body(self, route: Route) -> None:
        body = route.body
        limit = len(body)
        if route.stall_after is not None:
            limit = min(limit, route.stall_after)
        if route.close_after is not None:
            limit = min(limit, route.close_after)
        step = route.chunk_size or max(limit, 1)
        sent = 0
        while sent < limit:
            piece = body[sent : min(sent + step, limit)]
            self.wfile.write(piece)
            self.wfile.flush()
            sent += len(piece)
            if route.chunk_delay and sent < limit and self._client_gone(route.chunk_delay):
                return
        if route.stall_after is not None:
            self._hold()

    def _hold(self) -> None:
        """Say nothing until the test ends or the client hangs up."""
        while not self.server.owner.stopping.is_set():
            if self._client_gone(0.02):
                return

    def _client_gone(self, wait: float) -> bool:
        """Waits up to ``wait`` seconds; True when the client closed its end meanwhile."""
        readable, _, _ = select.select([self.connection], [], [], wait)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every handler thread: nothing outlives a test
    block_on_close = True
    owner: ReleaseServer

    def handle_error(self, request: object, client_address: object) -> None:
        import sys

        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError | TimeoutError):
            return  # the client hung up or cancelled: expected in these tests
        with self.owner.lock:
            self.owner.errors.append(repr(error))


class ReleaseServer:
    """The running server; ``url`` is its base URL (``http://127.0.0.1:<port>``)."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[SeenRequest] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def route(self, path: str, body: bytes = b"", **fields: object) -> None:
        """Answer GET ``path`` as described by :class:`Route` ``fields``."""
        with self.lock:
            self.routes[path] = Route(body, **fields)  # type: ignore[arg-type]

    def publish(
        self, version: str, name: str, data: bytes, *, sha256_text: str | None = None, **kw: object
    ) -> str:
        """Serve ``data`` at ``/<version>/<name>`` (``kw`` are :class:`Route` fields) and, when
        ``sha256_text`` is given, that text at ``/<version>/<name>.sha256``. Returns the asset path."""
        path = f"/{version}/{name}"
        self.route(path, data, **kw)
        if sha256_text is not None:
            self.route(f"{path}.sha256", sha256_text.encode())
        return path

    def paths_requested(self) -> list[str]:
        with self.lock:
            return [request.path for request in self.requests]

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@pytest.fixture
def release_server() -> Iterator[ReleaseServer]:
    """A fresh server per test; fails the test if a handler crashed for a reason other than a hang-up."""
    server = ReleaseServer()
    try:
        yield server
    finally:
        server.stop()
    assert not server.errors, f"the test HTTP server failed: {server.errors}"
