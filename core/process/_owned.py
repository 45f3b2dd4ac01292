"""Spawning a child in the task, and stopping its whole tree.

A child is started without a shell, with exactly the task's environment (plus the owner marker, see
:mod:`kandev_lsp.process._tree`) and the task's workspace as working directory, in a group of its own.
Stopping follows the task-host contract: interrupt, wait the grace, kill the whole tree, confirm it is
gone. Captured pipes are read by the transport's callbacks straight into a bounded buffer, so there are
no reader tasks to leak and a chatty child never blocks.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from kandev_lsp._lazy import LazyModule
from kandev_lsp.process._backend import ProcessBackend
from kandev_lsp.process._errors import ProcessStartError
from kandev_lsp.process._output import OutputCallback, OutputCapture
from kandev_lsp.process._start import (
    DEFAULT_OUTPUT_LIMIT,
    SpawnPlan,
    StartedProcess,
    StderrMode,
    StdoutMode,
    plan_spawn,
    start_error,
)
from kandev_lsp.process._tree import ProcInfo, handles, is_alive, select_targets
from kandev_lsp.taskenv import TaskEnvironment

if TYPE_CHECKING:
    import psutil
    from kandev_lsp.process._supervisor import ProcessSupervisor
else:
    psutil = LazyModule("psutil")  # imported at first use: starting a server never needs it

logger = logging.getLogger("kandev_lsp.process")

#: Default time between the interrupt and the kill.
DEFAULT_GRACE = 2.0
#: How long a stop keeps killing and checking before it reports survivors.
CONFIRM_TIMEOUT = 5.0
#: How long a stop waits for captured pipes to reach end-of-file once the tree is dead.
PIPE_LINGER = 1.0
_POLL_INTERVAL = 0.02
_STREAM_LIMIT = 1 << 16


class _ChildProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's stream protocol, plus: captured fds go to an :class:`OutputCapture` instead of a
    reader, and the leader's exit is signalled on its own (asyncio's ``Process.wait`` also waits for
    every pipe to close, which an escaped grandchild holding stderr can delay forever)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, captured: frozenset[int], capture: OutputCapture):
        super().__init__(limit=_STREAM_LIMIT, loop=loop)
        self._captured = captured
        self._open_captured = set(captured)
        self._capture = capture
        self.exited: asyncio.Future[None] = loop.create_future()
        self.captured_closed: asyncio.Future[None] = loop.create_future()
        self.callback_failed: asyncio.Future[None] = loop.create_future()
        if not captured:
            self.captured_closed.set_result(None)

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd not in self._captured:
            super().pipe_data_received(fd, data)
            return
        self._capture.feed(data.encode() if isinstance(data, str) else data)
        if self._capture.callback_error is not None and not self.callback_failed.done():
            self.callback_failed.set_result(None)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        super().pipe_connection_lost(fd, exc)
        if fd in self._open_captured:
            self._open_captured.discard(fd)
            if not self._open_captured:
                self._capture.finish()
                if self._capture.callback_error is not None and not self.callback_failed.done():
                    self.callback_failed.set_result(None)
                self.captured_closed.set_result(None)

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


class OwnedProcess:
    """A child process and everything it starts, owned until :meth:`stop` returns.

    ``stdin`` is a writer when spawned with ``stdin=True``; ``stdout`` a reader when spawned with
    ``stdout="pipe"`` (the caller must keep reading it, as with any pipe). Use it as an async context
    manager to stop it on the way out.
    """

    def __init__(
        self,
        *,
        argv: tuple[str, ...],
        transport: asyncio.SubprocessTransport,
        protocol: _ChildProtocol,
        capture: OutputCapture,
        backend: ProcessBackend,
        token: str,
        stdout_mode: StdoutMode,
        supervisor: ProcessSupervisor | None,
    ) -> None:
        self.argv = argv
        self.pid: int = transport.get_pid()
        self.stdin: asyncio.StreamWriter | None = protocol.stdin
        self.stdout: asyncio.StreamReader | None = protocol.stdout if stdout_mode == "pipe" else None
        #: Pids that were still alive when a stop gave up (normally empty).
        self.survivors: tuple[int, ...] = ()
        self._transport = transport
        self._protocol = protocol
        self._capture = capture
        self._backend = backend
        self._token = token
        self._supervisor = supervisor
        self._stop_task: asyncio.Task[None] | None = None

    # State ------------------------------------------------------------------------------------------
    @property
    def returncode(self) -> int | None:
        """The exit status once the child has exited and been reaped (negative: killed by that signal)."""
        return self._transport.get_returncode()

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` has finished."""
        return self._stop_task is not None and self._stop_task.done()

    @property
    def output_truncated(self) -> bool:
        """Whether :meth:`captured_output` left some output out."""
        return self._capture.truncated

    @property
    def callback_error(self) -> BaseException | None:
        """What ``on_output`` raised, if it did (it is not called again after that)."""
        return self._capture.callback_error

    @property
    def _exited(self) -> asyncio.Future[None]:
        """Done once the child itself is reaped (for :func:`run`; never cancel it)."""
        return self._protocol.exited

    @property
    def _callback_failed(self) -> asyncio.Future[None]:
        return self._protocol.callback_failed

    def captured_output(self) -> str:
        """Captured stderr (and stdout when ``stdout="capture"``), at most ``output_limit`` bytes: the head
        and the tail with a note of what was left out. For error messages."""
        return self._capture.text()

    async def wait(self) -> int:
        """Wait for the child itself to exit (not its pipes, not its descendants); its exit status."""
        await asyncio.shield(self._protocol.exited)
        returncode = self.returncode
        assert returncode is not None
        return returncode

    # Stopping ---------------------------------------------------------------------------------------
    async def stop(self, grace: float = DEFAULT_GRACE) -> int | None:
        """Interrupt the tree, wait up to ``grace`` seconds, kill whatever is left (including descendants
        that left the group), and confirm that nothing survives. Idempotent, safe after the child exited
        (it still sweeps up descendants it left behind), and not aborted by cancelling the caller.

        Returns the child's exit status, or None if it could not be reaped (see :attr:`survivors`).
        """
        if self._stop_task is None:
            self._stop_task = asyncio.get_running_loop().create_task(
                self._stop(grace), name=f"kandev-lsp stop pid {self.pid}"
            )
        await asyncio.shield(self._stop_task)
        return self.returncode

    async def _stop(self, grace: float) -> None:
        try:
            if self.stdin is not None and not self.stdin.is_closing():
                self.stdin.close()  # end-of-input is how many servers like to be asked to leave
            await self._stop_tree(grace)
        finally:
            await self._close_pipes()
            if self._supervisor is not None:
                self._supervisor._release(self)

    async def _stop_tree(self, grace: float) -> None:
        loop = asyncio.get_running_loop()
        known: dict[int, psutil.Process] = {}
        # Look first, while the child lives: its descendants are linked to it only until it dies.
        self._collect(known, await self._scan())
        if self.returncode is not None and not _alive(known):
            return
        if grace > 0:
            self._backend.interrupt(self._leader(), list(known.values()))
            await self._settle(list(known.values()), loop.time() + grace)
        deadline = loop.time() + CONFIRM_TIMEOUT
        while True:  # kill, then look again: something may have been started meanwhile
            self._collect(known, await self._scan())
            alive = [process for process in known.values() if is_alive(process)]
            leader = self._leader()
            if leader is None and not alive:
                return
            await self._backend.kill(leader, alive)
            if not await self._settle(alive, deadline):
                self._report_survivors(alive)
                return

    def _leader(self) -> int | None:
        """The child's pid while it is not reaped (its pid and group id cannot be reused until then)."""
        return self.pid if self.returncode is None else None

    async def _scan(self) -> list[ProcInfo]:
        return await asyncio.to_thread(self._backend.scan)

    def _collect(self, known: dict[int, psutil.Process], snapshot: list[ProcInfo]) -> None:
        leader = self._leader()
        pids = select_targets(
            snapshot,
            token=self._token,
            root_pid=leader,
            group_id=self._backend.group_of(leader) if leader is not None else None,
            exclude={self.pid, os.getpid()},
        )
        known.update(handles(pids - known.keys()))

    async def _settle(self, processes: Sequence[psutil.Process], deadline: float) -> bool:
        """Wait until the child is reaped and ``processes`` are gone, or ``deadline``; whether they are."""
        loop = asyncio.get_running_loop()
        exited = self._protocol.exited
        while True:
            pending = [process for process in processes if is_alive(process)]
            if exited.done() and not pending:
                return True
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            step = min(remaining, _POLL_INTERVAL) if pending else remaining
            if exited.done():
                await asyncio.sleep(step)
            else:
                await asyncio.wait([exited], timeout=step)  # wakes at once when the child exits

    def _report_survivors(self, processes: Sequence[psutil.Process]) -> None:
        survivors = [process.pid for process in processes if is_alive(process)]
        if self.returncode is None:
            survivors.insert(0, self.pid)
        self.survivors = tuple(survivors)
        logger.warning(
            "processes of %s still alive %.0f s after being killed: %s",
            self.argv[0],
            CONFIRM_TIMEOUT,
            ", ".join(map(str, self.survivors)),
        )

    async def _close_pipes(self) -> None:
        if not self._protocol.captured_closed.done():
            await asyncio.wait([self._protocol.captured_closed], timeout=PIPE_LINGER)
        self._transport.close()
        await asyncio.sleep(0)  # let the pipe transports run their close callbacks

    # Context manager --------------------------------------------------------------------------------
    async def __aenter__(self) -> OwnedProcess:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def __repr__(self) -> str:
        state = "stopped" if self.stopped else "running" if self.returncode is None else "exited"
        return f"<OwnedProcess pid={self.pid} {state} {self.argv[0]!r}>"


def _alive(known: dict[int, psutil.Process]) -> bool:
    return any(is_alive(process) for process in known.values())


async def spawn(
    argv: Sequence[str],
    *,
    env: TaskEnvironment,
    cwd: str,
    stdin: bool = False,
    stdout: StdoutMode = "pipe",
    stderr: StderrMode = "capture",
    supervisor: ProcessSupervisor | None = None,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    on_output: OutputCallback | None = None,
    owner_tokens: Sequence[str] = (),
) -> OwnedProcess:
    """Start ``argv`` in the task: no shell, the task's environment, ``cwd`` as working directory.

    ``argv[0]`` is an absolute path, or a bare name looked up on the task's PATH (never in ``cwd``).
    ``stdout``: ``"pipe"`` gives :attr:`OwnedProcess.stdout`; ``"capture"`` keeps it with stderr (one
    pipe, so the two interleave exactly as written); ``"discard"`` drops it. ``on_output`` sees captured
    output as text chunks as they arrive. ``owner_tokens`` are added to the child's owner marker beside
    its own token, so that a caller who records them (an install, in its cache) can find the tree later
    with :func:`reap_marked`, even after this process died. On Linux the child gets SIGKILL when this
    process dies (see :mod:`kandev_lsp.process._parentdeath`). Raises :class:`ProcessStartError` (or
    :class:`CommandNotFoundError`) when the child cannot be started.
    """
    plan = plan_spawn(
        argv,
        env=env,
        cwd=cwd,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        output_limit=output_limit,
        on_output=on_output,
        owner_tokens=owner_tokens,
        check_open=None if supervisor is None else supervisor._check_open,
    )
    capture = OutputCapture(plan.output_limit, plan.on_output)
    loop = asyncio.get_running_loop()
    factory: Callable[[], _ChildProtocol] = lambda: _ChildProtocol(loop, plan.captured, capture)  # noqa: E731
    try:
        transport, protocol = await loop.subprocess_exec(
            factory, plan.executable, *plan.args[1:], **plan.popen_kwargs
        )
    except OSError as exc:
        raise start_error(plan.executable, exc) from exc
    except ValueError as exc:  # e.g. a NUL byte in an argument or a variable
        raise ProcessStartError(
            plan.executable, str(exc), "Remove NUL characters from argv and env."
        ) from exc
    return await _own(plan, transport, protocol, capture, supervisor)


async def adopt(started: StartedProcess, *, supervisor: ProcessSupervisor | None = None) -> OwnedProcess:
    """Own a child :func:`~kandev_lsp.process.start_now` started before the event loop ran: its pipes
    are connected to the loop, its exit is watched, and ``supervisor`` stops it like any spawned child.

    Uses asyncio's Unix subprocess transport and child watcher (the same ones ``subprocess_exec`` uses),
    given the ``Popen`` instead of creating one; see :func:`~kandev_lsp.process.can_start_now`.
    """
    import warnings

    plan, popen = started.plan, started.popen
    if supervisor is not None:
        try:
            supervisor._check_open(plan.executable)
        except BaseException:
            started.discard()
            raise
    capture = OutputCapture(plan.output_limit, plan.on_output)
    loop = asyncio.get_running_loop()
    protocol = _ChildProtocol(loop, plan.captured, capture)
    waiter: asyncio.Future[None] = loop.create_future()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # get_child_watcher (3.12+), as asyncio does
        with asyncio.get_child_watcher() as watcher:
            transport = _adopted_transport(
                loop, protocol, [plan.executable, *plan.args[1:]], plan.popen_kwargs, waiter, popen
            )
            watcher.add_child_handler(transport.get_pid(), loop._child_watcher_callback, transport)  # type: ignore[attr-defined]
            try:
                await waiter
            except BaseException:
                transport.close()
                await transport._wait()  # type: ignore[attr-defined]
                raise
    return await _own(plan, transport, protocol, capture, supervisor)


def _adopted_transport(
    loop: asyncio.AbstractEventLoop,
    protocol: _ChildProtocol,
    args: list[str],
    kwargs: dict[str, Any],
    waiter: asyncio.Future[None],
    popen: object,
) -> asyncio.SubprocessTransport:
    """asyncio's Unix subprocess transport around a ``Popen`` that already runs (its ``_start``, which
    would create the ``Popen``, takes the given one instead)."""
    from asyncio import unix_events

    class AdoptedTransport(unix_events._UnixSubprocessTransport):  # type: ignore[misc,name-defined]
        def _start(self, **options: Any) -> None:
            self._proc = options["popen"]

    transport: asyncio.SubprocessTransport = AdoptedTransport(
        loop,
        protocol,
        args,
        False,
        kwargs["stdin"],
        kwargs["stdout"],
        kwargs["stderr"],
        0,
        waiter=waiter,
        popen=popen,
    )
    return transport


async def _own(
    plan: SpawnPlan,
    transport: asyncio.SubprocessTransport,
    protocol: _ChildProtocol,
    capture: OutputCapture,
    supervisor: ProcessSupervisor | None,
) -> OwnedProcess:
    process = OwnedProcess(
        argv=(plan.executable, *plan.args[1:]),
        transport=transport,
        protocol=protocol,
        capture=capture,
        backend=plan.backend,
        token=plan.token,
        stdout_mode=plan.stdout_mode,
        supervisor=supervisor,
    )
    logger.debug("started %s as pid %d", plan.executable, process.pid)
    if supervisor is not None:
        await supervisor._adopt(process)
    return process
