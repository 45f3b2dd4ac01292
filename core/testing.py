"""Helpers for testing a kandev-lsp plugin on its own, usable with any test runner.

This module never imports pytest (pytest is only a test extra of kandev-lsp): the pytest fixtures
built on these helpers live in :mod:`kandev_lsp.pytest_plugin`, which pytest loads through the
``pytest11`` entry point.

:func:`make_plugin_host`
    ``make_plugin_host(my_plugin_module)`` -> a :class:`~kandev_lsp.host.PluginHost` holding only the
    core hookspecs, the core defaults and the given plugins (no entry points are read).
:func:`make_task`
    ``make_task(workspace, path=[folder, ...], home=..., extra={...}, host=HostPlatform(...))`` -> a
    :class:`~kandev_lsp.taskenv.Task` whose environment contains only what you pass.
:func:`resolve_in`
    resolves a language in a task with a host (and optionally a :class:`TableProbe`).
:func:`fake_executable`
    ``fake_executable(folder, "name", script="...")`` -> the path of an executable that runs ``script``
    with this interpreter (for discovery tests; not a language server).
:func:`processes_tagged`
    the live processes carrying an environment tag (what escaped a stop), Linux only.

:class:`TableProbe` stands in for the filesystem when simulating another OS (Windows paths on Linux):
``TableProbe({r"C:\\tools\\ls.exe": ProbeStatus.OK}, HostPlatform.parse("windows-x86_64"))``, with
``ProbeStatus`` from :mod:`kandev_lsp.discovery` and ``HostPlatform`` from :mod:`kandev_lsp`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath

from kandev_lsp.discovery import ProbeResult, ProbeStatus
from kandev_lsp.host import PluginHost
from kandev_lsp.platform import HostPlatform
from kandev_lsp.resolver import Resolution, Resolver
from kandev_lsp.taskenv import Task, TaskEnvironment

__all__ = [
    "HostPlatform",
    "ProbeStatus",
    "TableProbe",
    "fake_executable",
    "make_plugin_host",
    "make_task",
    "processes_tagged",
    "resolve_in",
]


def make_plugin_host(*plugins: object, names: Iterable[str] | None = None) -> PluginHost:
    """A host with the core specs and defaults plus exactly ``plugins`` (registered as third parties are).

    Raises AssertionError with the recorded problems if a plugin fails to register, so a broken plugin
    fails its own test loudly.
    """
    host = PluginHost()
    names = list(names) if names is not None else [getattr(p, "__name__", repr(p)) for p in plugins]
    for plugin, name in zip(plugins, names, strict=True):
        host.register(plugin, name)
    if host.problems:
        raise AssertionError("plugin failed to load: " + "; ".join(str(p) for p in host.problems))
    return host


def make_task(
    workspace: str,
    *,
    path: Iterable[str] = (),
    home: str | None = None,
    extra: Mapping[str, str] | None = None,
    host: HostPlatform | None = None,
) -> Task:
    """A task whose environment holds only PATH, HOME and ``extra``."""
    host = host or HostPlatform.current()
    variables = {"PATH": (";" if host.is_windows else os.pathsep).join(path)}
    if home is not None:
        variables["HOME"] = home
    variables.update(extra or {})
    return Task(workspace, TaskEnvironment(variables, host))


def resolve_in(host: PluginHost, language: str, task: Task, probe: TableProbe | None = None) -> Resolution:
    return Resolver(host, probe).resolve(language, task)


def fake_executable(folder: str | os.PathLike[str], name: str, script: str = "print('fake')\n") -> str:
    """Write an executable Python script called ``name`` into ``folder``; return its absolute path."""
    target = Path(folder) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"#!{sys.executable}\n{script}", encoding="utf-8")
    target.chmod(0o755)
    return str(target)


def processes_tagged(variable: str, value: str, *, named: str | None = None) -> list[int]:
    """Live (non-zombie) processes whose environment holds ``variable=value``, read from ``/proc``.

    Give the processes your test starts a unique tag in their environment; descendants inherit it, so
    after a stop this lists whatever escaped, however it detached (new session, double fork). Linux only.

    ``named`` keeps only the processes whose command name (``/proc/PID/comm``) is that: a language server
    itself (``gopls``; ``node`` for pyright), not the short-lived children it runs now and then (gopls's
    ``go list``, the ``python`` pyright asks for its search paths). "The same server" compared over the
    whole list fails whenever such a child is listed in one look and gone in the other.
    """
    needle = f"{variable}={value}".encode()
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                entries = handle.read().split(b"\0")
            with open(f"/proc/{name}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
            if named is not None:
                with open(f"/proc/{name}/comm") as handle:
                    if handle.read().strip() != named:
                        continue
        except OSError:
            continue
        if needle in entries and state != "Z":
            found.append(int(name))
    return found


class TableProbe:
    """A filesystem made of a table: ``{path: status}``; paths compare case-insensitively on Windows.

    Every probed path is recorded in :attr:`probed`, so a test can assert what was (not) looked at.
    ``contents`` gives the bytes :meth:`read_head` returns for a path (an install's receipt).
    """

    def __init__(
        self,
        files: Mapping[str, ProbeStatus],
        host: HostPlatform,
        contents: Mapping[str, bytes] | None = None,
    ) -> None:
        self._windows = host.is_windows
        self._files = {self._key(path): status for path, status in files.items()}
        self._contents = {self._key(path): data for path, data in (contents or {}).items()}
        self.probed: list[str] = []

    def _key(self, path: str) -> str:
        return str(PureWindowsPath(path)).lower() if self._windows else path

    def probe(self, path: str) -> ProbeResult:
        self.probed.append(path)
        status = self._files.get(self._key(path), ProbeStatus.MISSING)
        return ProbeResult(status, path if status is ProbeStatus.OK else "")

    def real_path(self, path: str) -> str:
        return path  # a table has no symlinks

    def read_head(self, path: str, limit: int) -> bytes | None:
        data = self._contents.get(self._key(path))
        return None if data is None else data[:limit]

    def is_within(self, path: str, folder: str) -> bool:
        if not folder:
            return False
        flavour = PureWindowsPath if self._windows else PurePosixPath
        inner = flavour(path.lower() if self._windows else path)
        outer = flavour(folder.lower() if self._windows else folder)
        return inner == outer or outer in inner.parents
