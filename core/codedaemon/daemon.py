"""The ``kandev-lsp code`` daemon process (``python -P -m kandev_lsp.codedaemon``, started by
:mod:`~kandev_lsp.codedaemon.starter`).

It holds one :class:`~kandev_lsp.intel.service.IntelService`, opened from its identity exactly as a
one-shot ``kandev-lsp code`` opens one (:func:`kandev_lsp.cli.code.open_service`), so a call answers the
same JSON, warm. Its servers are the pool's owned processes (:mod:`kandev_lsp.process`): each has the
parent-death signal and carries the daemon's owner token, so a daemon killed outright takes them with it
and its successor sweeps up the rest (:mod:`~kandev_lsp.codedaemon.leftovers`). Before each query the
pool re-syncs what changed on disk (the runtime's disk watch), so a file changed between two calls is seen
by the second.

Each connection is one exchange (:mod:`~kandev_lsp.codedaemon.wire`); calls run concurrently, as MCP
calls do (mutations are serialized by the workspace's coordinator). A caller of another uid is dropped
unanswered. The daemon stops for the reasons of :mod:`~kandev_lsp.codedaemon.lifetime`, always the same
way: it leaves its socket at once (a new call then starts its successor), lets the calls under way finish,
stops every server gracefully (LSP ``shutdown``/``exit``, then the process tree), removes its owner
record, and exits 0. Its log (stderr, the log file) has one line per start, refusal and stop, never a path
or source text.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import logging
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any

from kandev_lsp.codedaemon import leftovers
from kandev_lsp.codedaemon.lifetime import (
    DEFAULT_IDLE_TIMEOUT,
    TICK,
    Activity,
    retirable,
    settings_changed,
    stamp,
    stop_reason,
)
from kandev_lsp.codedaemon.names import DaemonFiles, differences
from kandev_lsp.codedaemon.wire import MAX_MESSAGE, PROTOCOL, WireError, check_peer, decode, encode
from kandev_lsp.errors import KandevLspError
from kandev_lsp.session import log_event

if TYPE_CHECKING:
    from kandev_lsp.intel.service import IntelService

__all__ = ["CodeDaemon", "main"]

_log = logging.getLogger("kandev_lsp.codedaemon")

#: Seconds a stopping daemon waits for the calls under way before it stops their servers anyway (those
#: calls then answer that their server is gone). Within ``--stop``'s own wait (cli/code's STOP_TIMEOUT),
#: with the servers' stop after it.
DRAIN_TIMEOUT = 10.0
#: Seconds a stopped daemon gives its last replies (``--stop``'s answer) to be written.
REPLY_TIMEOUT = 5.0


def main() -> int:
    """Read the start message, detach, serve until stopped."""
    try:
        start = decode(sys.stdin.buffer.read(MAX_MESSAGE))
    except WireError as error:
        print(f"kandev-lsp code daemon: unreadable start message: {error}", file=sys.stderr)
        return 2
    if os.fork() != 0:  # the caller waits for this first process only: it leaves at once
        os._exit(0)
    ready = _detach()
    from kandev_lsp.cli.serve import configure_logging

    configure_logging("info")
    return asyncio.run(CodeDaemon(start, ready).run())


def _detach() -> IO[bytes]:
    """stdin and stdout on the null device, ``/`` as the folder; the readiness pipe (was stdout)."""
    ready = os.fdopen(os.dup(1), "wb", buffering=0)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    os.chdir("/")
    return ready


class CodeDaemon:
    """One daemon: its service, its socket and the decision when to stop (see the module docstring).

    :param start: the start message (``files``, ``identity``, ``idleTimeout``, ``token``).
    :param ready: where the readiness line goes (closed after it).
    """

    def __init__(self, start: Mapping[str, Any], ready: IO[bytes]) -> None:
        self.files = DaemonFiles(**start["files"])
        self.identity: dict[str, Any] = dict(start["identity"])
        self.token = str(start["token"])
        idle = start.get("idleTimeout")
        self.activity = Activity(last=time.monotonic(), idle_timeout=_positive(idle) or DEFAULT_IDLE_TIMEOUT)
        self._ready: IO[bytes] | None = ready
        self._service: IntelService | None = None
        self._opened_settings: Any = None
        self._opened_there = False
        #: What opening the service said on stderr (see :class:`_Notices`), said again with each answer.
        self._notices = ""
        self._roots = [(root, stamp(root)) for root in self.identity["roots"]]
        self._socket_stamp: Any = None
        self.stop_reason: str | None = None
        self._stopping = asyncio.Event()
        self._stopped = asyncio.Event()
        self._connections: set[asyncio.Task[Any]] = set()
        self._server: asyncio.AbstractServer | None = None

    # -- life ----------------------------------------------------------------------------------------------
    async def run(self) -> int:
        """Open the service, listen, say ready, serve until a stop; 0 after a clean stop."""
        service = self._open()
        if service is None:
            return 1
        try:
            await leftovers.sweep(self.files.owner)
            leftovers.record(self.files.owner, self.token)
            self._server = await asyncio.start_unix_server(
                self._connection, sock=self._bind(), limit=MAX_MESSAGE
            )
        except BaseException:
            await service.aclose()
            raise
        self._say({"ready": os.getpid()})
        log_event(_log, "code_daemon_started", pid=os.getpid(), roots=len(self._roots))
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(signum, self.stop, f"signal-{signal.Signals(signum).name}")
        watcher = asyncio.create_task(self._watch())
        await self._stopping.wait()
        watcher.cancel()
        await self._shutdown(service)
        return 0

    def stop(self, reason: str) -> None:
        """Begin stopping (the first reason counts): leave the socket now, so the next caller (the one told
        to ``restart`` included) finds no daemon there and starts a successor; the rest follows."""
        if self.stop_reason is None:
            self.stop_reason = reason
            self._stopping.set()
            if self._server is not None:
                self._server.close()
            if stamp(self.files.socket) == self._socket_stamp:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.files.socket)

    def _open(self) -> IntelService | None:
        """The service of the identity, or None after saying why not (a one-shot run's refusal)."""
        from kandev_lsp.cli.code import open_service
        from kandev_lsp.cli.common import UsageError

        identity = self.identity
        arguments = argparse.Namespace(
            workspace=list(identity["roots"]),
            env=list(identity["env"]),
            settings=identity["settings"],
            install=identity["install"],
            read_only=identity["readOnly"],
            disable_tool=list(identity["disable"]),
            auto_approve=False,
        )
        notices = _Notices(sys.stderr)
        refusal: dict[str, Any] | None = None
        with notices.collecting():
            try:
                self._service = open_service(arguments)
            except UsageError as error:
                refusal = {"usage": str(error)}
            except KandevLspError as error:
                refusal = {"error": str(error)}
        self._notices = notices.getvalue()
        if refusal is not None:
            self._say(self._noticed(refusal))
            return None
        self._opened_settings = self._settings_now()
        self._opened_there = self._settings_there()
        return self._service

    def _noticed(self, reply: dict[str, Any]) -> dict[str, Any]:
        """``reply`` with what a one-shot run would have said on stderr while it opened the service."""
        return {**reply, "stderr": self._notices} if self._notices else reply

    def _bind(self) -> socket.socket:
        """The listening socket at its path (mode 0600), replacing a stale file the caller found there."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.files.socket)
        mask = os.umask(0o177)  # the socket is created 0600; the servers keep the caller's umask
        try:
            listener.bind(self.files.socket)
        finally:
            os.umask(mask)
        listener.listen(64)
        self._socket_stamp = stamp(self.files.socket)
        return listener

    def _say(self, message: Mapping[str, Any]) -> None:
        """The readiness line (or the refusal), once; the pipe is closed after it."""
        if self._ready is None:
            return
        with contextlib.suppress(OSError), self._ready:
            self._ready.write(encode(message))
        self._ready = None

    async def _watch(self) -> None:
        """Once a tick: stop when idle, when a root is gone or when the socket is no longer ours."""
        try:
            while True:
                await asyncio.sleep(TICK)
                roots = all(stamp(root) == stamped for root, stamped in self._roots)
                ours = stamp(self.files.socket) == self._socket_stamp
                reason = stop_reason(self.activity, time.monotonic(), roots_present=roots, socket_ours=ours)
                if reason is not None:
                    self.stop(reason)
                    return
        except Exception:  # a daemon nobody watches would never stop by itself: stop it now
            _log.exception("event=code_daemon_watch_failed")
            self.stop("watch-failed")

    async def _shutdown(self, service: IntelService) -> None:
        """Finish the calls under way (the socket is left already), stop every server, the last replies."""
        log_event(_log, "code_daemon_stopping", reason=self.stop_reason, calls=self.activity.in_flight)
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while self.activity.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        try:
            await service.aclose()
        finally:
            leftovers.forget(self.files.owner, self.token)
            self._stopped.set()
            if self._connections:
                await asyncio.wait(set(self._connections), timeout=REPLY_TIMEOUT)
            log_event(_log, "code_daemon_stopped", reason=self.stop_reason)

    # -- one exchange --------------------------------------------------------------------------------------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            try:
                check_peer(writer.get_extra_info("socket"))
            except WireError as error:
                log_event(_log, "code_daemon_refused_peer", logging.WARNING, detail=str(error))
                return
            try:
                line = await reader.readline()
            except (ValueError, ConnectionError):  # over the limit, or the caller left
                return
            if not line:
                return  # a caller that only looked whether a daemon listens
            try:
                request = decode(line)
            except WireError as error:
                reply: dict[str, Any] = {"error": f"the daemon could not read the request: {error}"}
            else:
                reply = await self._answer(request)
            writer.write(encode(reply))
            await writer.drain()
        except ConnectionError:
            pass  # the caller left before its answer (interrupted): the call ran, its answer is dropped
        finally:
            writer.close()
            if task is not None:
                self._connections.discard(task)

    async def _answer(self, request: Mapping[str, Any]) -> dict[str, Any]:
        if request.get("protocol") != PROTOCOL:
            return {"mismatch": True}
        op = request.get("op")
        if op == "stop":
            self.stop("stop-requested")
            await self._stopped.wait()
            return {"stopped": os.getpid()}
        if op == "retire":
            return self._retire(request.get("identity"))
        if request.get("identity") != self.identity:
            return {"mismatch": True}
        if op != "call":
            return {"error": f"the daemon does not know the request {op!r}"}
        if self._stopping.is_set():
            return {"restart": self.stop_reason}
        if self._settings_moved():
            self.stop("settings-changed")
            return {"restart": "settings-changed"}
        idle = _positive(request.get("idleTimeout"))
        if idle is not None:
            self.activity.idle_timeout = idle
        self.activity.begin(time.monotonic())
        self._mark_used()
        try:
            return await self._call(request)
        finally:
            self.activity.end(time.monotonic())

    def _retire(self, theirs: Any) -> dict[str, Any]:
        """Make room for a daemon of another configuration of the same roots (:data:`~kandev_lsp.codedaemon.
        lifetime.MAX_DAEMONS`): stop, unless a call is under way or a parked edit still approvable
        (``busy``); the answer names what differs (never a value), and comes before the servers' stop."""
        if not isinstance(theirs, dict) or theirs.get("roots") != self.identity["roots"]:
            return {"mismatch": True}
        if self._stopping.is_set() or not retirable(self.activity, time.monotonic()):
            return {"busy": True}
        self.stop("replaced")
        return {"retired": os.getpid(), "differs": differences(self.identity, theirs)}

    def _mark_used(self) -> None:
        """The socket's mtime is this daemon's last call: the one a new configuration retires is the one
        that went unused longest (its caller reads it with a ``stat``, asking no daemon)."""
        if stamp(self.files.socket) == self._socket_stamp:
            with contextlib.suppress(OSError):
                os.utime(self.files.socket)

    async def _call(self, request: Mapping[str, Any]) -> dict[str, Any]:
        from kandev_lsp.cli.code import dry_run, tool_spec
        from kandev_lsp.cli.common import UsageError
        from kandev_lsp.intel.surface.dispatch import IntelContext

        assert self._service is not None
        tool = request.get("tool")
        deadline = _positive(request.get("deadline"))
        if not isinstance(tool, str) or deadline is None:
            return {"error": "the daemon got a call without a tool name or a deadline above 0"}
        try:
            spec = tool_spec(tool)
        except UsageError as error:
            return {"usage": str(error)}
        ctx = IntelContext(deadline=deadline, auto_approve=request.get("autoApprove") is True)
        try:
            result = await self._service.dispatch(tool, request.get("payload"), ctx)
        except Exception as error:
            # A one-shot run would end in this traceback. The log keeps where it was raised, never the
            # exception's message: that may quote the call's text (a replacement's source) or a secret.
            where = "".join(traceback.format_tb(error.__traceback__)).rstrip()
            _log.error(
                "event=code_daemon_call_failed tool=%s error=%s\n%s", spec.name, type(error).__name__, where
            )
            failed = f"the call failed in the daemon ({type(error).__name__}; its log: {self.files.log})"
            return self._noticed({"error": failed})
        expires = result.get("expiresInSeconds")
        if result.get("needsApproval") and isinstance(expires, (int, float)):
            self.activity.hold(time.monotonic() + expires)
        return self._noticed({"result": dry_run(result, held_by=spec.name)})

    # -- settings ------------------------------------------------------------------------------------------
    def _settings_now(self) -> Any:
        """The settings the file holds now; None when there is no settings file, or it is not valid now
        (the file keeps its last good settings then, and says why in its ``error``)."""
        assert self._service is not None
        settings = self._service.lifecycle.settings
        if settings is None:
            return None
        current = settings.current()[0]
        return None if settings.error is not None else current

    def _settings_there(self) -> bool:
        assert self._service is not None
        settings = self._service.lifecycle.settings
        return settings is not None and os.path.exists(settings.path)

    def _settings_moved(self) -> bool:
        """Whether the settings file now says something else than when the service was opened, or
        nothing valid: a one-shot run would refuse it (exit 1, saying why), so the successor that this
        call restarts into refuses it the same way, never answering from the last good settings. A file
        that appeared or went away counts too: what opening the service said about it (a file named on
        purpose but absent) no longer holds."""
        if self._opened_settings is None:
            return False
        current = self._settings_now()
        if current is None or settings_changed(self._opened_settings, current):
            return True
        if self._settings_there() != self._opened_there:
            return True
        self._opened_settings = current  # re-read, the same values: compare to this one next time
        return False


class _Notices(io.StringIO):
    """What a one-shot run of the same flags says on stderr while it opens the service, collected to be
    said with every answer of this daemon (the caller writes it to its stderr): the command line's own
    warnings (printed: a plugin that failed to load) and the library's (logged: a settings file named on
    purpose but absent, languages no plugin provides), which a one-shot run leaves to logging's last
    resort, the message alone. The printed ones go to the daemon's log too; the logged ones are there as
    its own log lines.

    :param log: the daemon's stderr (its log file).
    """

    def __init__(self, log: IO[str]) -> None:
        super().__init__()
        self._log = log

    def write(self, text: str) -> int:  # print(..., file=sys.stderr) while collecting
        self._log.write(text)
        return super().write(text)

    @contextlib.contextmanager
    def collecting(self) -> Iterator[None]:
        """Collect for the body of the ``with``."""
        handler = _Said(self)
        logger = logging.getLogger("kandev_lsp")
        logger.addHandler(handler)
        try:
            with contextlib.redirect_stderr(self):
                yield
        finally:
            logger.removeHandler(handler)


class _Said(logging.Handler):
    """A warning logged while the service opens, as logging's last resort prints it: the message alone."""

    def __init__(self, notices: _Notices) -> None:
        super().__init__(logging.WARNING)
        self._notices = notices

    def emit(self, record: logging.LogRecord) -> None:
        io.StringIO.write(self._notices, self.format(record) + "\n")  # not to the log: it has the record


def _positive(value: Any) -> float | None:
    """``value`` as seconds when it is a number above 0 (not a bool), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None
