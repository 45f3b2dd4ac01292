"""The broker's WebSocket route, ``GET /lsp/{sessionId}?language=L``, and ``GET /metrics``.

Before the upgrade (websockets' ``process_request``): the path (404), the ``Origin`` (403: a browser page
is accepted only from a listed origin, :mod:`kandev_lsp.stream.origins`), then the authorizer (401), then
the query (400), so a caller the authorizer refuses causes no lookup at all (K11.5). A repeated
``Authorization`` or ``Cookie`` header is refused (401) before the authorizer is asked, and the authorizer
is shown only the headers sent once (:mod:`kandev_lsp.stream.handshake`, the same rule as ``serve``).
After the upgrade: the execution directory (4002 / 4004), the capacity cap (4005), the upstream
connection to the execution's ``serve`` with its token (4002 when it fails), then the relay.

The route hands each accepted client to its mode through one small interface
(:class:`~kandev_lsp.broker.modes.BrokerMode`): with browser continuity **off** (K11.6, K18.2) the plain
authenticated proxy (:class:`~kandev_lsp.broker.proxy_mode.ProxyMode`), with it **on** the leases
(:class:`~kandev_lsp.broker.lease_mode.LeaseMode` over a :class:`~kandev_lsp.broker.leases.LeaseBook`).
The modes never import the route.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Final
from urllib.parse import parse_qs, urlsplit

from kandev_lsp.broker.auth import Authorizer, Caller, CallerRequest, refusal_before_credentials
from kandev_lsp.broker.closecodes import (
    CLOSE_REASONS,
    BrokerCloseCode,
    refusal_close,
)
from kandev_lsp.broker.config import DEFAULT_DETACH_TIMEOUT, DEFAULT_MAX_CONNECTIONS
from kandev_lsp.broker.contract import BadBrokerRequest, parse_broker_path, parse_broker_query
from kandev_lsp.broker.directory import DirectoryError, Execution, ExecutionDirectory, replaced_executions
from kandev_lsp.broker.lease_mode import LeaseMode, LeaseModeConfig, SuppressedProviders
from kandev_lsp.broker.leases import (
    ClaimPolicy,
    LeaseBook,
    LeaseConfig,
    ReclaimTicket,
    ReleaseReason,
)
from kandev_lsp.broker.listener import listener_connection
from kandev_lsp.broker.metrics import CONTENT_TYPE, BrokerMetrics
from kandev_lsp.broker.modes import BrokerMode
from kandev_lsp.broker.owner_settings import OwnerSettings
from kandev_lsp.broker.proxy_mode import ProxyConfig, ProxyMode
from kandev_lsp.broker.requests import DEFAULT_REQUEST_TIMEOUT
from kandev_lsp.broker.ticket_route import TicketRoute
from kandev_lsp.broker.tickets import (
    DEFAULT_TICKET_CAPACITY,
    DEFAULT_TICKET_TTL,
    MAX_MINT_BODY,
    SUBPROTOCOL,
    RedeemFailure,
    TicketBook,
    offered_subprotocols,
    presented_ticket,
    select_subprotocol,
)
from kandev_lsp.broker.upstream import UpstreamOptions
from kandev_lsp.session import log_event
from kandev_lsp.stream.handshake import Refusal, refuse, single_headers, unauthorized
from kandev_lsp.stream.origins import OriginPolicy
from kandev_lsp.stream.websocket import close_within
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

__all__ = ["METRICS_ROUTE", "BrokerConfig", "BrokerServer"]

log = logging.getLogger("kandev_lsp.broker")

METRICS_ROUTE = "/metrics"
#: How an operator allows a browser origin, named in a 403's message.
_ORIGIN_SETTING: Final = "kandev-lsp broker --allow-origin ORIGIN, or BrokerConfig.allowed_origins"
_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    host: str = "127.0.0.1"
    port: int = 0
    continuity: bool = False
    capacity: int = DEFAULT_MAX_CONNECTIONS
    max_message: int = 16 * _MIB
    #: Each write to a client or to the upstream; a peer that stops reading is cut off after it.
    write_timeout: float = 5.0
    #: Connecting to the execution's serve, the WebSocket handshake included.
    connect_timeout: float = 10.0
    ping_interval: float | None = 20.0
    close_timeout: float = 5.0
    #: Lease mode: how long a detached lease lives (K12.16), the stop sequence's bounds (K16.2).
    detach_timeout: float = DEFAULT_DETACH_TIMEOUT
    #: Lease mode: when a client without a usable hint claims another detached lease (K12.9, K12.15).
    claim_policy: ClaimPolicy = ClaimPolicy.UNHINTED
    shutdown_timeout: float = 5.0
    cleanup_timeout: float = 10.0
    #: Lease mode: a client request the server has not answered in this long is cancelled toward the
    #: server (``$/cancelRequest``) and answered -32803 "request timed out" (K15.5).
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    #: Lease mode with owner settings: how often they are checked for a save (0: only on
    #: ``BrokerServer.settings_changed``).
    settings_poll_interval: float = 0.25
    #: Lease mode: how often a directory that can list its executions is checked for replaced or
    #: removed ones, whose leases then end with ``runtime_stop`` (K12.6).
    directory_poll_interval: float = 1.5
    #: The browser origins whose pages may connect (``scheme://host[:port]``, or ``"*"`` for any). A
    #: request carrying an ``Origin`` not listed is refused with 403 before the authorizer runs; requests
    #: without one (editors, shims) are unaffected. Empty by default: no browser page is accepted until its
    #: origin is listed, which an authorizer reading cookies needs (cross-site WebSocket hijacking).
    allowed_origins: tuple[str, ...] = ()
    #: Page tickets (``POST /lsp/tickets``): seconds each stays valid, and how many may be outstanding.
    ticket_ttl: float = DEFAULT_TICKET_TTL
    ticket_capacity: int = DEFAULT_TICKET_CAPACITY


#: What a browser offering subprotocols but not :data:`SUBPROTOCOL` is told (close 4400).
_BAD_SUBPROTOCOL: Final = "bad_subprotocol"
_BAD_SUBPROTOCOL_MESSAGE: Final = (
    f"offer the subprotocol {SUBPROTOCOL} (next to kandev-lsp.ticket.<ticket>): a browser fails a handshake "
    "that selects none of the values it offered"
)
#: What a non-browser client presenting a bad ticket is told (a page gets close 4401 ``unauthorized``).
_TICKET_REFUSED: Final = (
    "the ticket is unknown, expired, already used, or minted for another session or language; "
    "mint a new one (POST /lsp/tickets) for each connection"
)


def _browser_upgrade(headers: Headers) -> bool:
    """A WebSocket upgrade sent by a browser: every browser sends one ``Origin``, editors send none (a
    request with two is no browser's, and websockets itself refuses to upgrade it)."""
    upgrade = ",".join(headers.get_all("Upgrade")).lower()
    return len(headers.get_all("Origin")) == 1 and "websocket" in upgrade


def _refuse(connection: ServerConnection, refusal: Refusal, **fields: object) -> Response:
    log_event(log, "rejected", logging.WARNING, status=int(refusal.status), **fields)
    return refuse(connection, refusal)


class BrokerServer:
    """Serves ``/lsp/{sessionId}`` and ``/metrics``. Use ``async with BrokerServer(...) as broker``.

    :param owner_settings: lease mode: each owner's latest persisted settings; a lease's server runs with
        the settings of the owner (:class:`Caller`) whose client created it, pushed to its serve at start
        and on every change (K14.8-K14.10). Without it serve uses the task host's settings file.
    :param suppressed_providers: lease mode: the ready frame's ``suppressedProviders`` from a server's
        capabilities (:func:`~kandev_lsp.broker.lease_mode.plugin_suppressed_providers` over the loaded
        plugins, as ``kandev-lsp broker`` does). Without it they are ``[]``.
    """

    def __init__(
        self,
        *,
        directory: ExecutionDirectory,
        authorizer: Authorizer,
        config: BrokerConfig | None = None,
        owner_settings: OwnerSettings | None = None,
        suppressed_providers: SuppressedProviders | None = None,
    ) -> None:
        self.config = config or BrokerConfig()
        #: Raises ValueError for a configured value that is not an origin: a typo must not listen.
        self._origins = OriginPolicy.from_values(self.config.allowed_origins, setting=_ORIGIN_SETTING)
        self._directory = directory
        self._authorizer = authorizer
        #: The authorized caller of each upgraded connection, from the authorizer's answer (weak: a
        #: handshake that fails after the check leaves nothing behind).
        self._callers: weakref.WeakKeyDictionary[ServerConnection, Caller] = weakref.WeakKeyDictionary()
        #: Browser upgrades refused before the upgrade: the close each gets right after it.
        self._refusals: weakref.WeakKeyDictionary[ServerConnection, tuple[int, str]] = (
            weakref.WeakKeyDictionary()
        )
        #: Page tickets (issue 18 item 1): minted by POST /lsp/tickets, spent by one upgrade each.
        self.tickets = TicketBook(self.config.ticket_ttl, self.config.ticket_capacity, clock=time.monotonic)
        self._ticket_route = TicketRoute(self.tickets, authorizer, self._origins)
        self._server: Server | None = None
        self._watcher: asyncio.Task[None] | None = None
        #: Lease mode, when the switch is on (the lease manager exists only then, K18.2).
        self.leases: LeaseMode | None = None
        self.mode: BrokerMode
        if self.config.continuity:
            book = LeaseBook(
                LeaseConfig(self.config.capacity, self.config.detach_timeout, self.config.claim_policy),
                clock=time.monotonic,
            )
            self.mode = self.leases = LeaseMode(
                book,
                LeaseModeConfig(
                    write_timeout=self.config.write_timeout,
                    connect_timeout=self.config.connect_timeout,
                    shutdown_timeout=self.config.shutdown_timeout,
                    cleanup_timeout=self.config.cleanup_timeout,
                    max_message=self.config.max_message,
                    ping_interval=self.config.ping_interval,
                    close_timeout=self.config.close_timeout,
                    request_timeout=self.config.request_timeout,
                    settings_poll_interval=self.config.settings_poll_interval,
                ),
                owner_settings=owner_settings,
                suppressed_providers=suppressed_providers,
            )
        else:
            self.mode = ProxyMode(
                ProxyConfig(
                    self.config.capacity,
                    self.config.write_timeout,
                    self.config.close_timeout,
                    UpstreamOptions(
                        self.config.connect_timeout,
                        self.config.max_message,
                        self.config.ping_interval,
                        self.config.close_timeout,
                        max_queue=2,
                    ),
                )
            )
        self.metrics = BrokerMetrics(self.mode.counts)

    # Reclaim integration (K13) -------------------------------------------------------------------------
    # For an orchestrator that reclaims idle task hosts. Both modes: with continuity on a lease (attached,
    # detached, waiting or closing) pins its execution; with it off an open proxied connection does.

    def is_pinned(self, execution: str) -> bool:
        """Whether ``execution`` must be treated as live work: a reclaim would cut a client off (K13.1)."""
        return self.mode.is_pinned(execution)

    def begin_reclaim(self, execution: str) -> ReclaimTicket | None:
        """Fence ``execution`` for a reclaim: ``None`` (refused) while it is pinned. While the fence is
        held, every client of the execution is refused with 4002 before anything starts. Recheck with
        :meth:`confirm_reclaim` just before cleanup; always finish with :meth:`end_reclaim` (K13.3)."""
        return self.mode.begin_reclaim(execution)

    def confirm_reclaim(self, ticket: ReclaimTicket) -> bool:
        """True only while ``ticket``'s fence is the current one and nothing pins its execution."""
        return self.mode.confirm_reclaim(ticket)

    def end_reclaim(self, ticket: ReclaimTicket) -> None:
        """Drop the fence (reclaim done or given up); a stale ticket does nothing."""
        self.mode.end_reclaim(ticket)

    async def close_execution(
        self, execution: str, reason: ReleaseReason = ReleaseReason.RUNTIME_STOP
    ) -> int:
        """An explicit task stop wins (K13.4, K12.20): close every lease (or proxied connection) of
        ``execution``, attached clients with 4002, and return once their upstreams are closed (each
        serve then stops its server), bounded by the stop deadlines. Returns how many were closed."""
        return await self.mode.close_execution(execution, reason)

    def settings_changed(self, owner: str | None = None) -> int:
        """An embedder saved ``owner``'s settings (every owner's: ``None``): push them to the affected
        leases now, attached or detached (K14.10), instead of at the next poll. How many were pushed."""
        return self.leases.settings_changed(owner) if self.leases is not None else 0

    # Lifetime -----------------------------------------------------------------------------------------
    async def start(self) -> None:
        self._server = await serve(
            self._handle,
            self.config.host,
            self.config.port,
            process_request=self._process_request,
            select_subprotocol=self._select_subprotocol,
            create_connection=listener_connection(self._ticket_route.answer, MAX_MINT_BODY),
            max_size=self.config.max_message,
            max_queue=2,
            compression=None,
            ping_interval=self.config.ping_interval,
            close_timeout=self.config.close_timeout,
            server_header=None,
        )
        listing = getattr(self._directory, "executions", None)
        if self.mode.follows_directory and callable(listing):
            self._watcher = asyncio.create_task(self._watch_directory(listing))
        # No URL (the log rules): the port says where, the listening line on stdout says the rest.
        log_event(log, "broker_listening", port=self.port, continuity=int(self.config.continuity))

    async def _watch_directory(self, listing: Callable[[], Mapping[str, Execution]]) -> None:
        """Tell the mode about executions replaced in or removed from the directory (K12.6)."""
        known = dict(listing())
        while True:
            await asyncio.sleep(self.config.directory_poll_interval)
            current = dict(listing())
            gone = sorted(replaced_executions(known, current))
            for execution in gone:
                log_event(log, "execution_gone", executor=known[execution].executor)
            self.mode.executions_gone(gone)
            known = current

    async def __aenter__(self) -> BrokerServer:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every lease (``backend_stop``) and every client with 1001; each proxied upstream is then
        closed, which stops its server."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        await self.mode.aclose()
        if self._server is not None:
            self._server.close(reason=CLOSE_REASONS[BrokerCloseCode.GOING_AWAY])
            await self._server.wait_closed()
        log_event(log, "broker_stopped")

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the broker is not started")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        host = self.config.host
        return f"ws://{f'[{host}]' if ':' in host else host}:{self.port}"

    # Before the upgrade -------------------------------------------------------------------------------
    async def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        if urlsplit(request.path).path == METRICS_ROUTE:
            return await self._metrics(connection, request)
        checked = await self._check(request)
        if isinstance(checked, Caller):
            self._callers[connection] = checked
            return None
        refusal, fields = checked
        if fields is not None:
            log_event(log, "rejected", logging.WARNING, status=int(refusal.status), **fields)
        if _browser_upgrade(request.headers):
            # A page sees an HTTP refusal as close 1006, like a network failure, and would retry it
            # (K18): it gets the upgrade instead, closed at once with 44xx (issue 18 item 2). Nothing is
            # looked up or started for it (_handle closes it first).
            self._refusals[connection] = refusal_close(int(refusal.status), refusal.error)
            return None
        return refuse(connection, refusal)

    async def _check(self, request: Request) -> Caller | tuple[Refusal, dict[str, object] | None]:
        """The caller of an upgrade request, or its refusal with the log fields (``None``: not logged).

        Path, origin, repeated credential headers, the credential (a page ticket when one is presented,
        else the authorizer), then the query: nothing about sessions is looked at for a refused caller."""
        try:
            session = parse_broker_path(request.path)
        except BadBrokerRequest as exc:
            return Refusal(HTTPStatus(exc.status), exc.error, str(exc)), None
        refused = refusal_before_credentials(request.headers, self._origins)
        if refused is not None:
            return refused
        query = parse_qs(urlsplit(request.path).query, keep_blank_values=True)
        protocols = request.headers.get_all("Sec-WebSocket-Protocol")
        presented = presented_ticket(protocols, query.get("ticket", []))
        offered = offered_subprotocols(protocols)
        if offered and SUBPROTOCOL not in offered and _browser_upgrade(request.headers):
            # A browser fails a handshake that selects none of the values it offered (close 1006, which
            # a page retries): refused, and _select_subprotocol echoes its own value back so it reads the
            # close. Its ticket is spent first: the echoed value is then good for nothing.
            if presented.value is not None:
                self.tickets.discard(presented.value)
            return Refusal(HTTPStatus.BAD_REQUEST, _BAD_SUBPROTOCOL, _BAD_SUBPROTOCOL_MESSAGE), {
                "error": _BAD_SUBPROTOCOL
            }
        if presented.problem is not None:
            return unauthorized(presented.problem), {"credential": "ticket", "why": "several"}
        caller: Caller | None
        if presented.value is not None:
            languages = query.get("language", [])
            origins = request.headers.get_all("Origin")  # one at most: more were refused above
            redeemed = self.tickets.redeem(
                presented.value,
                session,
                languages[0] if len(languages) == 1 else None,
                origins[0] if origins else None,
            )
            if isinstance(redeemed, RedeemFailure):
                return unauthorized(_TICKET_REFUSED), {"credential": "ticket", "why": redeemed.value}
            caller = Caller(redeemed.owner)
        else:
            caller = await self._authorizer.authorize(CallerRequest(session, single_headers(request.headers)))
            if caller is None:
                return unauthorized(), {}
        try:
            parse_broker_query(request.path)
        except BadBrokerRequest as exc:
            return Refusal(HTTPStatus(exc.status), exc.error, str(exc)), {"error": exc.error}
        return caller

    async def _metrics(self, connection: ServerConnection, request: Request) -> Response:
        refused = refusal_before_credentials(request.headers, self._origins)
        if refused is not None:
            refusal, fields = refused
            return _refuse(connection, refusal, **fields)
        caller = await self._authorizer.authorize(CallerRequest("", single_headers(request.headers)))
        if caller is None:
            return _refuse(connection, unauthorized())
        response = connection.respond(HTTPStatus.OK, self.metrics.exposition().decode("utf-8"))
        del response.headers["Content-Type"]
        response.headers["Content-Type"] = CONTENT_TYPE
        return response

    def _select_subprotocol(
        self, connection: ServerConnection, offered: Sequence[Subprotocol]
    ) -> Subprotocol | None:
        """``kandev-lsp.v1`` when offered; for a browser refused for offering something else, the first
        value it offered (its spent ticket, if that is all it offered), so its handshake succeeds and the
        4400 reaches it; else none."""
        chosen = select_subprotocol(offered)
        if chosen is not None:
            return Subprotocol(chosen)
        refused = self._refusals.get(connection)
        if refused is not None and refused[1] == _BAD_SUBPROTOCOL and offered:
            return offered[0]
        return None

    # After the upgrade --------------------------------------------------------------------------------
    async def _handle(self, client: ServerConnection) -> None:
        refused = self._refusals.pop(client, None)
        if refused is not None:  # a browser request refused before the upgrade (issue 18 item 2)
            await self._close(client, *refused)
            return
        path = client.request.path if client.request else ""
        query = parse_broker_query(path)
        try:
            execution = self._directory.resolve(parse_broker_path(path))
        except DirectoryError as exc:
            log_event(log, "connection_refused", logging.WARNING, code=exc.code, detail=str(exc))
            await self._close(client, exc.code)
            return
        caller = self._callers.pop(client, None)
        await self.mode.serve_client(client, execution, query, caller.owner if caller is not None else "")

    async def _close(self, client: ServerConnection, code: int, reason: str | None = None) -> None:
        text = CLOSE_REASONS.get(code, "") if reason is None else reason
        await close_within(client, code, text, self.config.write_timeout)
