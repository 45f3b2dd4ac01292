"""Owned processes: spawn a command in a task, capture what it says, stop its whole tree.

Every child runs without a shell, with exactly the task's environment and the task's workspace as its
working directory, in a process group of its own. ``argv[0]`` is an absolute path or a bare name looked up
on the *task's* PATH by the resolver's rules (absolute entries only, PATHEXT on Windows, execute bit on
Unix, never a file inside the workspace).

Stopping follows the task-host contract: interrupt (SIGINT to the group; CTRL_BREAK on Windows), wait the
grace (2 s), kill the whole tree, then confirm nothing survives (bounded, 5 s; survivors are logged and
listed in :attr:`OwnedProcess.survivors`).

**The owner marker.** To find descendants that left the group, the session and the parent chain (a
daemon that double-forked and called ``setsid``), each child's environment gets one extra variable,
``KANDEV_LSP_OWNER``, holding a random token unique to that child; descendants inherit it. At stop time,
and only then, the process table is scanned, and the targets are the union of the process group, the
child's descendants by parent link, and every process whose environment carries the token. If the task
environment already holds ``KANDEV_LSP_OWNER`` (kandev-lsp running under kandev-lsp), the new token is
appended after a space, so each owner finds its own. A process that scrubs its environment *and* leaves
the group *and* is orphaned before the stop cannot be found; nothing else is missed.

**When the owner itself dies.** On Linux every child is started with a parent-death signal (SIGKILL),
so killing the owner with SIGKILL, or killing the process group it runs in, takes its children with it.
Their own descendants are re-parented instead; a caller that records extra owner tokens passed to
:func:`spawn` can sweep them up later with :func:`reap_marked` (the install manager does, under its
lock, before it removes a dead install's staging folder).

Captured output keeps at most ``output_limit`` bytes (1 MiB by default): the first quarter and the last
three quarters, with a line saying how many bytes were left out. The pipes are always drained.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kandev_lsp.cancel import CancelToken
    from kandev_lsp.process._backend import (
        PosixBackend,
        ProcessBackend,
        SpawnOptions,
        WindowsBackend,
        backend_for,
        interrupt_signal,
        spawn_options,
        taskkill_argv,
        windows_system_root,
    )
    from kandev_lsp.process._errors import CommandNotFoundError, ProcessStartError, ProcessTimeout
    from kandev_lsp.process._locate import locate_executable
    from kandev_lsp.process._orphans import reap_marked
    from kandev_lsp.process._owned import CONFIRM_TIMEOUT, DEFAULT_GRACE, OwnedProcess, adopt, spawn
    from kandev_lsp.process._run import RunResult, run
    from kandev_lsp.process._start import (
        DEFAULT_OUTPUT_LIMIT,
        StartedProcess,
        StderrMode,
        StdoutMode,
        can_start_now,
        start_now,
    )
    from kandev_lsp.process._supervisor import ProcessSupervisor
    from kandev_lsp.process._tree import OWNER_VARIABLE, marked_environment, new_token, owner_tokens

#: Where each name lives. Imported at first use, so that :func:`start_now` (``run``'s server start,
#: before any event loop) does not import asyncio with the rest of this package.
_HOMES = {
    "CancelToken": "kandev_lsp.cancel",
    **dict.fromkeys(
        (
            "PosixBackend",
            "ProcessBackend",
            "SpawnOptions",
            "WindowsBackend",
            "backend_for",
            "interrupt_signal",
            "spawn_options",
            "taskkill_argv",
            "windows_system_root",
        ),
        "kandev_lsp.process._backend",
    ),
    **dict.fromkeys(
        ("CommandNotFoundError", "ProcessStartError", "ProcessTimeout"), "kandev_lsp.process._errors"
    ),
    "locate_executable": "kandev_lsp.process._locate",
    "reap_marked": "kandev_lsp.process._orphans",
    **dict.fromkeys(
        ("CONFIRM_TIMEOUT", "DEFAULT_GRACE", "OwnedProcess", "adopt", "spawn"), "kandev_lsp.process._owned"
    ),
    **dict.fromkeys(("RunResult", "run"), "kandev_lsp.process._run"),
    **dict.fromkeys(
        ("DEFAULT_OUTPUT_LIMIT", "StartedProcess", "StderrMode", "StdoutMode", "can_start_now", "start_now"),
        "kandev_lsp.process._start",
    ),
    "ProcessSupervisor": "kandev_lsp.process._supervisor",
    **dict.fromkeys(
        ("OWNER_VARIABLE", "marked_environment", "new_token", "owner_tokens"), "kandev_lsp.process._tree"
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


__all__ = [
    "CONFIRM_TIMEOUT",
    "DEFAULT_GRACE",
    "DEFAULT_OUTPUT_LIMIT",
    "OWNER_VARIABLE",
    "CancelToken",
    "CommandNotFoundError",
    "OwnedProcess",
    "PosixBackend",
    "ProcessBackend",
    "ProcessStartError",
    "ProcessSupervisor",
    "ProcessTimeout",
    "RunResult",
    "SpawnOptions",
    "StartedProcess",
    "StderrMode",
    "StdoutMode",
    "WindowsBackend",
    "adopt",
    "backend_for",
    "can_start_now",
    "interrupt_signal",
    "locate_executable",
    "marked_environment",
    "new_token",
    "owner_tokens",
    "reap_marked",
    "run",
    "spawn",
    "spawn_options",
    "start_now",
    "taskkill_argv",
    "windows_system_root",
]
