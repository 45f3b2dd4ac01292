"""Lease mode (browser continuity on): the asyncio layer around :class:`LeaseBook` and :class:`LeasePeer`.

Everything that decides lives in the sans-io core; this module only moves messages and performs the
book's actions:

* each lease has one upstream (a WebSocket to the execution's ``serve``) read by one task for the
  lease's whole life, attached or not (K12.4, K15.11). Its messages go through the lease's
  :class:`LeasePeer`; what the peer sends to a client is queued for that client's writer task, so a
  slow client never slows the reader: a full queue or a write past 5 s detaches the client with 4009,
  never the server (K15.10);
* before serve's ``ready``, its install frames are relayed to the attached client, and the client's
  frames are read as they come: ``stop`` and ``release`` are acted on at once (they cancel the install,
  K8.14), every other frame is held by the broker, in order, until ``ready`` (at most 256), so no client
  frame reaches serve during its install, which would cancel it; a client that leaves during an install
  leaves it running (K14 install phase);
* the ready frame carries the lease id, whether it resumed, and the peer's retained state (K17.3); its
  ``suppressedProviders`` are computed here, from the retained capabilities with the plugins' hook
  (``suppressed_providers``), because serve's own ready frame comes before ``initialize`` and a frame
  of serve's after JSON-RPC traffic started would break generic stream clients (K2.3);
* stop and release: the peer's ``shutdown`` (bounded) and ``exit``, then serve's ``{"control":"stop"}``
  frame: serve stops the server (a hung one too), reaps its whole tree and only then closes with 1000
  ``stopped``, so that close confirms the cleanup (K16.2, K12.14). If it does not come within the
  cleanup bound the broker closes the upstream (serve then stops the tree) and acknowledges with
  ``confirmed: false``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kandev_lsp.broker.closecodes import (
    ACK_CLOSE_REASONS,
    CLOSE_REASONS,
    BrokerCloseCode,
    client_close_for_lease_end,
    client_close_for_upstream,
)
from kandev_lsp.broker.contract import (
    BrokerQuery,
    Control,
    ControlError,
    ControlName,
    ReadyInfo,
    ack_frame,
    initialized_frame,
    parse_control,
    ready_frame,
)
from kandev_lsp.broker.directory import Execution
from kandev_lsp.broker.leases import (
    Acknowledge,
    Action,
    ArmDeadline,
    CancelDeadline,
    CloseUpstream,
    ControlKind,
    EndAttachment,
    LeaseBook,
    LeaseCounts,
    Outcome,
    ReclaimTicket,
    RejectWaiting,
    ReleaseReason,
    StartUpstream,
)
from kandev_lsp.broker.logs import log_transitions
from kandev_lsp.broker.owner_settings import OwnerSettings
from kandev_lsp.broker.peer import LeasePeer, PeerOutput
from kandev_lsp.broker.requests import DEFAULT_REQUEST_TIMEOUT, RequestBounds
from kandev_lsp.broker.upstream import UpstreamOptions, connect_upstream
from kandev_lsp.protocol.errors import MalformedMessage
from kandev_lsp.protocol.jsonrpc import notification, parse_message
from kandev_lsp.session import log_event
from kandev_lsp.stream.contract import frame_text, settings_frame, stop_frame
from kandev_lsp.stream.websocket import close_within, closed_by
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed, ConnectionClosedError

__all__ = ["LeaseMode", "LeaseModeConfig"]

if TYPE_CHECKING:
    from kandev_lsp.host import PluginHost

#: The editor built-ins a server makes redundant, from its language id and advertised capabilities.
SuppressedProviders = Callable[[str, Mapping[str, Any]], Iterable[str]]


def plugin_suppressed_providers(plugins: PluginHost) -> SuppressedProviders:
    """The plugins' ``kandev_lsp_suppressed_providers`` hook as a :data:`SuppressedProviders` (the same
    hook serve's session uses; a language no loaded plugin declares suppresses nothing)."""
    from kandev_lsp.errors import UnknownLanguageError

    def suppressed(language: str, capabilities: Mapping[str, Any]) -> Iterable[str]:
        try:
            spec = plugins.language(language)
        except UnknownLanguageError:
            return ()
        return plugins.suppressed_providers(spec, capabilities)

    return suppressed


log = logging.getLogger("kandev_lsp.broker")

#: What may wait for one client's writer, in characters (plus :data:`_ENTRY_COST` per message): two
#: messages of the largest size. More means the client is not reading; so does a write that waits past
#: the write deadline. Not a count of messages: a server publishes thousands of small ones at once (a
#: workspace's diagnostics, its log), which a client that reads fine takes in well under the deadline.
_CLIENT_QUEUE_MESSAGES = 2
_ENTRY_COST = 64
#: Client frames held during an install, until serve's ready; the contract's clients send none. In
#: bytes they are bounded too, by one message's size (``max_message``): 256 frames of 16 MiB would be
#: 4 GiB held for one connection.
_HELD_FRAMES = 256


class LeaseModeConfig:
    """Deadlines of lease mode (tests shorten them)."""

    def __init__(
        self,
        *,
        write_timeout: float = 5.0,
        connect_timeout: float = 10.0,
        shutdown_timeout: float = 5.0,
        cleanup_timeout: float = 10.0,
        max_message: int = 16 * 1024 * 1024,
        ping_interval: float | None = 20.0,
        close_timeout: float = 5.0,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        settings_poll_interval: float = 0.25,
        settings_timeout: float = 2.0,
    ) -> None:
        self.request_timeout = request_timeout
        #: How often the owners' settings are checked for a save (0: only ``settings_changed()``).
        self.settings_poll_interval = settings_poll_interval
        #: How long a resumed ``ready`` waits for serve to confirm the latest settings.
        self.settings_timeout = settings_timeout
        self.write_timeout = write_timeout
        self.connect_timeout = connect_timeout
        self.shutdown_timeout = shutdown_timeout
        self.cleanup_timeout = cleanup_timeout
        self.max_message = max_message
        self.ping_interval = ping_interval
        self.close_timeout = close_timeout


class _Attachment:
    """One client attached to a lease: its connection, generation and writer (a bounded queue)."""

    def __init__(
        self,
        websocket: ServerConnection,
        generation: int,
        write_timeout: float,
        on_stall: Callable[[_Attachment], None],
        budget: int,
    ) -> None:
        self.websocket = websocket
        self._on_stall = on_stall
        self.generation = generation
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._budget = budget
        self._queued = 0  # what the queue holds, counted as send() counts it
        self.stalled = False
        self.closing: tuple[int, str] | None = None
        self._write_timeout = write_timeout
        self.writer = asyncio.create_task(self._write())

    def send(self, text: str) -> bool:
        """Queue ``text``; False when what waits would pass the budget (the client stopped reading). One
        message alone always fits."""
        cost = len(text) + _ENTRY_COST
        if self._queued and self._queued + cost > self._budget:
            self.stalled = True
            return False
        self.queue.put_nowait(text)
        self._queued += cost
        return True

    def close(self, code: int, reason: str | None = None) -> None:
        """Close after what is queued (a ready frame, an ack) has been written."""
        if self.closing is None:
            self.closing = (code, CLOSE_REASONS.get(code, "") if reason is None else reason)
            self.queue.put_nowait(None)
            if self.stalled and asyncio.current_task() is not self.writer:
                self.writer.cancel()  # it waits on a write that will not finish; the close follows

    async def _write(self) -> None:
        try:
            while (text := await self.queue.get()) is not None:
                self._queued -= len(text) + _ENTRY_COST
                async with asyncio.timeout(self._write_timeout):
                    await self.websocket.send(text)
        except TimeoutError:
            self.stalled = True
            self._on_stall(self)
        except (ConnectionClosed, asyncio.CancelledError):
            pass
        finally:
            code, reason = self.closing or (BrokerCloseCode.CONNECTION_FAILED, "")
            if self.stalled:
                code, reason = (
                    BrokerCloseCode.CONNECTION_FAILED,
                    CLOSE_REASONS[BrokerCloseCode.CONNECTION_FAILED],
                )
            await close_within(self.websocket, code, reason, self._write_timeout)


class _Lease:
    """The I/O side of one lease: its upstream, its peer, its attached client."""

    def __init__(
        self, lease_id: str, execution: Execution, query: BrokerQuery, peer: LeasePeer, owner: str = ""
    ) -> None:
        self.lease_id = lease_id
        self.execution = execution
        self.query = query
        self.peer = peer
        self.owner = owner
        #: The control frames this lease's serve acts on (its ready frame's ``controls``).
        self.controls: frozenset[str] = frozenset()
        #: The owner's settings last sent to serve; the acks serve owes, oldest first.
        self.pushed: dict[str, Any] | None = None
        self.settings_acks: collections.deque[asyncio.Future[bool]] = collections.deque()
        self.upstream: ClientConnection | None = None
        #: Set once the upstream connection was made or given up (``upstream`` says which).
        self.connected = asyncio.Event()
        self.ready: dict[str, Any] | None = None  # serve's ready frame
        #: serve's latest install frame before ready (installing, installed), for a client attaching then.
        self.install_status: str | None = None
        self.ready_event = asyncio.Event()
        self.ended = asyncio.Event()
        self.end_code: int | None = None  # the client's close code when the upstream ended by itself
        self.attachment: _Attachment | None = None
        self.reader: asyncio.Task[None] | None = None
        self.stopper: asyncio.Task[None] | None = None
        self.shutdown_done = asyncio.Event()
        self.outbox: asyncio.Queue[str] = asyncio.Queue()
        self.writer: asyncio.Task[None] | None = None
        self.confirmed = False
        self.exit_sent = False
        self.closed_by_broker = False
        self.control_id: str | int | None = None
        #: Fires at the oldest pending client request's deadline (K15.5).
        self.expiry: asyncio.TimerHandle | None = None


class LeaseMode:
    """Every lease of one broker, with their upstreams and clients.

    :param owner_settings: each owner's latest persisted settings; the lease's serve gets its owner's in
        the settings frame, and every change of them (K14.8-K14.10). Without it serve uses the task
        host's settings file, which the broker asks it to re-read before a resumed ``ready`` (K14.11).
    """

    def __init__(
        self,
        book: LeaseBook,
        config: LeaseModeConfig | None = None,
        *,
        owner_settings: OwnerSettings | None = None,
        suppressed_providers: SuppressedProviders | None = None,
    ) -> None:
        self.book = book
        self.config = config or LeaseModeConfig()
        self._owner_settings = owner_settings
        self._settings_watch: asyncio.Task[None] | None = None
        self._suppressed_providers = suppressed_providers
        self._leases: dict[str, _Lease] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._waiting: dict[str, asyncio.Future[int | None]] = {}
        self._upstream_options = UpstreamOptions(
            self.config.connect_timeout,
            self.config.max_message,
            self.config.ping_interval,
            self.config.close_timeout,
        )

    # --- the route's interface (BrokerMode) ------------------------------------------------------

    #: An execution replaced in or removed from the directory ends its leases (K12.6).
    follows_directory = True

    def counts(self) -> LeaseCounts:
        return self.book.counts()

    def is_pinned(self, execution: str) -> bool:
        return self.book.is_pinned(execution)

    def begin_reclaim(self, execution: str) -> ReclaimTicket | None:
        return self.book.begin_reclaim(execution)

    def confirm_reclaim(self, ticket: ReclaimTicket) -> bool:
        return self.book.confirm_reclaim(ticket)

    def end_reclaim(self, ticket: ReclaimTicket) -> None:
        self.book.end_reclaim(ticket)

    def executions_gone(self, executions: Iterable[str]) -> None:
        for execution in executions:
            self.perform(self.book.close_execution(execution))

    # --- a client --------------------------------------------------------------------------------

    async def serve_client(
        self, websocket: ServerConnection, execution: Execution, query: BrokerQuery, owner: str = ""
    ) -> None:
        """Admit ``websocket`` to a lease and carry it until it leaves or the lease ends."""
        admission = self.book.admit(
            execution.id, query.language, query.lease_hint, executor=execution.executor, owner=owner
        )
        if admission.outcome in (Outcome.CREATED, Outcome.QUEUED):
            assert admission.lease_id is not None
            bounds = RequestBounds(timeout=self.config.request_timeout)
            peer = LeasePeer(clock=time.monotonic, bounds=bounds)
            self._leases[admission.lease_id] = _Lease(admission.lease_id, execution, query, peer, owner)
            self._watch_settings()
        if admission.outcome is Outcome.QUEUED:
            assert admission.lease_id is not None
            self._waiting[admission.lease_id] = asyncio.get_running_loop().create_future()
        self.perform(admission.actions)
        if admission.close_code is not None or admission.lease_id is None:
            await _close(
                websocket, admission.close_code or BrokerCloseCode.CAPACITY, self.config.write_timeout
            )
            return
        lease_id, generation = admission.lease_id, admission.generation
        if admission.outcome is Outcome.QUEUED:
            waiting = self._waiting[lease_id]
            try:
                code = await self._until_closed(websocket, waiting)
            finally:
                self._waiting.pop(lease_id, None)
            if not waiting.done():  # the client left first: its place in the queue is given up
                how, left_with = _departure(websocket, None)
                self.perform(self.book.detach(lease_id, generation, how=how, code=left_with))
                self._leases.pop(lease_id, None)
            if code is not None or lease_id not in self._leases:
                await _close(
                    websocket, code or BrokerCloseCode.SESSION_UNAVAILABLE, self.config.write_timeout
                )
                return
        lease = self._leases[lease_id]
        attachment = _Attachment(
            websocket,
            generation,
            self.config.write_timeout,
            lambda stalled: self._stalled(lease, stalled),
            budget=_CLIENT_QUEUE_MESSAGES * self.config.max_message,
        )
        lease.attachment = attachment
        try:
            await self._carry(lease, attachment)
        finally:
            if lease.attachment is attachment:
                lease.attachment = None
                if lease.ready is not None:
                    self._to_server(lease, lease.peer.detach())
                how, code = _departure(websocket, attachment.closing)
                self.perform(self.book.detach(lease_id, generation, how=how, code=code))
                attachment.close(BrokerCloseCode.NORMAL)
            await attachment.writer

    async def _until_closed(
        self, websocket: ServerConnection, waiting: asyncio.Future[int | None]
    ) -> int | None:
        """Wait for ``waiting`` (a queued admission), or for the client to leave first (then 1000)."""
        gone: asyncio.Future[Any] = asyncio.ensure_future(websocket.wait_closed())
        pending: list[asyncio.Future[Any]] = [waiting, gone]
        try:
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        return waiting.result() if waiting.done() else BrokerCloseCode.NORMAL

    async def _carry(self, lease: _Lease, attachment: _Attachment) -> None:
        held = await self._until_ready(lease, attachment)
        if held is None:
            return  # the client left during the install, or the lease ended (its close is on its way)
        if lease.peer.initialize_params is not None:  # it resumes a running server
            await self._reconcile_settings(lease)
            if lease.ended.is_set() or attachment.closing is not None:
                return
        lease.peer.attach(attachment.generation)
        # "Resumed" tells a client not to initialize again: true only once the server was asked to
        # initialize, not merely because the lease existed (a lease claimed during its install was not).
        resumed = lease.peer.resumed
        attachment.send(ready_frame(self._ready_info(lease, resumed)))
        log_event(log, "lease_ready", language=lease.query.language[:32], resumed=int(resumed))
        for raw in held:
            if not self._from_client(lease, attachment, raw):
                return
        # A client that vanishes (no close frame: a closed laptop, a killed tab) ends this loop with
        # ConnectionClosedError: that is a detach like any other, logged as one lease_detached line
        # (how=lost code=1006), not a library traceback.
        with contextlib.suppress(ConnectionClosedError):
            async for raw in attachment.websocket:
                if not self._from_client(lease, attachment, raw):
                    break

    async def _until_ready(self, lease: _Lease, attachment: _Attachment) -> list[str | bytes] | None:
        """Until serve's ``ready`` (during an install): the client's frames are read as they come, a
        ``stop`` or ``release`` is acted on at once (it cancels the install, K8.14), and every other frame
        is held, in order, for after ``ready`` (a client frame must not reach serve during its install,
        which would cancel it). ``None`` when the client left or the lease ended first (a client that
        leaves during an install leaves it running)."""
        if not lease.ready_event.is_set() and lease.install_status is not None:
            # A client attaching during the install (a reload) learns where it is, as its first did.
            attachment.send(lease.install_status)
        held: list[str | bytes] = []
        held_bytes = 0
        ready = asyncio.ensure_future(lease.ready_event.wait())
        ended = asyncio.ensure_future(lease.ended.wait())
        try:
            while not lease.ready_event.is_set():
                receive = asyncio.ensure_future(attachment.websocket.recv())
                try:
                    await asyncio.wait({ready, ended, receive}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if not receive.done():  # cancelling recv() loses no message (websockets)
                        receive.cancel()
                        with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                            await receive
                if receive.done() and not receive.cancelled():
                    if receive.exception() is not None:
                        return None  # the client left
                    raw = receive.result()
                    stop = _stop_control(raw)
                    if stop is not None:
                        self._control(lease, attachment, stop)
                    elif len(held) < _HELD_FRAMES and held_bytes + len(raw) <= self.config.max_message:
                        held.append(raw)
                        held_bytes += len(raw)
                    else:  # a client that floods before ready is not a client the contract describes
                        attachment.close(BrokerCloseCode.POLICY_VIOLATION)
                        return None
                if lease.ended.is_set() or attachment.closing is not None:
                    return None
        finally:
            ready.cancel()
            ended.cancel()
        return None if lease.ended.is_set() or attachment.closing is not None else held

    def _from_client(self, lease: _Lease, attachment: _Attachment, raw: str | bytes) -> bool:
        """One client frame after ``ready``; False when the client is done (closed or closing)."""
        if attachment.closing is not None or lease.attachment is not attachment:
            return False
        message = _parsed(raw)
        if message is None:
            attachment.close(BrokerCloseCode.POLICY_VIOLATION)
            return False
        control = parse_control(message)
        if control is not None:
            self._control(lease, attachment, control)
            return True
        out = lease.peer.from_client(message)
        self._deliver(lease, out)
        self._arm_expiry(lease)
        if out.client_exit:
            attachment.close(BrokerCloseCode.NORMAL)
            return False
        return True

    def _control(self, lease: _Lease, attachment: _Attachment, control: Control | ControlError) -> None:
        if isinstance(control, ControlError):
            attachment.send(control.ack())
            return
        if control.name is ControlName.ATTACHMENT_READY:
            lease.peer.attachment_ready()
            attachment.send(ack_frame(control.name.value, control.id))
            return
        kind = ControlKind.STOP if control.name is ControlName.STOP else ControlKind.RELEASE
        lease.control_id = control.id
        self.perform(self.book.request_stop(lease.lease_id, attachment.generation, kind))

    def _suppressed(self, lease: _Lease) -> list[str]:
        capabilities = lease.peer.capabilities
        if capabilities is None or self._suppressed_providers is None:
            return []
        return sorted(set(self._suppressed_providers(lease.query.language, capabilities)))

    def _ready_info(self, lease: _Lease, resumed: bool) -> ReadyInfo:
        ready = lease.ready or {}
        peer = lease.peer
        sent_at = peer.initialize_sent_at
        capabilities = peer.capabilities
        suppressed = self._suppressed(lease)
        return ReadyInfo(
            language=lease.query.language,
            workspace_path=str(ready.get("workspacePath", lease.execution.workspace)),
            workspace_uri=str(ready.get("workspaceUri", "")),
            lease_id=lease.lease_id,
            resumed=resumed,
            server_generation=peer.server_generation,
            capabilities=capabilities,
            server_info=peer.server_info,
            position_encoding=peer.position_encoding,
            registrations=[registration.to_json() for registration in peer.effective_registrations()],
            progress=peer.progress_for_client(),
            initialize_sent_at_ms=None
            if sent_at is None
            else int((time.time() - (time.monotonic() - sent_at)) * 1000),
            initialized=peer.handshake_complete,
            initialize_error=peer.initialize_error,
            suppressed_providers=suppressed,
        )

    # --- performing the book's actions -----------------------------------------------------------

    def perform(self, actions: Iterable[Action]) -> None:
        actions = list(actions)
        log_transitions(actions)
        loop = asyncio.get_running_loop()
        for action in actions:
            if isinstance(action, StartUpstream):
                lease = self._leases[action.lease_id]
                lease.reader = asyncio.create_task(self._run_upstream(lease))
                waiting = self._waiting.get(action.lease_id)
                if waiting is not None and not waiting.done():
                    waiting.set_result(None)
            elif isinstance(action, CloseUpstream):
                lease = self._leases[action.lease_id]
                lease.stopper = asyncio.create_task(self._stop(lease, action.reason))
            elif isinstance(action, ArmDeadline):
                self._cancel_timer(action.lease_id)
                delay = max(0.0, action.at - time.monotonic())
                self._timers[action.lease_id] = loop.call_later(
                    delay, self._deadline, action.lease_id, action.token
                )
            elif isinstance(action, CancelDeadline):
                self._cancel_timer(action.lease_id)
            elif isinstance(action, EndAttachment):
                lease = self._leases[action.lease_id]
                if action.reason is ReleaseReason.SERVER_EXIT and lease.end_code is not None:
                    code = lease.end_code  # already the client's code (4006, 4009, relayed, 4002)
                else:
                    code = client_close_for_lease_end(action.reason)
                self._end_attachment(lease, action.generation, code)
            elif isinstance(action, Acknowledge):
                lease = self._leases[action.lease_id]
                attachment = lease.attachment
                if attachment is not None and attachment.generation == action.generation:
                    attachment.send(
                        ack_frame(action.control.value, lease.control_id, confirmed=lease.confirmed)
                    )
                    reason = ACK_CLOSE_REASONS[action.control]  # "stopped" / "released"
                    self._end_attachment(lease, action.generation, BrokerCloseCode.NORMAL, reason)
            elif isinstance(action, RejectWaiting):
                waiting = self._waiting.get(action.lease_id)
                if waiting is not None and not waiting.done():
                    waiting.set_result(action.code)
                self._leases.pop(action.lease_id, None)

    def _end_attachment(self, lease: _Lease, generation: int, code: int, reason: str | None = None) -> None:
        attachment = lease.attachment
        if attachment is not None and attachment.generation == generation:
            lease.attachment = None
            attachment.close(code, reason)

    def _cancel_timer(self, lease_id: str) -> None:
        timer = self._timers.pop(lease_id, None)
        if timer is not None:
            timer.cancel()

    def _deadline(self, lease_id: str, token: tuple[float, int]) -> None:
        self._timers.pop(lease_id, None)
        self.perform(self.book.on_deadline(lease_id, token))

    # --- the upstream ------------------------------------------------------------------------------

    async def _run_upstream(self, lease: _Lease) -> None:
        """Connect, relay install frames until ready, then read every message for the lease's life."""
        try:
            lease.upstream = await connect_upstream(lease.execution, lease.query, self._upstream_options)
            lease.connected.set()
            if lease.upstream is None:
                lease.end_code = BrokerCloseCode.SESSION_UNAVAILABLE
                return
            lease.writer = asyncio.create_task(self._write_upstream(lease, lease.upstream))
            async for raw in lease.upstream:
                message = _parsed(raw)  # once, for the status check and the traffic after it
                if lease.ready is None:
                    frame = message if _is_status_frame(message) else None
                    if frame is not None:
                        if frame.get("status") == "ready":
                            lease.ready = frame
                            controls = frame.get("controls")
                            lease.controls = (
                                frozenset(controls) if isinstance(controls, list) else frozenset()
                            )
                            # Before any client frame: the server is initialized with the owner's settings.
                            self._push_owner_settings(lease, "start")
                            lease.ready_event.set()
                        else:
                            text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
                            lease.install_status = text
                            if lease.attachment is not None:
                                lease.attachment.send(text)
                        continue
                if message is None:
                    continue
                if message.get("ack") == "settings" and "jsonrpc" not in message:
                    if message.get("ok") is False:  # refused (too large for serve): what it had applies
                        error = str(message.get("error"))[:32]
                        log_event(log, "settings_refused", logging.WARNING, error=error)
                    if lease.settings_acks:  # serve has the settings, and told the server (K14.11)
                        lease.settings_acks.popleft().set_result(message.get("changed") is True)
                else:
                    self._deliver(lease, lease.peer.from_server(message))
        except ConnectionClosed:
            pass
        finally:
            for waiting in lease.settings_acks:
                waiting.cancel()
            if lease.writer is not None:
                lease.writer.cancel()
            upstream = lease.upstream
            if upstream is not None and lease.end_code is None:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.config.close_timeout):
                        await upstream.wait_closed()
                # serve closes 1000 by itself only once the server exited and its tree was reaped.
                lease.confirmed = (
                    lease.exit_sent and not lease.closed_by_broker and upstream.close_code == 1000
                )
                lease.end_code = client_close_for_upstream(upstream.close_code)
            lease.connected.set()
            lease.ended.set()
            if lease.expiry is not None:
                lease.expiry.cancel()
            self.perform(self.book.upstream_ended(lease.lease_id))
            self._leases.pop(lease.lease_id, None)

    def _deliver(self, lease: _Lease, out: PeerOutput) -> None:
        self._to_server(lease, out)
        if out.shutdown_done:
            lease.shutdown_done.set()
        attachment = lease.attachment
        if attachment is None:
            return
        if out.initialize_outcome:  # its ready frame said capabilities: null (item 4)
            peer = lease.peer
            attachment.send(
                initialized_frame(
                    peer.capabilities,
                    peer.server_info,
                    peer.position_encoding,
                    self._suppressed(lease),
                    peer.initialize_error,
                )
            )
        for message in out.to_client:
            if not attachment.send(frame_text(message)):
                # The client stopped reading: detach it (4009), never block the server (K15.10).
                self._stalled(lease, attachment)
                return

    # --- settings (K14.8-K14.11) -----------------------------------------------------------------

    def _push_settings(
        self, lease: _Lease, settings: Mapping[str, Any] | None, why: str
    ) -> asyncio.Future[bool]:
        """serve's settings frame (``settings`` of the owner, or ``None``: re-read your file) on the
        lease's ordered queue; the future is serve's ack."""
        waiting: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        lease.settings_acks.append(waiting)
        if settings is not None:
            lease.pushed = dict(settings)
        lease.outbox.put_nowait(settings_frame(settings))
        log_event(
            log,
            "settings_pushed",
            language=lease.query.language[:32],
            why=why,
            owner_scoped=int(settings is not None),
        )
        return waiting

    def _push_owner_settings(self, lease: _Lease, why: str) -> asyncio.Future[bool] | None:
        """Push the owner's settings when they differ from what serve has; None when nothing was sent."""
        if self._owner_settings is None or "settings" not in lease.controls:
            return None
        fresh = dict(self._owner_settings.language_settings(lease.owner, lease.query.language))
        if fresh == lease.pushed:
            return None
        return self._push_settings(lease, fresh, why)

    async def _reconcile_settings(self, lease: _Lease) -> None:
        """Before a resumed client's ``ready``: the server has the latest settings (K14.11). With owner
        settings, the owner's (if they changed since the last push); else serve re-reads its file.
        Bounded: a serve that does not ack in time delays ``ready`` by the bound, no more."""
        if "settings" not in lease.controls or lease.ended.is_set():
            return
        if self._owner_settings is not None:
            waiting = self._push_owner_settings(lease, "reconcile")
            if waiting is None and lease.settings_acks:
                waiting = lease.settings_acks[-1]  # a push already on its way: wait for that one
        else:
            waiting = self._push_settings(lease, None, "reconcile")
        if waiting is None:
            return
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            async with asyncio.timeout(self.config.settings_timeout):
                await asyncio.shield(waiting)

    def _watch_settings(self) -> None:
        if (
            self._owner_settings is not None
            and self._settings_watch is None
            and self.config.settings_poll_interval > 0
        ):
            self._settings_watch = asyncio.get_running_loop().create_task(self._poll_settings())

    async def _poll_settings(self) -> None:
        """A save reaches every affected lease, attached or not (K14.10), within one poll."""
        while True:
            await asyncio.sleep(self.config.settings_poll_interval)
            self.settings_changed()

    def settings_changed(self, owner: str | None = None) -> int:
        """Push the latest settings of ``owner`` (every owner: ``None``) to its ready leases whose settings
        changed; how many were pushed. For an embedder that knows when its settings store saves."""
        pushed = 0
        for lease in list(self._leases.values()):
            if lease.ready is None or lease.ended.is_set() or (owner is not None and lease.owner != owner):
                continue
            try:
                if self._push_owner_settings(lease, "save") is not None:
                    pushed += 1
            except Exception:  # a settings store problem must not take the leases down
                log.exception("event=owner_settings_failed")
        return pushed

    def _arm_expiry(self, lease: _Lease) -> None:
        """Arm the lease's timer for its oldest pending request, unless one is armed (K15.5). A timer
        that fires after that request was answered expires nothing and is armed for the next one."""
        deadline = lease.peer.requests.next_deadline()
        if lease.expiry is not None or deadline is None or lease.ended.is_set():
            return
        delay = max(0.0, deadline - time.monotonic())
        lease.expiry = asyncio.get_running_loop().call_later(delay, self._expire, lease)

    def _expire(self, lease: _Lease) -> None:
        """Requests the server did not answer in time: ``$/cancelRequest`` to it, -32803 to their client."""
        lease.expiry = None
        if lease.ended.is_set():
            return
        self._deliver(lease, lease.peer.expire())
        self._arm_expiry(lease)

    def _stalled(self, lease: _Lease, attachment: _Attachment) -> None:
        if lease.attachment is attachment:
            lease.attachment = None
            self._to_server(lease, lease.peer.detach())
            code = int(BrokerCloseCode.CONNECTION_FAILED)
            self.perform(self.book.detach(lease.lease_id, attachment.generation, how="stalled", code=code))
            attachment.close(BrokerCloseCode.CONNECTION_FAILED)

    def _to_server(self, lease: _Lease, out: PeerOutput) -> None:
        # One queue and one writer per upstream keep the messages in order without blocking the caller.
        for message in out.to_server:
            lease.outbox.put_nowait(frame_text(message))

    async def _write_upstream(self, lease: _Lease, upstream: ClientConnection) -> None:
        try:
            while True:
                text = await lease.outbox.get()
                async with asyncio.timeout(self.config.write_timeout):
                    await upstream.send(text)
        except TimeoutError:
            # serve stopped reading: a transport failure; the reader then ends the lease (4009).
            upstream.transport.abort()
        except ConnectionClosed:
            pass

    async def _stop(self, lease: _Lease, reason: ReleaseReason) -> None:
        """The LSP part of a stop (shutdown, exit), then serve's close or ours (K16.2)."""
        if lease.reader is not None and not lease.connected.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.connect_timeout):
                    await lease.connected.wait()  # still connecting: stop what it connects to
        upstream = lease.upstream
        if upstream is None or lease.ended.is_set():
            if lease.reader is None:
                self.perform(self.book.upstream_ended(lease.lease_id))
            return
        if lease.ready is None:
            # Still installing (K8.14): no LSP to stop, and any other frame would only cancel the
            # install with 1001. serve's stop frame cancels it, reaps it, and closes 1000 after.
            await self._stop_frame_and_wait(lease, upstream)
            return
        out = lease.peer.begin_stop()
        self._deliver(lease, out)
        if not lease.shutdown_done.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.shutdown_timeout):
                    await lease.shutdown_done.wait()
        if not lease.shutdown_done.is_set():  # no answer within the bound: `exit` all the same (K16.2)
            self._to_server(lease, PeerOutput(to_server=[notification("exit")]))
        await self._stop_frame_and_wait(lease, upstream)

    async def _stop_frame_and_wait(self, lease: _Lease, upstream: ClientConnection) -> None:
        """serve's stop frame, after `exit` (if any) on the same ordered queue: serve stops the server
        even if it ignores `exit` (or cancels the install), reaps the tree, and only then closes 1000
        (docs/stream-contract.md). Not in time: the broker closes the upstream, unconfirmed."""
        lease.exit_sent = True
        lease.outbox.put_nowait(stop_frame())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.config.cleanup_timeout):
                await lease.ended.wait()  # serve closes once the server's tree is reaped
        if not lease.ended.is_set():
            lease.closed_by_broker = True  # serve then stops the tree, but nobody confirms it
            await close_within(upstream, 1000, "", self.config.write_timeout)

    # --- an execution's end (K12.20, K13.4) --------------------------------------------------------

    async def close_execution(self, execution: str, reason: ReleaseReason) -> int:
        """Close every lease of ``execution`` (attached clients get 4002) and wait for their upstreams to
        end, bounded by the stop sequence's deadlines. Returns how many leases were closed."""
        self.perform(self.book.close_execution(execution, reason))
        closing = [lease for lease in self._leases.values() if lease.execution.id == execution]
        tasks = [task for lease in closing for task in (lease.reader, lease.stopper) if task]
        if tasks:
            await asyncio.wait(tasks, timeout=self.config.shutdown_timeout + self.config.cleanup_timeout + 2)
        return len(closing)

    # --- shutdown ----------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close every lease (``backend_stop``) and wait for their upstreams (K12.21)."""
        if self._settings_watch is not None:
            self._settings_watch.cancel()
        self.perform(self.book.shutdown())
        for lease_id in list(self._timers):
            self._cancel_timer(lease_id)
        tasks = [
            task for lease in list(self._leases.values()) for task in (lease.reader, lease.stopper) if task
        ]
        if tasks:
            await asyncio.wait(tasks, timeout=self.config.shutdown_timeout + self.config.cleanup_timeout + 2)


def _departure(websocket: ServerConnection, closing: tuple[int, str] | None) -> tuple[str, int]:
    """How a client left, for the ``lease_detached`` line: ``closed`` with the close code the client
    sent (or, when the broker closed first, the one it sent or is sending: ``closing``, a 1008 still
    queued behind the frames before it), else ``lost`` (no close frame: 1006)."""
    sent, received = closed_by(websocket)
    if received is not None:
        return "closed", received
    if sent is not None:
        return "closed", sent
    if closing is not None:
        return "closed", closing[0]
    return "lost", 1006


def _stop_control(raw: str | bytes) -> Control | None:
    """``raw`` as a ``stop`` or ``release`` control frame (the two acted on during an install), else
    None."""
    message = _parsed(raw)
    control = parse_control(message) if message is not None else None
    if isinstance(control, Control) and control.name in (ControlName.STOP, ControlName.RELEASE):
        return control
    return None


def _is_status_frame(message: dict[str, Any] | None) -> bool:
    """Whether a parsed upstream message is serve's status frame (``status``, no ``jsonrpc``)."""
    return message is not None and "status" in message and "jsonrpc" not in message


def _parsed(raw: str | bytes) -> dict[str, Any] | None:
    """``raw`` as a JSON object, or None for anything the project's strict parser refuses: not UTF-8,
    not JSON (``NaN`` and ``Infinity`` included, which no peer could read once written on), nested
    deeper than the parser goes (``json.loads`` raises ``RecursionError`` for that, not ``ValueError``),
    or not an object."""
    try:
        return parse_message(raw)
    except MalformedMessage:
        return None


async def _close(websocket: ServerConnection, code: int, deadline: float) -> None:
    await close_within(websocket, code, CLOSE_REASONS.get(code, ""), deadline)
