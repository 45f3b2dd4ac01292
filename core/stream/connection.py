"""One stream connection's walk: resolve -> (install) -> start -> ready -> bridge -> close.

The request was already authenticated and validated before the upgrade (see
:mod:`kandev_lsp.stream.server`); everything here happens on an open WebSocket and ends with a close
code from :class:`~kandev_lsp.stream.contract.CloseCode`. Details of failures go to the log; the close
reason stays short.

The install hand-off rule: while an install runs, any message from the client (or its disconnect)
cancels the install and closes the connection with 1001. Once the install has finished, messages are
kept: the ones that arrive before ``ready`` are delivered to the server, in order, right after it
started. When the client's message and the install's end are seen in the same loop turn, the install
wins and the message is kept.

The stop frame ``{"control":"stop"}`` (docs/stream-contract.md, "Control frames") is the exception: at
any point it stops what runs (the install is cancelled and reaped; a started server gets the graceful
stop and its whole tree is confirmed gone), and only then is the connection closed with 1000 ``stopped``,
so the close itself proves the cleanup (the broker's stop, K16.2, K12.14).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kandev_lsp.lifecycle import LaunchError, LaunchFailure, Lifecycle, QuietObserver
from kandev_lsp.resolver import Resolution
from kandev_lsp.session import BridgeLimits, log_event
from kandev_lsp.settings import SettingsFile
from kandev_lsp.stream import contract
from kandev_lsp.stream.bridge import BridgeEnd, bridge
from kandev_lsp.stream.contract import CLOSE_REASONS, CloseCode, StreamRequest
from kandev_lsp.stream.websocket import WebSocketChannel, close_within, closed_by, is_open
from kandev_lsp.taskenv import Task
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

if TYPE_CHECKING:
    from kandev_lsp.host import PluginHost
    from kandev_lsp.install import InstallProgress, InstallReceipt
    from kandev_lsp.process import ProcessSupervisor

log = logging.getLogger("kandev_lsp.stream")

#: The close code for each way a bridge can end (see :func:`bridge_close`).
BRIDGE_CLOSE_CODES: dict[BridgeEnd, CloseCode] = {
    BridgeEnd.CLIENT_CLOSED: CloseCode.NORMAL,
    BridgeEnd.STOP_REQUESTED: CloseCode.NORMAL,  # reason "stopped", see bridge_close
    BridgeEnd.CLIENT_TOO_LARGE: CloseCode.MESSAGE_TOO_BIG,
    BridgeEnd.CLIENT_MALFORMED: CloseCode.INVALID_DATA,  # not UTF-8; a bad frame was closed 1002 already
    # The server is stopped because the client stopped reading: the server is gone, which is what 4006
    # tells a client (reconnect for a new server). 4009 promises the opposite (K9.12). The reason says why.
    BridgeEnd.CLIENT_STALLED: CloseCode.SERVER_FAILED,
    BridgeEnd.SERVER_EXITED: CloseCode.SERVER_FAILED,
    BridgeEnd.SERVER_TOO_LARGE: CloseCode.MESSAGE_TOO_BIG,
    BridgeEnd.SERVER_MALFORMED: CloseCode.SERVER_FAILED,
    BridgeEnd.SERVER_STALLED: CloseCode.SERVER_FAILED,
}


def bridge_close(
    end: BridgeEnd, status: int | None, *, exit_requested: bool, stopping: bool
) -> tuple[CloseCode, str]:
    """The close code and reason for a bridge that ended with ``end`` (pure).

    :param status: the server's exit status if it exited by itself, None if it was stopped.
    :param exit_requested: the client sent ``shutdown`` and ``exit``: only then is a server exit with
        status 0 a normal end (1000); any other exit is unexpected (4006, K9.9), status 0 included.
    :param stopping: ``serve`` is shutting down (teardown): 1001 ``going away``, whatever ended first.
    """
    if stopping:
        return CloseCode.GOING_AWAY, CLOSE_REASONS[CloseCode.GOING_AWAY]
    if end is BridgeEnd.STOP_REQUESTED:  # sent only after the graceful stop reaped the tree
        return CloseCode.NORMAL, contract.STOPPED
    if end is BridgeEnd.SERVER_EXITED and status == 0 and exit_requested:
        return CloseCode.NORMAL, CLOSE_REASONS[CloseCode.NORMAL]
    code = BRIDGE_CLOSE_CODES[end]
    reason = contract.CLIENT_TOO_SLOW if end is BridgeEnd.CLIENT_STALLED else CLOSE_REASONS[code]
    return code, reason


@dataclass
class StreamContext:
    """What every connection of one ``serve`` shares."""

    plugins: PluginHost
    task: Task
    workspace_uri: str
    limits: BridgeLimits
    settings: SettingsFile | None
    supervisor: ProcessSupervisor | None
    #: The one lifecycle (resolve -> install -> resolve -> start) every connection walks; built on first use
    #: so a supervisor set after construction (:meth:`StreamServer.start`) is the one it uses.
    _lifecycle: Lifecycle | None = None
    #: Set when ``serve`` shuts down: connections then close with 1001 and log a teardown.
    stopping: bool = False

    @property
    def lifecycle(self) -> Lifecycle:
        if self._lifecycle is None:
            self._lifecycle = Lifecycle(self.plugins, settings=self.settings, supervisor=self.supervisor)
        return self._lifecycle

    async def aclose(self) -> None:
        """Cancel and reap installs still running."""
        if self._lifecycle is not None:
            await self._lifecycle.aclose()


class _Closed(Exception):
    """The connection was closed (by us, with a logged reason, or by the client)."""


class StreamConnection:
    """One accepted WebSocket connection for one language."""

    def __init__(self, ctx: StreamContext, websocket: ServerConnection, request: StreamRequest, number: int):
        self.ctx = ctx
        self.ws = websocket
        self.request = request
        self.name = f"c{number}"
        self.language = request.language

    def _log(self, event: str, level: int = logging.INFO, **fields: object) -> None:
        log_event(log, event, level, conn=self.name, language=self.language, **fields)

    async def run(self) -> None:
        self._log("connection_open", auto_install=int(self.request.auto_install))
        try:
            await self._walk()
        except _Closed:
            pass
        except Exception:  # a bug: log it in our format; websockets then closes with 1011
            log.exception("event=connection_crashed conn=%s language=%s", self.name, self.language)
            raise

    async def _close(
        self, code: CloseCode, detail: str = "", level: int = logging.INFO, *, reason: str | None = None
    ) -> _Closed:
        """Close with ``code`` (bounded by the write deadline, then the transport is dropped) and log
        what really happened: when the connection was already closed, the codes actually exchanged."""
        if reason is None:
            reason = CLOSE_REASONS[code]
        if is_open(self.ws):
            teardown = self.ctx.stopping
            fields: dict[str, object] = {"code": int(code), "reason": reason}
            in_time = await close_within(self.ws, code, reason, self.ctx.limits.client_write_timeout)
            if not in_time:
                fields["dropped"] = "the close missed its write deadline; the transport was dropped"
        else:
            sent, received = closed_by(self.ws)
            teardown = self.ctx.stopping and sent == CloseCode.GOING_AWAY
            fields = {"code": sent if sent is not None else "none", "received": received or "none"}
            if received is None and sent is None:
                fields["dropped"] = "the TCP connection ended without a close frame"
        if teardown:
            fields["teardown"] = 1
        self._log("connection_close", level, **fields, detail=detail)
        return _Closed()

    async def _status(self, frame: str) -> None:
        """Send a status frame within the write deadline; a client that cannot take it is gone."""
        try:
            async with asyncio.timeout(self.ctx.limits.client_write_timeout):
                await self.ws.send(frame)
        except TimeoutError:
            raise await self._close(
                CloseCode.SERVER_FAILED,
                "a status frame missed its write deadline",
                reason=contract.CLIENT_TOO_SLOW,
            ) from None
        except ConnectionClosed:
            self._log("connection_close", reason="client gone before a status frame")
            raise _Closed() from None

    async def _walk(self) -> None:
        lifecycle = self.ctx.lifecycle
        resolution = await lifecycle.resolve(self.language, self.ctx.task)
        pending: list[bytes] = []
        if not resolution.found:
            resolution, pending = await self._ensure(resolution)
        if any(contract.is_stop_frame(body) for body in pending):
            # The stop frame came as the install finished: nothing runs, nothing to start.
            self._log("stop_requested", detail="before the server started")
            why = "stopped before the server started"
            raise await self._close(CloseCode.NORMAL, why, reason=contract.STOPPED)
        await self._serve(resolution, pending)

    # Install ------------------------------------------------------------------------------------------
    async def _ensure(self, missing: Resolution) -> tuple[Resolution, list[bytes]]:
        """The lifecycle decides whether to install (K9.2-K9.5); this keeps the hand-off rule: while the
        install runs, a client message or disconnect cancels it (1001)."""
        policy = self.ctx.lifecycle.policy(requested=self.request.auto_install)
        observer = _StreamObserver(self)
        ensure = asyncio.ensure_future(
            self.ctx.lifecycle.ensure(self.language, self.ctx.task, policy, observer, resolution=missing)
        )
        listen = asyncio.ensure_future(self.ws.recv(decode=False))
        try:
            await asyncio.wait({ensure, listen}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # this handler was cancelled: leave nothing running
            await _cancel(ensure, LaunchError, _Closed, Exception)
            await _cancel(listen, ConnectionClosed)
            raise
        await _cancel(ensure, LaunchError, _Closed, Exception)  # the client spoke or left first
        pending: list[bytes] = []
        if ensure.cancelled():
            stop_asked = (
                not self.ctx.stopping
                and listen.done()
                and listen.exception() is None
                and contract.is_stop_frame(listen.result())
            )
            if self.ctx.stopping:
                why = "kandev-lsp is stopping (teardown)"
            elif listen.exception():
                why = "the client disconnected"
            elif stop_asked:
                why = "the client asked to stop"
            else:
                why = "the client sent a message"
            self._log("install_cancelled", detail=why)
            if stop_asked:  # the cancelled install's processes are reaped by now (_cancel waited)
                raise await self._close(CloseCode.NORMAL, why, reason=contract.STOPPED)
            raise await self._close(CloseCode.GOING_AWAY, why)
        if not listen.done():
            await _cancel(listen, ConnectionClosed)  # safe: websockets keeps the message for the next recv()
        elif listen.exception() is None:
            pending.append(listen.result())  # the hand-off: the install finished first, the message is kept
        elif observer.started:
            self._log("install_orphaned", detail="the client disconnected as the install finished")
            raise _Closed()
        try:
            resolution = ensure.result()
        except LaunchError as exc:
            if exc.failure is LaunchFailure.INSTALL_CANCELLED:
                self._log("install_cancelled", detail=str(exc))
            code = contract.launch_close_code(exc.failure)
            level = logging.WARNING if observer.started else logging.INFO
            detail = str(exc) if exc.failure is not LaunchFailure.INSTALL_CANCELLED else "install cancelled"
            if exc.failure in (LaunchFailure.INSTALL_FAILED, LaunchFailure.NO_INSTALLER) and observer.started:
                detail = exc.first_line
            raise await self._close(code, detail, level) from None
        except _Closed:
            raise
        except Exception as exc:  # a bug or an unexpected OS failure: still tell the client clearly
            log.exception("event=install_crashed conn=%s language=%s", self.name, self.language)
            await observer.install_failed(
                self.language,
                f"the install of the {self.language} server failed unexpectedly ({type(exc).__name__}); "
                "see the kandev-lsp log, then retry",
            )
            raise await self._close(CloseCode.INSTALL_FAILED, type(exc).__name__) from None
        if observer.started:
            await self._status(contract.installed_frame(self.language))
        return resolution, pending

    # Serve --------------------------------------------------------------------------------------------
    async def _serve(self, resolution: Resolution, pending: list[bytes]) -> None:
        try:
            session = await self.ctx.lifecycle.start(resolution, self.ctx.task, limits=self.ctx.limits)
        except LaunchError as exc:
            code = contract.launch_close_code(exc.failure)
            raise await self._close(code, exc.first_line, logging.WARNING) from None
        self._log("server_start", pid=session.pid, source=resolution.source)
        stop_asked = False
        try:
            await self._status(
                contract.ready_frame(self.language, self.ctx.task.workspace, self.ctx.workspace_uri)
            )
            channel = WebSocketChannel(
                self.ws,
                pending=pending,
                max_message=self.ctx.limits.max_message,
                on_settings=session.use_settings,  # the settings frame (K14.9-K14.11)
            )
            result = await bridge(session, channel)
            stopping = self.ctx.stopping  # what ended the bridge, not what happened while stopping it
            stop_asked = result.end is BridgeEnd.STOP_REQUESTED and not stopping
        finally:
            # The stop frame: the graceful stop (shutdown unless the client already sent exit, exit, the
            # grace, then the whole tree stopped and confirmed gone) before the 1000 that answers it.
            status = await (session.stop() if stop_asked else session.aclose())
        code, reason = bridge_close(
            result.end, status, exit_requested=session.exit_requested, stopping=stopping
        )
        self._log(
            "server_exit",
            pid=session.pid,
            status=status,
            end=result.end.value,
            exit_requested=int(session.exit_requested),
            to_server=result.to_server,
            to_client=result.to_client,
        )
        detail = "kandev-lsp is stopping (teardown)" if stopping else result.detail
        level = logging.INFO if code in (CloseCode.NORMAL, CloseCode.GOING_AWAY) else logging.WARNING
        raise await self._close(code, detail, level, reason=reason)


class _StreamObserver(QuietObserver):
    """The stream's status frames and log lines for an install (K9.3: ``installing`` is written before the
    install waits for the lock; when it cannot be written, :class:`_Closed` ends the walk, nothing installed)."""

    def __init__(self, connection: StreamConnection) -> None:
        self.connection = connection
        self.started = False

    async def installing(self, language: str) -> None:
        await self.connection._status(contract.installing_frame(language))
        self.started = True
        self.connection._log("install_start")

    def progress(self, report: InstallProgress) -> None:
        if report.phase != "downloading" or report.bytes_done == report.bytes_total:
            self.connection._log(
                "install_progress", level=logging.DEBUG, phase=report.phase, done=report.bytes_done
            )

    async def installed(self, language: str, receipt: InstallReceipt) -> None:
        # The ``installed`` frame is sent by the walk after the hand-off decision, so a client that
        # answers it at once never cancels an install that has already finished.
        self.connection._log("install_done", version=receipt.version)

    async def install_failed(self, language: str, message: str) -> None:
        self.connection._log("install_failed", logging.WARNING, detail=_first_line_of(message))
        with contextlib.suppress(_Closed):
            await self.connection._status(contract.install_failed_frame(language, message))


async def _cancel(task: asyncio.Future[Any], *expected: type[BaseException]) -> None:
    """Cancel ``task`` if it is still running and wait for it, swallowing the errors it may end with."""
    if task.done():
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, *expected):
        await task


def _first_line_of(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""
