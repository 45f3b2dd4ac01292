"""How one operating system starts a child in its own group, interrupts it and kills its tree.

The contract is the same everywhere (interrupt, wait the grace, kill the whole tree, confirm it is gone);
the means differ:

* **POSIX**: the child leads a new session (``start_new_session``), so its process group id is its pid.
  Interrupt is ``SIGINT`` to the group, kill is ``SIGKILL`` to the group, and escaped descendants are
  signalled one by one.
* **Windows**: the child leads a new process group (``CREATE_NEW_PROCESS_GROUP``). Interrupt is
  ``CTRL_BREAK_EVENT`` to that group (the only console event a group can be sent); kill is
  ``taskkill /T /F /PID <pid>`` (the tree by parent links; run from ``%SystemRoot%\\System32`` by absolute
  path, never looked up on a PATH), and escaped descendants are terminated one by one.

The decisions (flags, signal numbers, the ``taskkill`` argv) are pure functions of a
:class:`~kandev_lsp.platform.HostPlatform`, so the Windows ones are tested on Linux.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import PureWindowsPath
from typing import TYPE_CHECKING, Protocol

from kandev_lsp._lazy import LazyModule
from kandev_lsp._values import dataclass
from kandev_lsp.platform import HostPlatform
from kandev_lsp.process._tree import ProcInfo, handles, scan, scan_psutil

if TYPE_CHECKING:
    import psutil
else:
    psutil = LazyModule("psutil")  # imported at first use: starting a server never needs it

logger = logging.getLogger("kandev_lsp.process")

#: ``CREATE_NEW_PROCESS_GROUP`` from the Windows API (also ``subprocess.CREATE_NEW_PROCESS_GROUP`` there).
CREATE_NEW_PROCESS_GROUP = 0x00000200
#: ``CTRL_BREAK_EVENT`` from the Windows API (also ``signal.CTRL_BREAK_EVENT`` there).
CTRL_BREAK_EVENT = 1
#: How long ``taskkill`` may take before we stop waiting for it.
TASKKILL_TIMEOUT = 10.0
_DEFAULT_SYSTEM_ROOT = "C:\\Windows"


@dataclass(frozen=True, slots=True)
class SpawnOptions:
    """The ``subprocess`` keywords that put a child in its own group."""

    start_new_session: bool
    creationflags: int


def spawn_options(host: HostPlatform) -> SpawnOptions:
    """A new session on POSIX; a new process group on Windows (so CTRL_BREAK reaches only the child)."""
    if host.is_windows:
        return SpawnOptions(start_new_session=False, creationflags=CREATE_NEW_PROCESS_GROUP)
    return SpawnOptions(start_new_session=True, creationflags=0)


def interrupt_signal(host: HostPlatform) -> int:
    """What "interrupt" sends: ``SIGINT`` to the group on POSIX, ``CTRL_BREAK_EVENT`` on Windows."""
    return CTRL_BREAK_EVENT if host.is_windows else int(signal.SIGINT)


def windows_system_root(agent_environ: Mapping[str, str]) -> str:
    """``%SystemRoot%`` of the agent (not the task: a task must not choose which ``taskkill`` runs)."""
    for key, value in agent_environ.items():
        if key.upper() == "SYSTEMROOT" and HostPlatform("windows", "other").is_absolute(value):
            return value
    return _DEFAULT_SYSTEM_ROOT


def taskkill_argv(pid: int, system_root: str) -> tuple[str, ...]:
    """The argv that kills the tree under ``pid`` by force on Windows."""
    executable = PureWindowsPath(system_root, "System32", "taskkill.exe")
    return (str(executable), "/T", "/F", "/PID", str(pid))


class ProcessBackend(Protocol):
    """The operating-system half of owning a process tree."""

    host: HostPlatform

    def spawn_options(self) -> SpawnOptions: ...

    def group_of(self, leader_pid: int) -> int | None:
        """The process group id shared by the leader's non-escaped descendants, if the OS has one."""
        ...

    def scan(self) -> list[ProcInfo]: ...

    def interrupt(self, leader_pid: int | None, members: Sequence[psutil.Process]) -> None:
        """Ask politely: the leader's group (when ``leader_pid`` is given) and each of ``members``."""
        ...

    async def kill(self, leader_pid: int | None, members: Sequence[psutil.Process]) -> None:
        """Kill by force: the leader's group or tree (when given) and each of ``members``."""
        ...


class PosixBackend:
    """Signals and process groups."""

    def __init__(self, host: HostPlatform) -> None:
        self.host = host

    def spawn_options(self) -> SpawnOptions:
        return spawn_options(self.host)

    def group_of(self, leader_pid: int) -> int | None:
        return leader_pid  # a session leader's group id is its pid

    def scan(self) -> list[ProcInfo]:
        return scan()

    def interrupt(self, leader_pid: int | None, members: Sequence[psutil.Process]) -> None:
        if leader_pid is not None:
            _killpg(leader_pid, signal.SIGINT)
            if not _same_group(leader_pid, leader_pid):  # it moved itself to another group
                _kill(leader_pid, signal.SIGINT)
        for member in members:
            if leader_pid is not None and _same_group(member.pid, leader_pid):
                continue  # already interrupted through the group; a second SIGINT can cut its cleanup short
            _send(member, signal.SIGINT)

    async def kill(self, leader_pid: int | None, members: Sequence[psutil.Process]) -> None:
        if leader_pid is not None:
            _killpg(leader_pid, signal.SIGKILL)
            _kill(leader_pid, signal.SIGKILL)  # in case it moved itself to another group
        for member in members:
            _send(member, signal.SIGKILL)


class WindowsBackend:
    """Process groups, console control events and ``taskkill``."""

    def __init__(self, host: HostPlatform, agent_environ: Mapping[str, str] | None = None) -> None:
        self.host = host
        self.system_root = windows_system_root(os.environ if agent_environ is None else agent_environ)

    def spawn_options(self) -> SpawnOptions:
        return spawn_options(self.host)

    def group_of(self, leader_pid: int) -> int | None:
        return None  # console groups cannot be listed; the tree and the marker find the members

    def scan(self) -> list[ProcInfo]:
        return scan_psutil()

    def interrupt(self, leader_pid: int | None, members: Sequence[psutil.Process]) -> None:
        # Console events go to a whole group only; escaped members get no polite request.
        if leader_pid is not None:
            with contextlib.suppress(OSError):
                os.kill(leader_pid, interrupt_signal(self.host))

    async def kill(self, leader_pid: int | None, members: Sequence[psutil.Process]) -> None:
        if leader_pid is not None:
            import asyncio  # here: spawning (before ``run`` starts a loop) must not import asyncio

            await asyncio.to_thread(self._taskkill, leader_pid)
            for leader in handles([leader_pid]).values():  # if taskkill could not
                _send(leader, None)
        for member in members:
            _send(member, None)

    def _taskkill(self, pid: int) -> None:
        argv = taskkill_argv(pid, self.system_root)
        try:
            subprocess.run(  # noqa: S603 - absolute path under %SystemRoot%, no shell
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=TASKKILL_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            logger.warning("taskkill of process tree %d failed: %s", pid, exc)


def backend_for(host: HostPlatform) -> ProcessBackend:
    """The backend for ``host``."""
    return WindowsBackend(host) if host.is_windows else PosixBackend(host)


def _killpg(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # empty, or what is left is not ours
        os.killpg(group, sig)


def _kill(pid: int, sig: signal.Signals) -> None:
    # Only for the unreaped child: until it is reaped, its pid cannot belong to anyone else.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _same_group(pid: int, group: int) -> bool:
    try:
        return os.getpgid(pid) == group
    except OSError:
        return False


def _send(process: psutil.Process, sig: signal.Signals | None) -> None:
    """Signal through a psutil handle (which refuses a pid reused by another process); None kills."""
    try:
        if sig is None:
            process.kill()
        else:
            process.send_signal(sig)
    except psutil.Error:
        pass
