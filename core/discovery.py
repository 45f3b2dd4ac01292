"""The resolver's rules: where a language server's executable may be, in order.

Candidate generation is pure: it reads a :class:`~kandev_lsp.taskenv.TaskEnvironment` and a
:class:`~kandev_lsp.language.LanguageSpec` and yields paths in order (the task's PATH, the managed cache,
the toolchain's install folders). Looking at files is :mod:`kandev_lsp.fileprobe`'s job and deciding what
may run is :mod:`kandev_lsp.executables`'s; both are re-exported here for plugins and callers that import
them from this module.
"""

from __future__ import annotations

from collections.abc import Iterator

from kandev_lsp.executables import (
    IN_WORKSPACE,
    Candidate,
    Lookup,
    ManagedCache,
    WorkspaceGate,
    executable_names,
    expand_folders,
    has_separator,
    in_folder,
    locate,
    managed_cache,
    path_candidates,
)
from kandev_lsp.fileprobe import FileProbe, LocalFileProbe, ProbeResult, ProbeStatus
from kandev_lsp.language import GoRecipe, LanguageSpec
from kandev_lsp.taskenv import TaskEnvironment

__all__ = [
    "IN_WORKSPACE",
    "Candidate",
    "FileProbe",
    "LocalFileProbe",
    "Lookup",
    "ManagedCache",
    "ProbeResult",
    "ProbeStatus",
    "WorkspaceGate",
    "cache_candidates",
    "default_candidates",
    "executable_names",
    "go_bin_folders",
    "has_separator",
    "in_folder",
    "locate",
    "managed_cache",
    "path_candidates",
    "toolchain_candidates",
]


def cache_candidates(language: LanguageSpec, env: TaskEnvironment) -> Iterator[Candidate]:
    """The managed cache ``<HOME>/.kandev/lsp-servers``.

    kandev-lsp's own layout is ``<cache>/<language>/current/{node_modules/.bin,bin}/<command>``. The flat
    layout of earlier task hosts (``<cache>/node_modules/.bin/<command>``, ``<cache>/<command>``) is
    searched after it so servers they installed keep working. Candidates in ``node_modules/.bin`` are npm
    launchers, started as ``node <script>`` (:mod:`kandev_lsp.launchers`).
    """
    root = env.cache_root()
    if root is None:
        yield Candidate(
            "", "managed cache", skip="HOME is not an absolute path; the managed cache is disabled"
        )
        return
    join = env.host.join
    current = join(root, language.id, "current")
    command = language.command
    yield from in_folder(
        join(current, "node_modules", ".bin"), command, env, "managed cache", npm_launcher=True
    )
    yield from in_folder(join(current, "bin"), command, env, "managed cache")
    shared = "managed cache (shared)"
    yield from in_folder(join(root, "node_modules", ".bin"), command, env, shared, npm_launcher=True)
    yield from in_folder(root, command, env, shared)


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
        yield from expand_folders(go_bin_folders(env), language.command, env)


def default_candidates(language: LanguageSpec, env: TaskEnvironment) -> Iterator[Candidate]:
    """The core's discovery order: task PATH, managed cache, toolchain folders."""
    yield from path_candidates(language.command, env)
    yield from cache_candidates(language, env)
    yield from toolchain_candidates(language, env)
