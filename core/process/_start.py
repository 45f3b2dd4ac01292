"""Starting a child in the task: the rules every spawn follows, and a synchronous start.

:func:`plan_spawn` applies the rules (no shell, the task's environment plus the owner marker with PATH
reduced to its absolute entries (:func:`kandev_lsp.executables.child_environment`), the workspace as
working directory, one executable lookup on the task's PATH and never inside the
workspace, a session of its own, the parent-death signal on Linux) and returns the arguments for
``Popen``; both :func:`kandev_lsp.process.spawn` (asyncio) and :func:`start_now` use it.

:func:`start_now` starts the child before any event loop exists and without importing asyncio:
``kandev-lsp run`` starts its server this way, so the server starts up while asyncio and the session
are imported (issue 7 item 25). :func:`kandev_lsp.process.adopt` later turns the result into an
:class:`~kandev_lsp.process.OwnedProcess`. This module must not import asyncio.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any, Literal

from kandev_lsp._values import dataclass
from kandev_lsp.executables import child_environment
from kandev_lsp.fileprobe import LocalFileProbe
from kandev_lsp.platform import HostPlatform
from kandev_lsp.process._backend import ProcessBackend, backend_for
from kandev_lsp.process._errors import ProcessStartError
from kandev_lsp.process._locate import locate_executable
from kandev_lsp.process._output import OutputCallback
from kandev_lsp.process._parentdeath import parent_death_hook
from kandev_lsp.process._tree import marked_environment, new_token
from kandev_lsp.taskenv import TaskEnvironment

StdoutMode = Literal["pipe", "capture", "discard"]
StderrMode = Literal["capture", "discard"]

logger = logging.getLogger("kandev_lsp.process")

#: Default cap of captured output (the installer output the task host keeps).
DEFAULT_OUTPUT_LIMIT = 1 << 20


@dataclass(frozen=True)
class SpawnPlan:
    """Everything decided before a child is started: what to run and how (the ``Popen`` arguments)."""

    args: tuple[str, ...]
    executable: str
    popen_kwargs: dict[str, Any]
    token: str
    backend: ProcessBackend
    stdout_mode: StdoutMode
    captured: frozenset[int]
    output_limit: int
    on_output: OutputCallback | None


@dataclass(frozen=True)
class StartedProcess:
    """A child :func:`start_now` started, not yet owned by an event loop (pass it to ``adopt``)."""

    plan: SpawnPlan
    popen: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.popen.pid

    def discard(self) -> None:
        """Kill the child's whole group and reap the child: for a start nobody will adopt (the caller
        is leaving before its loop could own the child). Safe to call more than once."""
        import signal

        if self.popen.returncode is None:
            with contextlib.suppress(OSError):
                os.killpg(self.popen.pid, signal.SIGKILL)  # its own group (start_new_session)
            self.popen.wait()


def plan_spawn(
    argv: Sequence[str],
    *,
    env: TaskEnvironment,
    cwd: str,
    stdin: bool = False,
    stdout: StdoutMode = "pipe",
    stderr: StderrMode = "capture",
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    on_output: OutputCallback | None = None,
    owner_tokens: Sequence[str] = (),
    check_open: Callable[[str], None] | None = None,
) -> SpawnPlan:
    """Check ``argv``, ``env`` and ``cwd`` and decide how to start the child (see
    :func:`kandev_lsp.process.spawn` for the parameters). ``check_open`` is the supervisor's check that
    it still accepts children. Raises :class:`ProcessStartError` (or ``CommandNotFoundError``)."""
    args = tuple(argv)
    if stdout not in ("pipe", "capture", "discard") or stderr not in ("capture", "discard"):
        raise ValueError(f"unknown output mode stdout={stdout!r} stderr={stderr!r}")
    if not args:
        raise ProcessStartError("", "argv is empty", "Pass the program to run and its arguments.")
    host = HostPlatform.current()
    if env.host.os != host.os:
        raise ProcessStartError(
            args[0],
            f"the task environment describes a {env.host.os} host, but this machine runs {host.os}",
            "Build the TaskEnvironment for this machine (TaskEnvironment.from_agent()).",
        )
    _check_working_directory(args[0], cwd, host)
    if check_open is not None:
        check_open(args[0])
    executable = locate_executable(args[0], env, cwd, LocalFileProbe(env.host))
    if any(not item or item != "".join(item.split()) for item in owner_tokens):
        raise ValueError(f"owner tokens must be non-empty words without blanks, got {list(owner_tokens)!r}")
    token = new_token()
    marker = " ".join([*owner_tokens, token]) if owner_tokens else token
    backend = backend_for(host)
    options = backend.spawn_options()
    merged = stdout == "capture" and stderr == "capture"
    captured = frozenset(
        fd for fd, wanted in ((1, stdout == "capture"), (2, stderr == "capture" and not merged)) if wanted
    )
    variables, dropped = child_environment(env)
    if dropped:  # the count only: a PATH names the task's folders
        logger.info(
            "%s starts with %d empty or relative PATH entr%s dropped (they would search the workspace)",
            host.pure_path(executable).name,
            dropped,
            "y" if dropped == 1 else "ies",
        )
    popen_kwargs: dict[str, Any] = {
        "stdin": subprocess.PIPE if stdin else subprocess.DEVNULL,
        "stdout": subprocess.DEVNULL if stdout == "discard" else subprocess.PIPE,
        "stderr": subprocess.STDOUT
        if merged
        else subprocess.PIPE
        if stderr == "capture"
        else subprocess.DEVNULL,
        "env": marked_environment(variables, marker, windows=host.is_windows),
        "cwd": cwd,
        "start_new_session": options.start_new_session,
        "creationflags": options.creationflags,
        "preexec_fn": None if host.is_windows else parent_death_hook(),
    }
    return SpawnPlan(
        args=args,
        executable=executable,
        popen_kwargs=popen_kwargs,
        token=token,
        backend=backend,
        stdout_mode=stdout,
        captured=captured,
        output_limit=output_limit,
        on_output=on_output,
    )


def start_now(
    argv: Sequence[str],
    *,
    env: TaskEnvironment,
    cwd: str,
    stdin: bool = False,
    stdout: StdoutMode = "pipe",
    stderr: StderrMode = "capture",
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    on_output: OutputCallback | None = None,
) -> StartedProcess:
    """Start ``argv`` now, by the same rules as :func:`kandev_lsp.process.spawn`, without an event loop.

    Hand the result to :func:`kandev_lsp.process.adopt` (inside the loop) at once: until then nobody
    reads its pipes, and it is stopped by nothing but the parent-death signal. POSIX only (see
    :func:`can_start_now`).
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
    )
    try:
        popen = subprocess.Popen(  # noqa: S603 - argv only, no shell, the one lookup in plan_spawn
            [plan.executable, *plan.args[1:]], bufsize=0, **plan.popen_kwargs
        )
    except OSError as exc:
        raise start_error(plan.executable, exc) from exc
    except ValueError as exc:  # e.g. a NUL byte in an argument or a variable
        raise ProcessStartError(
            plan.executable, str(exc), "Remove NUL characters from argv and env."
        ) from exc
    return StartedProcess(plan=plan, popen=popen)


def can_start_now() -> bool:
    """Whether :func:`start_now` and ``adopt`` work here: asyncio's Unix child watchers (3.11-3.13)."""
    return os.name == "posix" and sys.version_info < (3, 14)


def _check_working_directory(command: str, cwd: str, host: HostPlatform) -> None:
    if not host.is_absolute(cwd) or not os.path.isdir(cwd):
        raise ProcessStartError(
            command,
            f"its working directory {cwd!r} is not an existing folder given by an absolute path",
            "Pass the task's workspace folder as an absolute path.",
        )


def start_error(executable: str, exc: OSError) -> ProcessStartError:
    """A :class:`ProcessStartError` saying why ``Popen`` could not start ``executable``."""
    if exc.errno == errno.ENOEXEC:
        return ProcessStartError(
            executable,
            "it is not a program this machine can run (exec format error)",
            "Check that it was built for this OS and CPU; a script needs a #! line.",
        )
    if exc.errno == errno.ENOENT:
        return ProcessStartError(
            executable,
            "the system could not run it (no such file or directory)",
            "If it is a script, check that the interpreter on its #! line exists.",
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ProcessStartError(executable, "permission denied", "Check its permissions and mount options.")
    return ProcessStartError(executable, exc.strerror or str(exc), "")
