"""Which file runs a command for a task, and whether kandev-lsp may run it: the one lookup.

Every executable kandev-lsp starts (servers, ``npm``, ``go``, ``node``, version probes, rustup proxy
checks) is found by :func:`locate` or, for servers, by the resolver walking :class:`Candidate` values with
the same :class:`WorkspaceGate`. The rules: the *task's* PATH (empty and relative entries skipped,
PATHEXT on Windows, the execute bit on Unix), absolute paths only as given, relative paths with a separator
never, and nothing inside the task workspace (the managed cache is usable only outside it:
:func:`managed_cache`).

A ground-floor module: it depends on the task environment and the file probe only, never on languages or
plugins, so the process layer and the installers use it without importing the resolver's rules
(:mod:`kandev_lsp.discovery`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kandev_lsp._values import dataclass, field
from kandev_lsp.fileprobe import FileProbe, ProbeStatus
from kandev_lsp.platform import HostPlatform
from kandev_lsp.taskenv import TaskEnvironment, without_own_variables

__all__ = [
    "IN_WORKSPACE",
    "NO_CURRENT_DIRECTORY",
    "Candidate",
    "ChildSearchPath",
    "Lookup",
    "ManagedCache",
    "WorkspaceGate",
    "child_environment",
    "child_search_path",
    "executable_names",
    "expand_folders",
    "has_separator",
    "in_folder",
    "locate",
    "managed_cache",
    "path_candidates",
    "tool_environment",
]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A place an executable may be.

    ``source`` names where the candidate came from (``PATH[2]``, ``managed cache``, ``GOBIN``, or a
    plugin's own label). ``skip`` is set when the place was considered but not even looked at (an empty
    or relative PATH entry, a disabled cache), so ``--explain`` can say why. ``npm_launcher`` marks an npm
    ``node_modules/.bin`` launcher in the managed cache: kandev-lsp's own install, started as
    ``node <script>`` (:mod:`kandev_lsp.launchers`), never through its ``#!/usr/bin/env node``.
    """

    path: str
    source: str
    skip: str | None = None
    npm_launcher: bool = False

    def __init__(self, path: str, source: str, skip: str | None = None, npm_launcher: bool = False) -> None:
        # Written out: one per candidate, and the generic one of kandev_lsp._values costs more.
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "skip", skip)
        object.__setattr__(self, "npm_launcher", npm_launcher)


def executable_names(command: str, env: TaskEnvironment) -> tuple[str, ...]:
    """File names that run ``command``: on Windows, PATHEXT applies to names without an extension."""
    if env.host.is_windows and "." not in command:
        return tuple(command + ext.lower() for ext in env.pathext())
    return (command,)


def in_folder(
    folder: str, command: str, env: TaskEnvironment, source: str, *, npm_launcher: bool = False
) -> Iterator[Candidate]:
    """Candidates for ``command`` directly inside ``folder``."""
    join = env.host.join
    for name in executable_names(command, env):
        yield Candidate(join(folder, name), source, npm_launcher=npm_launcher)


def expand_folders(
    folders: Iterable[tuple[str, str]], command: str, env: TaskEnvironment
) -> Iterator[Candidate]:
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
    return expand_folders(entries, command, env)


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

    The cache is kandev-lsp's own folder, but nothing inside the task workspace is trusted, the cache
    included (security review finding 6):

    * the cache lies outside the workspace (the usual case): usable;
    * HOME is the workspace or lies inside it (``--env HOME=<ws>/.home``, a container whose HOME is the
      checkout, an editor whose project root is ``~``): refused. The checkout can write HOME, so it can ship
      ``.kandev/lsp-servers/<lang>/current/bin/<server>`` itself. This was once allowed on the grounds that
      such a checkout already controls ``~/.npmrc`` and go's env file; but installs are refused here too
      (nothing kandev-lsp installs would be trusted), and a server found elsewhere (pyright from PATH) does
      not run what HOME names, so refusing the cache does protect;
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
        return ManagedCache(
            root,
            False,
            f"HOME ({env.home()}) is inside the workspace ({workspace}), so a checkout could have put "
            "servers in its managed cache; set HOME to a folder outside it, or pass the project root (not a "
            "folder that holds HOME) as the workspace",
        )
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
    (a repository could have planted it). A file in the task's managed cache inside the workspace is
    refused with the cache's own reason (:func:`managed_cache`: the cache is usable only outside the
    workspace), so the report says what to change. The cache decision is made once, and only when a file
    inside the workspace is met, so the usual resolution pays nothing for it.
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
        cache = self.cache  # a usable cache lies outside the workspace: only its reason matters here
        if not cache.usable and cache.root is not None and self.probe.is_within(real_path, cache.root):
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
    and nothing inside the task ``workspace`` runs, the managed cache included (:class:`WorkspaceGate`).
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


def tool_environment(env: TaskEnvironment, workspace: str, probe: FileProbe) -> TaskEnvironment:
    """The environment for kandev-lsp's own tools (installers, version probes): the task's, with PATH
    reduced to the entries a tool may search.

    :func:`locate` keeps kandev-lsp from *starting* a planted ``npm``, but ``npm`` itself starts with
    ``#!/usr/bin/env node``, so a ``node`` planted in a PATH entry inside the workspace would still run.
    Empty, relative and in-workspace entries are dropped. A server is
    not started with this environment: it is the task's server, and its interpreter lookups (``node``,
    a project's ``.venv/bin/python``) belong to the task.
    """
    entries = env.path_entries()
    gate = WorkspaceGate(workspace, env, probe)
    kept = [
        entry
        for entry in entries
        if entry and env.host.is_absolute(entry) and gate.refusal(probe.real_path(entry)) is None
    ]
    if kept == entries:
        return env
    separator = ";" if env.host.is_windows else ":"
    return env.with_overrides({"PATH": separator.join(kept)})


#: On Windows, ``CreateProcess`` and ``cmd.exe`` look in the current folder before PATH for a bare name
#: unless this variable is set (to anything): a child's current folder is the workspace.
NO_CURRENT_DIRECTORY = "NoDefaultCurrentDirectoryInExePath"


@dataclass(frozen=True, slots=True)
class ChildSearchPath:
    """The PATH a child of the task searches: ``value`` (None: leave PATH unset) and how many of the task's
    entries were ``dropped``."""

    value: str | None
    dropped: int


def child_search_path(path: str, host: HostPlatform) -> ChildSearchPath:
    """The task's PATH ``path`` with its empty and relative entries dropped.

    A child runs with the workspace as its working folder, so an empty entry (``a::b``, a leading or
    trailing separator) or a relative one (``.``, ``bin``; on Windows also ``\\x`` and ``C:x``) means a
    folder of the workspace: ``#!/usr/bin/env node`` in an npm-installed server would run a ``node`` the
    repository planted. Absolute entries are kept as given, in order, even inside the workspace: a server's
    interpreter lookups (``node``, a project's ``.venv/bin/python``) belong to the task. On Windows an entry
    in double quotes counts by what is inside them. When no entry is left the value is None (PATH unset):
    an empty PATH would mean the current folder again, while an unset one means the system's own default.
    """
    separator = ";" if host.is_windows else ":"
    entries = path.split(separator)
    kept = [entry for entry in entries if _absolute_entry(entry, host)]
    if len(kept) == len(entries):
        return ChildSearchPath(path, 0)
    return ChildSearchPath(separator.join(kept) if kept else None, len(entries) - len(kept))


def _absolute_entry(entry: str, host: HostPlatform) -> bool:
    if host.is_windows and len(entry) > 2 and entry[0] == entry[-1] == '"':
        entry = entry[1:-1]
    return host.is_absolute(entry)


def child_environment(env: TaskEnvironment) -> tuple[dict[str, str], int]:
    """The variables every child of the task starts with, and how many PATH entries were dropped.

    The task's environment, except that PATH keeps only absolute entries (:func:`child_search_path`),
    kandev-lsp's own variables are left out (:func:`~kandev_lsp.taskenv.without_own_variables`: a task built
    by ``from_agent`` has none, but one built from a mapping may) and, on Windows,
    :data:`NO_CURRENT_DIRECTORY` is set so the current folder (the workspace) is not searched first.
    Applied to every process kandev-lsp starts (servers and tools), in :func:`kandev_lsp.process.spawn`'s
    one planning step.
    """
    windows = env.host.is_windows
    variables = without_own_variables(env.variables)
    dropped = 0
    for key in [key for key in variables if (key.upper() if windows else key) == "PATH"]:
        searched = child_search_path(variables[key], env.host)
        dropped += searched.dropped
        if searched.value is None:
            del variables[key]
        else:
            variables[key] = searched.value
    if windows and not any(key.upper() == NO_CURRENT_DIRECTORY.upper() for key in variables):
        variables[NO_CURRENT_DIRECTORY] = "1"
    return variables, dropped
