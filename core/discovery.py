"""Where a language server's executable may be, and whether a file there can be trusted.

Candidate generation is pure: it reads a :class:`~kandev_lsp.taskenv.TaskEnvironment` and yields paths in
order. Looking at the filesystem is the job of a :class:`FileProbe`, injected so that Windows rules
(PATHEXT, drive letters, case-insensitive paths) are tested on Linux with a table of files.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from kandev_lsp.language import GoRecipe, LanguageSpec
from kandev_lsp.platform import HostPlatform
from kandev_lsp.taskenv import TaskEnvironment


@dataclass(frozen=True, slots=True)
class Candidate:
    """A place an executable may be.

    ``source`` names where the candidate came from (``PATH[2]``, ``managed cache``, ``GOBIN``, or a
    plugin's own label). ``skip`` is set when the place was considered but not even looked at (an empty
    or relative PATH entry, a disabled cache), so ``--explain`` can say why.
    """

    path: str
    source: str
    skip: str | None = None


class ProbeStatus(Enum):
    OK = "ok"
    MISSING = "missing"
    NOT_A_FILE = "not a regular file"
    NOT_EXECUTABLE = "no execute permission"


@dataclass(frozen=True, slots=True)
class ProbeResult:
    status: ProbeStatus
    real_path: str = ""


class FileProbe(Protocol):
    """Looks at one path on the host's filesystem."""

    def probe(self, path: str) -> ProbeResult: ...

    def is_within(self, path: str, folder: str) -> bool:
        """Whether ``path`` (already resolved) lies inside ``folder`` (resolved here)."""
        ...


_PROC_FD = "/proc/self/fd"
_O_PATH = getattr(os, "O_PATH", 0)


class LocalFileProbe:
    """The real filesystem of this machine. Symlinks are resolved, so a link outside the workspace
    pointing into it is still recognised as inside.

    On Linux a candidate is opened with ``O_PATH`` and its real path read back from ``/proc/self/fd``:
    one kernel walk instead of :func:`os.path.realpath`'s lstat per component (12 us against 68 us for a
    server in the managed cache, whose path crosses two symlinks), and no window between the stat and
    the path resolution.
    """

    def __init__(self, host: HostPlatform) -> None:
        self._windows = host.is_windows
        self._fd_paths = bool(_O_PATH) and os.path.isdir(_PROC_FD)

    def probe(self, path: str) -> ProbeResult:
        if self._fd_paths:
            return self._probe_by_descriptor(path)
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            return ProbeResult(ProbeStatus.MISSING)
        status = self._status(path, info)
        return ProbeResult(status, os.path.realpath(path) if status is ProbeStatus.OK else "")

    def _probe_by_descriptor(self, path: str) -> ProbeResult:
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except (OSError, ValueError):
            return ProbeResult(ProbeStatus.MISSING)
        try:
            status = self._status(path, os.fstat(fd))
            real = os.readlink(f"{_PROC_FD}/{fd}") if status is ProbeStatus.OK else ""
        finally:
            os.close(fd)
        return ProbeResult(status, real)

    def _status(self, path: str, info: os.stat_result) -> ProbeStatus:
        if not stat.S_ISREG(info.st_mode):
            return ProbeStatus.NOT_A_FILE
        if not self._windows and not (info.st_mode & 0o111 and os.access(path, os.X_OK)):
            return ProbeStatus.NOT_EXECUTABLE
        return ProbeStatus.OK

    def is_within(self, path: str, folder: str) -> bool:
        if not folder:
            return False
        root = os.path.realpath(folder)
        if self._windows:
            path, root = os.path.normcase(path), os.path.normcase(root)
        return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def executable_names(command: str, env: TaskEnvironment) -> tuple[str, ...]:
    """File names that run ``command``: on Windows, PATHEXT applies to names without an extension."""
    if env.host.is_windows and "." not in command:
        return tuple(command + ext.lower() for ext in env.pathext())
    return (command,)


def in_folder(folder: str, command: str, env: TaskEnvironment, source: str) -> Iterator[Candidate]:
    """Candidates for ``command`` directly inside ``folder``."""
    join = env.host.join
    for name in executable_names(command, env):
        yield Candidate(join(folder, name), source)


def _expand(folders: Iterable[tuple[str, str]], command: str, env: TaskEnvironment) -> Iterator[Candidate]:
    """Candidates in each ``(source, folder)``; empty and relative folders become skipped candidates."""
    for source, folder in folders:
        if not folder:
            yield Candidate("", source, skip="empty entry ignored")
        elif not env.host.is_absolute(folder):
            yield Candidate(folder, source, skip="relative entry ignored")
        else:
            yield from in_folder(folder, command, env, source)


def path_candidates(command: str, env: TaskEnvironment) -> Iterator[Candidate]:
    """The task's PATH, in order; empty and relative entries are skipped."""
    entries = [(f"PATH[{index}]", entry) for index, entry in enumerate(env.path_entries())]
    return _expand(entries, command, env)


def cache_candidates(language: LanguageSpec, env: TaskEnvironment) -> Iterator[Candidate]:
    """The managed cache ``<HOME>/.kandev/lsp-servers``.

    kandev-lsp's own layout is ``<cache>/<language>/current/{node_modules/.bin,bin}/<command>``. The flat
    layout of earlier task hosts (``<cache>/node_modules/.bin/<command>``, ``<cache>/<command>``) is
    searched after it so servers they installed keep working.
    """
    root = env.cache_root()
    if root is None:
        yield Candidate(
            "", "managed cache", skip="HOME is not an absolute path; the managed cache is disabled"
        )
        return
    join = env.host.join
    current = join(root, language.id, "current")
    yield from in_folder(join(current, "node_modules", ".bin"), language.command, env, "managed cache")
    yield from in_folder(join(current, "bin"), language.command, env, "managed cache")
    yield from in_folder(join(root, "node_modules", ".bin"), language.command, env, "managed cache (shared)")
    yield from in_folder(root, language.command, env, "managed cache (shared)")


def go_bin_folders(env: TaskEnvironment) -> list[tuple[str, str]]:
    """Where ``go install`` puts binaries for this task: GOBIN, each GOPATH entry's bin, ~/go/bin."""
    separator = ";" if env.host.is_windows else ":"
    folders: list[tuple[str, str]] = []
    if "GOBIN" in env:
        folders.append(("GOBIN", env.value("GOBIN")))
    gopath = env.value("GOPATH")
    if gopath:
        for index, entry in enumerate(gopath.split(separator)):
            if entry and env.host.is_absolute(entry):
                entry = env.host.join(entry, "bin")
            folders.append((f"GOPATH[{index}]/bin", entry))
    for variable in ("HOME", "USERPROFILE"):
        home = env.value(variable)
        if home:
            joined = env.host.join(home, "go", "bin") if env.host.is_absolute(home) else home
            folders.append((f"${variable}/go/bin", joined))
    return folders


def toolchain_candidates(language: LanguageSpec, env: TaskEnvironment) -> Iterator[Candidate]:
    """Folders of the toolchain that installs the language's server (Go: the ``go install`` targets)."""
    if isinstance(language.install, GoRecipe):
        yield from _expand(go_bin_folders(env), language.command, env)


def default_candidates(language: LanguageSpec, env: TaskEnvironment) -> Iterator[Candidate]:
    """The core's discovery order: task PATH, managed cache, toolchain folders."""
    yield from path_candidates(language.command, env)
    yield from cache_candidates(language, env)
    yield from toolchain_candidates(language, env)
