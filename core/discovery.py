"""Where a language server's executable may be, and whether a file there can be trusted.

Candidate generation is pure: it reads a :class:`~kandev_lsp.taskenv.TaskEnvironment` and yields paths in
order. Looking at the filesystem is the job of a :class:`FileProbe`, injected so that Windows rules
(PATHEXT, drive letters, case-insensitive paths) are tested on Linux with a table of files.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
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

    def real_path(self, path: str) -> str:
        """``path`` with every symlink resolved (a folder's true place, for the workspace rule)."""
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

    def real_path(self, path: str) -> str:
        return os.path.realpath(path)

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


# Which files kandev-lsp may run for a task -------------------------------------------------------------

#: The start of every refusal of a file inside the workspace (the resolver's trail and messages match it).
IN_WORKSPACE = "inside the task workspace"


@dataclass(frozen=True, slots=True)
class ManagedCache:
    """The task's managed cache ``<HOME>/.kandev/lsp-servers`` and whether servers may run from it.

    ``root`` is None when HOME is not absolute. ``reason`` says why an unusable cache is unusable.
    """

    root: str | None
    usable: bool
    reason: str = ""


def managed_cache(workspace: str, env: TaskEnvironment, probe: FileProbe) -> ManagedCache:
    """Whether the task's managed cache may be used, given where the workspace is.

    The cache is kandev-lsp's own folder, not repository content, but a workspace can contain it:

    * the cache lies outside the workspace (the usual case): usable;
    * HOME is the workspace or lies inside it (an editor started in ``~``, or a workspace of ``/home``):
      usable. A checkout that holds HOME already decides what ``npm`` and ``go`` install and run
      (``~/.npmrc``, ``~/.config/go/env``), so refusing the cache would protect nothing, and would refuse
      every server kandev-lsp itself installed;
    * the cache lies inside the workspace while HOME does not (the workspace is ``~/.kandev`` or below, or
      ``~/.kandev`` is a link into the workspace): refused. A checkout there could have written the
      "cache" itself.

    Paths are compared after resolving symlinks (case-insensitively on Windows).
    """
    root = env.cache_root()
    if root is None:
        return ManagedCache(
            None,
            False,
            f"the task's HOME ({env.home() or 'unset'}) is not an absolute path, so the managed cache is "
            "disabled",
        )
    if not workspace or not probe.is_within(probe.real_path(root), workspace):
        return ManagedCache(root, True)
    if probe.is_within(probe.real_path(env.home()), workspace):
        return ManagedCache(root, True)
    return ManagedCache(
        root,
        False,
        f"the managed cache {root} lies inside the task workspace {workspace} while HOME does not, so a "
        "checkout could have put it there; pass the project root (not a folder that contains the cache) "
        "as the workspace",
    )


@dataclass
class WorkspaceGate:
    """Decides whether kandev-lsp may run a file for one task: never a file inside the task workspace
    (a repository could have planted it), except in the task's managed cache when that is usable
    (:func:`managed_cache`). The cache decision is made once, and only when a file inside the workspace
    is met, so the usual resolution pays nothing for it.
    """

    workspace: str
    env: TaskEnvironment
    probe: FileProbe
    _cache: ManagedCache | None = field(default=None, init=False, repr=False)

    @property
    def cache(self) -> ManagedCache:
        if self._cache is None:
            self._cache = managed_cache(self.workspace, self.env, self.probe)
        return self._cache

    def refusal(self, real_path: str) -> str | None:
        """None when the file at ``real_path`` (already resolved) may run, else why not."""
        if not self.probe.is_within(real_path, self.workspace):
            return None
        cache = self.cache
        if cache.root is not None and self.probe.is_within(real_path, cache.root):
            if cache.usable:
                return None
            return f"{IN_WORKSPACE}; never trusted ({cache.reason})"
        return f"{IN_WORKSPACE}; never trusted"


@dataclass(frozen=True, slots=True)
class Lookup:
    """What :func:`locate` found for a command: ``path`` to run, or ``reason`` and ``advice``.

    ``not_found``: nothing usable was there (as opposed to a path that is refused or unusable).
    ``searched`` lists the paths probed; ``refused`` the files that exist but lie inside the workspace.
    """

    command: str
    path: str | None = None
    reason: str = ""
    advice: str = ""
    not_found: bool = False
    searched: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()


_MAX_LISTED = 8


def has_separator(command: str, env: TaskEnvironment) -> bool:
    """Whether ``command`` names a path rather than a bare name (``./x``, ``bin/x``, ``C:x``)."""
    if env.host.is_windows:
        return "/" in command or "\\" in command or ":" in command
    return "/" in command


def locate(command: str, env: TaskEnvironment, workspace: str, probe: FileProbe) -> Lookup:
    """The one lookup of every executable kandev-lsp starts (servers, npm, go, node, version probes).

    The rules are the resolver's: a bare name is looked up on the *task's* PATH (empty and relative entries
    skipped, PATHEXT on Windows, the execute bit on Unix); an absolute path is used as given if it is an
    executable file; a relative path with a separator is refused (it would depend on the working folder);
    and nothing inside the task ``workspace`` runs, except the task's usable managed cache
    (:class:`WorkspaceGate`).
    """
    if not command:
        return Lookup(command, reason="the command is empty", advice="Pass the program to run as argv[0].")
    gate = WorkspaceGate(workspace, env, probe)
    if env.host.is_absolute(command):
        return _check_absolute(command, gate)
    if has_separator(command, env):
        return Lookup(
            command,
            reason="it is a relative path, which would depend on the working directory",
            advice="Give an absolute path, or a bare command name to look up on the task's PATH.",
        )
    return _search_path(command, gate)


def _check_absolute(command: str, gate: WorkspaceGate) -> Lookup:
    result = gate.probe.probe(command)
    if result.status is ProbeStatus.MISSING:
        return Lookup(
            command,
            reason="no such file",
            advice="Check the path, or install the program there.",
            not_found=True,
            searched=(command,),
        )
    if result.status is not ProbeStatus.OK:
        return Lookup(
            command, reason=result.status.value, advice="Point it at an executable file (on Unix: chmod +x)."
        )
    refusal = gate.refusal(result.real_path)
    if refusal:
        return Lookup(
            command,
            reason=f"it lies inside the task workspace ({gate.workspace}); kandev-lsp never runs programs from "
            "the workspace" + refusal.removeprefix(f"{IN_WORKSPACE}; never trusted"),
            advice="Install the program outside the workspace (or let kandev-lsp install it in its cache).",
            refused=(command,),
        )
    return Lookup(command, path=command, searched=(command,))


def _search_path(command: str, gate: WorkspaceGate) -> Lookup:
    env = gate.env
    looked: list[str] = []
    notes: list[str] = []
    refused: list[str] = []
    for candidate in path_candidates(command, env):
        if candidate.skip:
            if candidate.path:  # an empty entry is not worth a note
                notes.append(f"{candidate.source} {candidate.path!r}: {candidate.skip}")
            continue
        looked.append(candidate.path)
        result = gate.probe.probe(candidate.path)
        if result.status is ProbeStatus.MISSING:
            continue
        if result.status is not ProbeStatus.OK:
            notes.append(f"{candidate.path}: {result.status.value}")
            continue
        refusal = gate.refusal(result.real_path)
        if refusal:
            refused.append(candidate.path)
            notes.append(f"{candidate.path}: {refusal.replace('never trusted', 'never run', 1)}")
            continue
        return Lookup(command, path=candidate.path, searched=tuple(looked))
    folders = list(dict.fromkeys(str(env.host.pure_path(path).parent) for path in looked))
    advice = f"Install {command} or add the folder that holds it (an absolute path) to the task's PATH."
    if refused:
        advice = (
            f"Install {command} outside the task workspace and put that folder on the task's PATH; "
            "kandev-lsp never runs programs from the workspace, since a repository could have planted them."
        )
    return Lookup(
        command,
        reason=_not_found_reason(folders, notes),
        advice=advice,
        not_found=True,
        searched=tuple(looked),
        refused=tuple(refused),
    )


def _not_found_reason(folders: list[str], notes: list[str]) -> str:
    if not folders and not notes:
        return "not found: the task's PATH is empty"
    shown = ", ".join(folders[:_MAX_LISTED]) + (" ..." if len(folders) > _MAX_LISTED else "")
    reason = f"not found on the task's PATH ({shown or 'no usable entry'})"
    if notes:
        reason += "; " + "; ".join(notes[:_MAX_LISTED])
    return reason
