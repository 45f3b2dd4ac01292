"""The asyncio driver of an :class:`~kandev_lsp.lsp.endpoint.Endpoint` over a pair of streams.

:class:`LspClient` moves bytes and nothing else: one reader task always drains the server's stdout
(whatever subscribers do: a slow one loses its oldest messages, it never blocks the reader, K15.11),
feeds each frame body to the endpoint, resolves the futures of answered requests, fans notifications out
to bounded subscriptions, and writes what the endpoint queued. Framing is
:mod:`kandev_lsp.protocol`'s (limits included). Timeouts are the endpoint's deadlines, armed on the event
loop's clock; a timed-out or cancelled request sends ``$/cancelRequest``.

Typical use, with an owned process's pipes::

    async with LspClient(process.stdout, process.stdin) as client:
        await client.initialize(initialize_params(workspace_folders=[workspace_folder(uri)]))
        symbols = await client.request("textDocument/documentSymbol", {...}, timeout=10)
        await client.shutdown()
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final

from kandev_lsp.language import Readiness
from kandev_lsp.lsp.endpoint import (
    DEFAULT,
    Endpoint,
    Event,
    MessageRejected,
    NotificationReceived,
    PendingRequest,
    RequestTimedOut,
    ResponseReceived,
    ServerCancelledRequest,
    ServerRequestReceived,
    UseDefault,
)
from kandev_lsp.lsp.errors import HandlerError, LspError, RequestTimeout, ResponseError, ServerClosed
from kandev_lsp.lsp.readiness import LOG_MESSAGE, SERVER_STATUS, ReadinessStatus, ReadinessTracker
from kandev_lsp.protocol import (
    DEFAULT_LIMITS,
    NEED_DATA,
    FrameDecoder,
    FrameLimits,
    ProtocolError,
    encode_header,
)
from kandev_lsp.protocol.jsonrpc import ErrorCode, RequestId

__all__ = ["DEFAULT_WRITE_TIMEOUT", "LspClient", "ServerRequestHandler", "Subscription"]

#: How long a write may wait for the server to read its input (the stream contract's stdin cut-off).
DEFAULT_WRITE_TIMEOUT: Final = 30.0
_READ_CHUNK: Final = 256 * 1024

#: An owner's asynchronous answer to one kind of server request: params in, result out (or HandlerError).
ServerRequestHandler = Callable[[Any], Awaitable[Any]]
SubscribedEvent = NotificationReceived | ServerRequestReceived


class Subscription:
    """Messages of some methods from one server, in a bounded queue that drops its oldest when full.

    Iterate it (``async for event in subscription``) or ``await get()``; iteration ends when the
    server's connection ends. :attr:`dropped` counts messages lost because the reader was faster.
    """

    def __init__(self, client: LspClient, methods: frozenset[str] | None, maxsize: int) -> None:
        self._client = client
        self.methods = methods
        self._queue: asyncio.Queue[SubscribedEvent | None] = asyncio.Queue(maxsize)
        self.dropped = 0
        self._ended = False

    def _offer(self, event: SubscribedEvent | None) -> None:
        queue = self._queue
        if queue.full():
            queue.get_nowait()
            self.dropped += 1
        queue.put_nowait(event)

    async def get(self) -> SubscribedEvent:
        """The next message; :class:`ServerClosed` once the connection ended and the queue is empty."""
        if self._ended:
            raise ServerClosed(self._client.closed_reason or "the subscription was closed")
        event = await self._queue.get()
        if event is None:
            self._ended = True
            raise ServerClosed(self._client.closed_reason or "the subscription was closed")
        return event

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> SubscribedEvent:
        try:
            return await self.get()
        except ServerClosed:
            raise StopAsyncIteration from None

    def close(self) -> None:
        """Stop receiving; iteration ends after what is queued."""
        self._client._unsubscribe(self)
        self._offer(None)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LspClient:
    """A client of one running language server over ``reader`` (its stdout) and ``writer`` (its stdin).

    :param endpoint: the protocol state to drive (a fresh :class:`Endpoint` by default); set its
        ``configuration`` / ``apply_edit`` answerers and handlers before :meth:`start`.
    :param peer: how errors name the server ("pyright-langserver stdout").
    :param frame_limits: framing limits of what the server sends.
    :param write_timeout: seconds a write may wait for the server to read its input.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        endpoint: Endpoint | None = None,
        peer: str = "language server",
        frame_limits: FrameLimits = DEFAULT_LIMITS,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        readiness: Readiness | None = None,
    ) -> None:
        self.endpoint = endpoint if endpoint is not None else Endpoint()
        self._readiness_declared = readiness
        #: Readiness of the server under the language's declaration (None without one), fed by the reader.
        self.readiness: ReadinessTracker | None = None
        self._ready = asyncio.Event()
        self._reader = reader
        self._writer = writer
        self._decoder = FrameDecoder(frame_limits, peer=peer)
        self._limits = frame_limits
        self._peer = peer
        self._write_timeout = write_timeout
        self._futures: dict[RequestId, asyncio.Future[Any]] = {}
        self._timeouts: dict[RequestId, float | None] = {}
        self._subscriptions: list[Subscription] = []
        self._handlers: dict[str, ServerRequestHandler] = {}
        self._handler_tasks: dict[Any, asyncio.Task[None]] = {}
        self._reader_task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed_reason: str | None = None
        #: The framing error that ended the connection, if one did (the server wrote something not LSP).
        self.protocol_error: ProtocolError | None = None
        self.rejected = 0
        self.unmatched = 0

    # -- lifetime --------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the reader task (idempotent). Call from a running event loop."""
        if self._reader_task is None:
            self._loop = asyncio.get_running_loop()
            if self._readiness_declared is not None and self.readiness is None:
                self.readiness = ReadinessTracker(self._readiness_declared, started_at=self._loop.time())
            self._reader_task = self._loop.create_task(self._read(), name=f"lsp reader ({self._peer})")

    async def __aenter__(self) -> LspClient:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def closed(self) -> bool:
        return self.closed_reason is not None

    def now(self) -> float:
        """The clock the endpoint's times are on (the event loop's monotonic clock)."""
        return self._running_loop().time()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    async def wait_closed(self) -> None:
        """Wait until the server's output has ended and everything in flight has failed."""
        if self._reader_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._reader_task)

    async def aclose(self) -> None:
        """Stop reading, fail what is in flight, close the server's input. Does not stop the process."""
        if self._reader_task is not None and not self._reader_task.done():
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader_task
        self._lost(self.closed_reason or "the client was closed")
        self._close_writer()

    def _close_writer(self) -> None:
        if not self._writer.is_closing():
            self._writer.close()

    # -- requests and notifications --------------------------------------------------------------------
    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | UseDefault | None = DEFAULT,
        tag: object = None,
    ) -> Any:
        """Send a request and return its result.

        ``timeout`` defaults to the endpoint's ``default_timeout`` (30 s); None waits forever. Cancelling
        the awaiting task cancels the request toward the server.

        :raises ResponseError: the server answered with an error.
        :raises RequestTimeout: no answer in time (``$/cancelRequest`` was sent).
        :raises RequestRefused: a bound of the endpoint would be exceeded; nothing was sent.
        :raises ServerClosed: the connection ended first.
        """
        self._check_open(method)
        pending = self.endpoint.send_request(method, params, now=self.now(), timeout=timeout, tag=tag)
        return await self._wait(pending)

    async def initialize(self, params: Mapping[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """``initialize`` then ``initialized``; return the whole ``InitializeResult`` (kept by the endpoint).

        ``timeout`` defaults to none: a cold server may take long, and K5.4 says wall time alone never
        fails it; the caller shows elapsed time from ``endpoint.initialize_sent_at`` instead.
        """
        self._check_open("initialize")
        pending = self.endpoint.send_initialize(params, now=self.now(), timeout=timeout)
        result = await self._wait(pending)
        if not isinstance(result, dict):
            raise ResponseError("initialize", ErrorCode.INTERNAL_ERROR, "the result is not an object")
        await self.notify("initialized", {})
        if self.readiness is not None and self.readiness.initialized(
            self.now(), self.endpoint.progress.snapshot()
        ):
            self._ready.set()
        return result

    async def wait_ready(self, timeout: float | None = None) -> ReadinessStatus:
        """Wait until the server is ready under its language's readiness declaration, or ``timeout``.

        Never raises for a timeout: the returned status says ready or not, with what the server reports
        (progress titles, its status message, elapsed time), so the caller can say why it gives up.
        ``timeout`` defaults to the declaration's own timeout.
        """
        tracker = self.readiness
        if tracker is None:
            raise ValueError("this LspClient was created without a readiness declaration")
        limit = tracker.readiness.timeout if timeout is None else timeout
        if not self._ready.is_set():
            waiter = asyncio.ensure_future(self._ready.wait())
            closed = asyncio.ensure_future(self.wait_closed())
            try:
                await asyncio.wait({waiter, closed}, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                closed.cancel()
        return tracker.status(self.now())

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (waits only for the write to drain)."""
        self._check_open(method)
        self.endpoint.send_notification(method, params)
        self._flush()
        await self._drain()

    async def shutdown(self, timeout: float = 2.0) -> bool:
        """Ask the server to stop: ``shutdown`` (bounded), ``exit``, end of its input (K16.2).

        Returns whether it answered ``shutdown`` in time. The process owner still waits for the exit and
        stops the tree if needed.
        """
        answered = False
        with contextlib.suppress(LspError):
            await self.request("shutdown", None, timeout=timeout)
            answered = True
        with contextlib.suppress(LspError):
            await self.notify("exit")
        self._close_writer()
        return answered

    def _check_open(self, method: str) -> None:
        if self.closed_reason is not None:
            raise ServerClosed(f"cannot send {method}: {self.closed_reason}")
        self.start()

    async def _wait(self, pending: PendingRequest) -> Any:
        future: asyncio.Future[Any] = self._running_loop().create_future()
        self._futures[pending.id] = future
        self._timeouts[pending.id] = None if pending.deadline is None else pending.deadline - pending.sent_at
        self._flush()
        if pending.deadline is not None:
            self._arm_timer(pending.deadline)
        try:
            try:
                await self._drain()
            except BaseException:
                # The write failed because the connection ended: _lost() may already have given the
                # future its ServerClosed. The caller gets the write's error; the future's is the same
                # news, marked as read here so asyncio never reports it as "never retrieved" (issue 17
                # item 2: a staged server that exits before answering initialize).
                _discard(future)
                raise
            return await future
        except asyncio.CancelledError:
            if self.endpoint.cancel(pending.id) is not None:
                self._flush()
            raise
        finally:
            self._futures.pop(pending.id, None)
            self._timeouts.pop(pending.id, None)

    # -- subscriptions and server requests -------------------------------------------------------------
    def subscribe(self, methods: str | Iterable[str] | None = None, *, maxsize: int = 1024) -> Subscription:
        """Receive the server's notifications (and requests) of ``methods``; None means every method."""
        if maxsize < 1:
            raise ValueError(f"a subscription holds at least one message, got maxsize={maxsize}")
        wanted = (
            frozenset([methods] if isinstance(methods, str) else methods) if methods is not None else None
        )
        subscription = Subscription(self, wanted, maxsize)
        self._subscriptions.append(subscription)
        if self.closed_reason is not None:
            subscription._offer(None)
        return subscription

    def _unsubscribe(self, subscription: Subscription) -> None:
        with contextlib.suppress(ValueError):
            self._subscriptions.remove(subscription)

    def handle(self, method: str, handler: ServerRequestHandler | None) -> None:
        """Answer the server's ``method`` requests with ``await handler(params)`` (None: the defaults).

        Use it for answers that need I/O (a ``workspace/applyEdit`` applier); synchronous answers are
        cheaper as ``endpoint.set_handler``. A server ``$/cancelRequest`` cancels the handler's task.
        """
        if handler is None:
            self._handlers.pop(method, None)
            self.endpoint.defer(method, False)
        else:
            self._handlers[method] = handler
            self.endpoint.defer(method)

    # -- the reader ------------------------------------------------------------------------------------
    async def _read(self) -> None:
        reason = f"{self._peer} closed its output"
        decoder = self._decoder
        endpoint = self.endpoint
        loop = self._running_loop()
        try:
            while True:
                chunk = await self._reader.read(_READ_CHUNK)
                if not chunk:
                    try:
                        decoder.receive_eof()
                    finally:
                        while (body := decoder.next_frame()) is not NEED_DATA:
                            self._dispatch(endpoint.receive(body, loop.time()))
                        self._flush()
                    break
                decoder.receive_data(chunk)
                while (body := decoder.next_frame()) is not NEED_DATA:
                    self._dispatch(endpoint.receive(body, loop.time()))
                self._flush()
        except ProtocolError as error:
            self.protocol_error = error
            reason = str(error)
        except (ConnectionError, OSError) as error:
            reason = f"reading from {self._peer} failed: {error}"
        finally:
            self._lost(reason)

    def _dispatch(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, ResponseReceived):
                future = self._futures.get(event.request.id)
                if future is None or future.done():
                    continue
                if event.error is None:
                    future.set_result(event.result)
                else:
                    error = event.error
                    future.set_exception(
                        ResponseError(
                            event.request.method,
                            error.get("code", ErrorCode.INTERNAL_ERROR),
                            str(error.get("message", "")),
                            error.get("data"),
                        )
                    )
            elif isinstance(event, NotificationReceived | ServerRequestReceived):
                if isinstance(event, ServerRequestReceived):
                    if not event.answered:
                        self._run_handler(event)
                elif self.readiness is not None:
                    self._observe_readiness(event)
                for subscription in self._subscriptions:
                    if subscription.methods is None or event.method in subscription.methods:
                        subscription._offer(event)
            elif isinstance(event, RequestTimedOut):
                future = self._futures.get(event.request.id)
                if future is not None and not future.done():
                    future.set_exception(
                        RequestTimeout(event.request.method, self._timeouts.get(event.request.id))
                    )
            elif isinstance(event, ServerCancelledRequest):
                task = self._handler_tasks.get(event.id)
                if task is not None:
                    # Cancelled on the next loop turn, once the handler has started: a task cancelled
                    # before its first step never runs its body, so the server would get no answer at
                    # all (a request and its $/cancelRequest often arrive in one read).
                    self._running_loop().call_soon(task.cancel)
            elif isinstance(event, MessageRejected):
                self.rejected += 1
            else:
                self.unmatched += 1

    def _observe_readiness(self, event: NotificationReceived) -> None:
        tracker = self.readiness
        assert tracker is not None
        method = event.method
        declared = tracker.readiness
        if (
            method == "$/progress"
            or method == SERVER_STATUS
            or method == declared.notification
            or method == declared.ready_on_notification
            or (method == LOG_MESSAGE and declared.log_message is not None)
        ):
            now = self.now()
            if tracker.observe(method, event.params, now, self.endpoint.progress.snapshot()):
                self._ready.set()
            else:
                self._ready.clear()

    def _run_handler(self, event: ServerRequestReceived) -> None:
        handler = self._handlers.get(event.method)
        if handler is None:  # deferred through the endpoint directly: the owner answers
            return
        task = self._running_loop().create_task(self._answer(event, handler))
        self._handler_tasks[event.id] = task

    async def _answer(self, event: ServerRequestReceived, handler: ServerRequestHandler) -> None:
        endpoint = self.endpoint
        try:
            result = await handler(event.params)
        except asyncio.CancelledError:
            endpoint.respond_error(event.id, ErrorCode.REQUEST_CANCELLED, "cancelled by the server")
        except HandlerError as error:
            endpoint.respond_error(event.id, error.code, error.message, error.data)
        except Exception as error:
            endpoint.respond_error(
                event.id,
                ErrorCode.INTERNAL_ERROR,
                f"kandev-lsp failed to answer {event.method}: {type(error).__name__}",
            )
        else:
            endpoint.respond(event.id, result)
        finally:
            self._handler_tasks.pop(event.id, None)
        if not self.closed:
            self._flush()

    # -- writing and timers ----------------------------------------------------------------------------
    def _flush(self) -> None:
        bodies = self.endpoint.data_to_send()
        if not bodies or self._writer.is_closing():
            return
        limits = self._limits
        write = self._writer.write
        try:
            for body in bodies:
                write(encode_header(len(body), limits) + body)
        except (ConnectionError, OSError, RuntimeError) as error:
            self._lost(f"writing to {self._peer} failed: {error}")

    async def _drain(self) -> None:
        transport = self._writer.transport
        if not transport.is_closing() and transport.get_write_buffer_size() == 0:
            return  # everything went to the pipe: no need to wait (the common case, and the hot path)
        try:
            async with asyncio.timeout(self._write_timeout):
                await self._writer.drain()
        except TimeoutError:
            self._lost(f"{self._peer} did not read its input for {self._write_timeout:g} s")
            raise ServerClosed(self.closed_reason or "write timeout") from None
        except (ConnectionError, OSError) as error:
            self._lost(f"writing to {self._peer} failed: {error}")
            raise ServerClosed(self.closed_reason or str(error)) from None

    def _arm_timer(self, deadline: float | None = None) -> None:
        # Deadlines mostly grow (one timeout for every request), so a timer already armed for an earlier
        # time is left alone: when it fires it expires what is due and re-arms for the next deadline.
        # That keeps a heap push and a cancel off every request.
        if deadline is None:
            deadline = self.endpoint.next_deadline()
        if deadline is None or (self._timer_at is not None and self._timer_at <= deadline):
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = deadline
        self._timer = self._running_loop().call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        self._dispatch(list(self.endpoint.expire(self.now())))
        self._flush()
        self._arm_timer()

    def _lost(self, reason: str) -> None:
        if self.closed_reason is not None:
            return
        self.closed_reason = reason
        lost = self.endpoint.connection_lost()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for request in lost:
            future = self._futures.get(request.id)
            if future is not None and not future.done():
                future.set_exception(ServerClosed(f"no answer to {request.method}: {reason}"))
        for task in list(self._handler_tasks.values()):
            task.cancel()
        for subscription in list(self._subscriptions):
            subscription._offer(None)


def _discard(future: asyncio.Future[Any]) -> None:
    """Settle a future nobody will await: cancel it, or read the exception it already holds."""
    if not future.cancel() and not future.cancelled():
        future.exception()
