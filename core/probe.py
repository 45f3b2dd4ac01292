"""Short, bounded runs of a candidate executable (``--version``), for checks that a file cannot answer.

Used sparingly: only for proxy launchers such as rustup (whose ``rust-analyzer`` link exists even when
the component is not installed) and by ``doctor`` to report versions.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Final

from kandev_lsp._values import dataclass
from kandev_lsp.executables import child_environment
from kandev_lsp.platform import HostPlatform
from kandev_lsp.taskenv import TaskEnvironment

if TYPE_CHECKING:
    import subprocess

PROXY_CHECK_TIMEOUT = 5.0
_OUTPUT_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class BriefRun:
    ok: bool
    output: str
    summary: str


def proxy_launcher_of(path: str, launchers: tuple[str, ...], host: HostPlatform) -> str | None:
    """The launcher ``path`` stands in for, if it is one of ``launchers``; None for a file of its own.

    rustup installs its proxies (``~/.cargo/bin/rust-analyzer``) as hard links to ``rustup``, and only
    falls back to a symlink (on Windows, to a copy). So the proxy is recognised by identity, not by name:
    ``path`` resolves through symlinks to a file named like a launcher, or it *is* the launcher beside it
    (same device and inode), or a byte-for-byte copy of it. The launcher is looked for in the candidate's
    folder and in the folder its symlinks lead to.
    """
    real = os.path.realpath(path)
    stem = _stem(real, host)
    if stem in launchers:
        return stem
    try:
        info = os.stat(real)
    except (OSError, ValueError):
        return None
    folders = dict.fromkeys((os.path.dirname(path), os.path.dirname(real)))
    for launcher in launchers:
        for folder in folders:
            for name in _launcher_names(launcher, host):
                beside = os.path.join(folder, name)
                if _same_file(real, info, beside):
                    return launcher
    return None


def _stem(path: str, host: HostPlatform) -> str:
    name = host.pure_path(path).name
    return name.lower().removesuffix(".exe") if host.is_windows else name


def _launcher_names(launcher: str, host: HostPlatform) -> tuple[str, ...]:
    return (launcher + ".exe", launcher) if host.is_windows else (launcher,)


_CHUNK = 1 << 20


def _same_file(path: str, info: os.stat_result, other: str) -> bool:
    """Whether ``other`` is the file at ``path`` (a hard link: same device and inode) or an identical copy.

    Copies are compared only when the sizes match, chunk by chunk, stopping at the first difference.
    """
    try:
        other_info = os.stat(other)
    except (OSError, ValueError):
        return False
    if (other_info.st_dev, other_info.st_ino) == (info.st_dev, info.st_ino):
        return True
    if not stat.S_ISREG(other_info.st_mode) or other_info.st_size != info.st_size:
        return False
    try:
        with open(path, "rb") as first, open(other, "rb") as second:
            while True:
                left, right = first.read(_CHUNK), second.read(_CHUNK)
                if left != right:
                    return False
                if not left:
                    return True
    except OSError:
        return False


#: Where brief runs happen: the file system's root (no project settings above it).
NEUTRAL_FOLDER: Final = os.path.abspath(os.sep)


def run_briefly(argv: list[str], env: Mapping[str, str], *, timeout: float) -> BriefRun:
    """Run ``argv`` (never through a shell) with no stdin, capturing a little output.

    ``argv[0]`` must be an absolute path that the one lookup (:func:`kandev_lsp.executables.locate`) or the
    resolver chose: a bare name would be searched on a PATH here, outside the workspace rule. The child's
    environment follows the rule of every spawn (:func:`kandev_lsp.executables.child_environment`: no empty
    or relative PATH entry, which would search this process's working folder, often the workspace). It
    runs in the file system's root, not in this process's working folder: toolchain proxies read their
    settings from the folders above it (rustup's ``rust-toolchain.toml`` can name a toolchain ``path`` to
    run, go's ``go.mod`` a ``toolchain`` to fetch), and kandev-lsp is often started in the workspace.

    The run is owned like every child (a session of its own, the parent-death signal on Linux): it ends
    when the child exits (or at ``timeout``), and then whatever it left in its process group is killed, so
    a wrapper script's background child neither outlives the check nor holds the pipes open until the
    timeout. Output beyond ``_OUTPUT_LIMIT`` bytes per stream is read and dropped, never kept: a program
    that floods its output cannot fill memory in the few seconds it is given.
    """
    if not argv or not os.path.isabs(argv[0]):
        return BriefRun(
            False, "", f"not run: {argv[0] if argv else '(empty argv)'!r} is not an absolute path"
        )
    import subprocess  # here, not at the top: every resolve imports this module, few run anything

    from kandev_lsp.process._parentdeath import parent_death_hook

    posix = os.name == "posix"
    try:
        child = subprocess.Popen(  # noqa: S603 - argv from the resolver, absolute path, no shell
            argv,
            env=child_environment(
                env if isinstance(env, TaskEnvironment) else TaskEnvironment.from_mapping(env)
            )[0],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=NEUTRAL_FOLDER,
            start_new_session=posix,
            preexec_fn=parent_death_hook(),  # None where there is none
        )
    except OSError as exc:
        return BriefRun(False, "", f"cannot execute: {exc.strerror}")
    assert child.stdout is not None and child.stderr is not None
    streams = [_Head(child.stdout), _Head(child.stderr)]
    try:
        answered = _exited_within(child, timeout, streams[0])
    finally:
        _end(child)
        stdout, stderr = (stream.kept() for stream in streams)
    if not answered:
        asked = f" to {' '.join(argv[1:])}" if argv[1:] else ""
        return BriefRun(False, "", f"no answer{asked} within {timeout:g} s")
    output = (stdout + stderr)[:_OUTPUT_LIMIT].decode("utf-8", "replace").strip()
    first_line = output.splitlines()[0] if output else ""
    if child.returncode != 0:
        return BriefRun(False, output, f"exit status {child.returncode}: {first_line}".rstrip(": "))
    return BriefRun(True, output, first_line)


class _Head:
    """Drains one of a brief run's pipes on a thread, keeping its first ``_OUTPUT_LIMIT`` bytes."""

    def __init__(self, pipe: IO[bytes]) -> None:
        import threading

        self._pipe = pipe
        self._kept = bytearray()
        self._thread = threading.Thread(target=self._drain, name="kandev-lsp brief run", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        with contextlib.suppress(OSError, ValueError), self._pipe:
            while chunk := self._pipe.read1(1 << 16):  # type: ignore[attr-defined]
                self._kept += chunk[: max(0, _OUTPUT_LIMIT - len(self._kept))]

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the pipe to end; whether it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def kept(self) -> bytes:
        """What was kept, once the pipe ended (its writers are gone); a writer that escaped the process
        group may hold it open, so the wait is bounded."""
        self._thread.join(_DRAIN_TIMEOUT)
        return bytes(self._kept)


#: How long a brief run's pipes may stay open after its process group was killed.
_DRAIN_TIMEOUT = 1.0


def _exited_within(child: subprocess.Popen[bytes], timeout: float, output: _Head) -> bool:
    """Whether ``child`` exited within ``timeout`` seconds. On POSIX it is left unreaped (a zombie), so its
    pid, which is its process group's id, cannot be reused before :func:`_end` kills the group.

    Between checks it waits on ``output`` (its stdout) ending, which usually comes with the exit, so the
    answer is taken at once rather than at the next tick of a poll. Without ``os.waitid`` (Windows, and
    macOS before Python 3.13) the child is reaped by ``wait``, and :func:`_end` kills its group right after.
    """
    if not hasattr(os, "waitid"):
        import subprocess

        try:
            child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    import time

    deadline = time.monotonic() + timeout
    pause, after_output = 0.001, 0.0002
    while os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if not output.wait(min(pause, left)):  # still open: that wait was the pause
            pause = min(pause * 2, 0.02)
            continue
        # Ended: the exit is usually a moment away; a child that closed its stdout and runs on is
        # polled less and less often, never in a busy loop.
        time.sleep(min(after_output, left))
        after_output = min(after_output * 2, 0.02)
    return True


def _end(child: subprocess.Popen[bytes]) -> None:
    """Kill what is left of a brief run, its process group on POSIX, and reap the child."""
    import signal

    if os.name == "posix":
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        child.kill()
    child.wait()
