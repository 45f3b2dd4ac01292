"""The task-host stream server: ``GET /api/v1/lsp/stream?language=L&autoInstall=1`` over WebSocket.

Before the upgrade (in websockets' ``process_request`` hook) a request is checked in this order, so an
unauthenticated client learns nothing and starts nothing:

1. the path is the stream route, else HTTP 404;
2. a browser's ``Origin`` is one of ``StreamConfig.allowed_origins`` (any by default), else HTTP 403
   (:mod:`kandev_lsp.stream.origins`);
3. exactly one ``Authorization: Bearer <token>`` header, matching (constant-time), else HTTP 401 (a
   repeated header is refused with its own reason: :mod:`kandev_lsp.stream.handshake`);
4. the query names exactly one known language and a valid ``autoInstall``, else HTTP 400 with a JSON body.

After the upgrade, a connection beyond ``StreamConfig.max_sessions`` is closed with 4005 before anything
is resolved or started; each other connection runs :class:`~kandev_lsp.stream.connection.StreamConnection`
and holds its slot until its server is stopped and reaped.
:meth:`StreamServer.aclose` closes every connection with 1001 and stops every server and install.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING

from kandev_lsp.errors import UnknownLanguageError
from kandev_lsp.session import DEFAULT_BRIDGE_LIMITS, BridgeLimits, log_event
from kandev_lsp.settings import SettingsFile
from kandev_lsp.stream.auth import StreamToken
from kandev_lsp.stream.connection import StreamConnection, StreamContext
from kandev_lsp.stream.contract import (
    CLOSE_REASONS,
    ROUTE,
    BadStreamRequest,
    CloseCode,
    parse_stream_query,
    route_of,
    unknown_language,
)
from kandev_lsp.stream.handshake import (
    Refusal,
    RepeatedHeader,
    json_response,
    refuse,
    single_value,
    unauthorized,
)
from kandev_lsp.stream.origins import ANY_ORIGIN, OriginPolicy
from kandev_lsp.stream.uri import workspace_uri
from kandev_lsp.stream.websocket import DocumentedCloseConnection, close_within, is_open
from kandev_lsp.taskenv import Task
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

if TYPE_CHECKING:
    from kandev_lsp.host import PluginHost
    from kandev_lsp.process import ProcessSupervisor

log = logging.getLogger("kandev_lsp.stream")

#: Concurrent sessions (each a language server process tree) one ``serve`` runs by default: a task's
#: clients need one per language each; the broker in front caps its leases at 8 by default.
DEFAULT_MAX_SESSIONS = 16


@dataclass(frozen=True, slots=True)
class StreamConfig:
    """How a stream server listens and limits its connections."""

    host: str = "127.0.0.1"
    port: int = 0
    limits: BridgeLimits = field(default=DEFAULT_BRIDGE_LIMITS)
    #: websockets' keepalive: a client that answers no ping within this is dropped.
    ping_interval: float | None = 20.0
    #: How long a closing handshake may take before the TCP connection is dropped.
    close_timeout: float = 5.0
    #: The browser origins whose pages may connect (``scheme://host[:port]``, or ``"*"``); a request
    #: carrying another ``Origin`` gets 403 before its token is looked at. Any by default: the only
    #: credential is a bearer header, which a browser page cannot attach to a WebSocket, so a cross-site
    #: page cannot get past the 401 anyway; listing origins is defence in depth behind a browser proxy.
    allowed_origins: tuple[str, ...] = (ANY_ORIGIN,)
    #: Concurrent sessions; one more is closed with 4005 ``too many language servers``, nothing started.
    max_sessions: int = DEFAULT_MAX_SESSIONS


class StreamServer:
    """Serves the stream route for one task (its workspace and environment).

    Use ``async with StreamServer(...) as server`` or :meth:`start` / :meth:`aclose`.
    """

    def __init__(
        self,
        *,
        plugins: PluginHost,
        task: Task,
        token: StreamToken,
        config: StreamConfig | None = None,
        settings: SettingsFile | None = None,
        supervisor: ProcessSupervisor | None = None,
    ) -> None:
        self.config = config or StreamConfig()
        if self.config.max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {self.config.max_sessions}")
        #: Raises ValueError for a configured value that is not an origin: a typo must not listen.
        self._origins = OriginPolicy.from_values(
            self.config.allowed_origins,
            setting="kandev-lsp serve --allow-origin ORIGIN, or StreamConfig.allowed_origins",
        )
        self._token = token
        self._owns_supervisor = supervisor is None
        self._supervisor = supervisor
        self._ctx = StreamContext(
            plugins=plugins,
            task=task,
            workspace_uri=workspace_uri(task.workspace, task.host),
            limits=self.config.limits,
            settings=settings,
            supervisor=supervisor,
        )
        self._numbers = itertools.count(1)
        self._sessions = 0
        self._server: Server | None = None

    # Lifetime -----------------------------------------------------------------------------------------
    async def start(self) -> None:
        if self._supervisor is None:
            from kandev_lsp.process import ProcessSupervisor

            self._supervisor = ProcessSupervisor()
            self._ctx.supervisor = self._supervisor
        self._server = await serve(
            self._handle,
            self.config.host,
            self.config.port,
            process_request=self._process_request,
            create_connection=DocumentedCloseConnection,  # 1009 says "message too big"
            max_size=self.config.limits.max_message,
            # Client messages wait here until the server's stdin takes them. websockets' default (16)
            # would let one client park 16 x 16 MiB; two keep the pipe busy and bound memory at 32 MiB.
            max_queue=2,
            compression=None,  # LSP messages on a task host: latency matters more than bytes
            ping_interval=self.config.ping_interval,
            close_timeout=self.config.close_timeout,
            server_header=None,
        )
        log_event(log, "listening", url=self.url, workspace=self._ctx.task.workspace)

    async def __aenter__(self) -> StreamServer:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop installs, then close every connection with 1001 ``going away`` (each close bounded by the
        write deadline), wait for their servers to stop, stop leftovers.

        Installs go first: the lifecycle's close cancels them and returns once their process trees are
        reaped and their staging folders removed, and a connection waiting for one closes itself with 1001
        only then, so that close proves the cleanup as the stop frame's does (issue 17 item 4)."""
        self._ctx.stopping = True
        await self._ctx.aclose()
        if self._server is not None:
            open_connections = [ws for ws in self._server.connections if is_open(ws)]
            if open_connections:
                deadline = self.config.limits.client_write_timeout
                reason = CLOSE_REASONS[CloseCode.GOING_AWAY]
                await asyncio.gather(
                    *(close_within(ws, CloseCode.GOING_AWAY, reason, deadline) for ws in open_connections)
                )
            self._server.close(reason=CLOSE_REASONS[CloseCode.GOING_AWAY])
            await self._server.wait_closed()
        await self._ctx.aclose()
        if self._owns_supervisor and self._supervisor is not None:
            await self._supervisor.aclose()
        log_event(log, "stopped")

    # Addresses ----------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the stream server is not started")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        host = self.config.host
        shown = f"[{host}]" if ":" in host else host
        return f"ws://{shown}:{self.port}{ROUTE}"

    @property
    def context(self) -> StreamContext:
        return self._ctx

    # Before the upgrade -------------------------------------------------------------------------------
    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        if route_of(request.path) != ROUTE:
            return json_response(
                connection, HTTPStatus.NOT_FOUND, {"error": "not_found", "message": f"the route is {ROUTE}"}
            )
        origins = request.headers.get_all("Origin")
        refusal = self._origins.refusal(origins)
        if refusal is not None:
            return self._refuse(connection, refusal, error=refusal.error, origin=origins[0][:128])
        try:
            authorization = single_value(request.headers, "Authorization")
        except RepeatedHeader as exc:
            return self._refuse(connection, unauthorized(str(exc)), header=exc.name.lower())
        if not self._token.accepts(authorization):
            return self._refuse(connection, unauthorized())
        try:
            wanted = parse_stream_query(request.path)
            self._ctx.plugins.language(wanted.language)
        except BadStreamRequest as exc:
            return self._bad_request(connection, exc)
        except UnknownLanguageError as exc:
            return self._bad_request(connection, unknown_language(exc.language, exc.known))
        return None

    def _bad_request(self, connection: ServerConnection, exc: BadStreamRequest) -> Response:
        log_event(log, "rejected", logging.WARNING, status=400, error=exc.error)
        return json_response(connection, HTTPStatus.BAD_REQUEST, exc.to_json())

    def _refuse(self, connection: ServerConnection, refusal: Refusal, **fields: object) -> Response:
        log_event(
            log, "rejected", logging.WARNING, status=int(refusal.status), peer=_peer(connection), **fields
        )
        return refuse(connection, refusal)

    # After the upgrade --------------------------------------------------------------------------------
    @property
    def sessions(self) -> int:
        """Connections holding a session slot now (from the upgrade until their server is reaped)."""
        return self._sessions

    async def _handle(self, websocket: ServerConnection) -> None:
        if self._sessions >= self.config.max_sessions:  # checked and taken with no await in between
            log_event(
                log,
                "connection_refused",
                logging.WARNING,
                code=int(CloseCode.CAPACITY),
                sessions=self._sessions,
                max_sessions=self.config.max_sessions,
            )
            reason = CLOSE_REASONS[CloseCode.CAPACITY]
            await close_within(websocket, CloseCode.CAPACITY, reason, self.config.limits.client_write_timeout)
            return
        self._sessions += 1
        try:
            request = parse_stream_query(websocket.request.path if websocket.request else "")
            connection = StreamConnection(self._ctx, websocket, request, next(self._numbers))
            await connection.run()
        finally:
            self._sessions -= 1


def _peer(connection: ServerConnection) -> str:
    try:
        address = connection.remote_address
    except Exception:  # the transport may already be gone
        return "-"
    return str(address[0]) if isinstance(address, tuple) and address else "-"
