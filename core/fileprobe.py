"""Looking at one path on the host's filesystem: the ground floor under the resolver, the process layer
and the installers.

A :class:`FileProbe` answers "is this an executable regular file, and where does it really live?". It is
injected wherever files are looked at, so that Windows rules (PATHEXT, drive letters, case-insensitive
paths) are tested on Linux with a table of files (:class:`kandev_lsp.testing.TableProbe`). This module
knows nothing of languages, PATH or workspaces.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import stat
from enum import Enum
from typing import Any, Protocol

from kandev_lsp._values import dataclass
from kandev_lsp.platform import HostPlatform

__all__ = ["FileProbe", "LocalFileProbe", "ProbeResult", "ProbeStatus"]


class ProbeStatus(Enum):
    OK = "ok"
    MISSING = "missing"
    NOT_A_FILE = "not a regular file"
    NOT_EXECUTABLE = "no execute permission"


@dataclass(frozen=True, slots=True)
class ProbeResult:
    status: ProbeStatus
    real_path: str = ""

    def __init__(self, status: ProbeStatus, real_path: str = "") -> None:
        # Written out: one per candidate, and the generic one of kandev_lsp._values costs more.
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "real_path", real_path)


class FileProbe(Protocol):
    """Looks at one path on the host's filesystem."""

    def probe(self, path: str) -> ProbeResult: ...

    def is_within(self, path: str, folder: str) -> bool:
        """Whether ``path`` (already resolved) lies inside ``folder`` (resolved here)."""
        ...

    def real_path(self, path: str) -> str:
        """``path`` with every symlink resolved (a folder's true place, for the workspace rule)."""
        ...

    def read_head(self, path: str, limit: int) -> bytes | None:
        """At most ``limit`` bytes from the start of the regular file at ``path``; None when there is no
        such file or it cannot be read (an install's receipt, an npm launcher's ``#!`` line). Never waits:
        a FIFO or a device there is no regular file."""
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
        #: ``host``'s paths are not this machine's (``resolve --platform windows-x86_64`` on Linux): they
        #: are never looked up on this filesystem, where ``C:\Users\me`` would be a relative name under the
        #: current folder (issue 17 item 7). Only the two path syntaxes matter: a macOS task on Linux is
        #: still probed here ("explains rules, probes this machine's files").
        self._foreign = host.is_windows != (os.name == "nt")
        self._paths: Any = ntpath if host.is_windows else posixpath  # the probed host's path rules
        self._fd_paths = bool(_O_PATH) and os.path.isdir(_PROC_FD)

    def probe(self, path: str) -> ProbeResult:
        if self._foreign:
            return ProbeResult(ProbeStatus.MISSING)
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
        if self._foreign:  # no symlink of that host can be read here: the path as written, normalized
            return self._paths.normpath(path) if path else path
        if self._fd_paths and path:  # one kernel walk, as for probe(); realpath for a path that is not there
            try:
                fd = os.open(path, _O_PATH | os.O_CLOEXEC)
            except (OSError, ValueError):
                return os.path.realpath(path)
            try:
                return os.readlink(f"{_PROC_FD}/{fd}")
            finally:
                os.close(fd)
        return os.path.realpath(path)

    def read_head(self, path: str, limit: int) -> bytes | None:
        if self._foreign:
            return None
        try:  # O_NONBLOCK: opening a FIFO to read would wait for a writer (a hung resolve); files ignore it
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, ValueError):
            return None
        with os.fdopen(fd, "rb") as handle:
            try:
                return handle.read(limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
            except OSError:
                return None

    def is_within(self, path: str, folder: str) -> bool:
        if not folder:
            return False
        paths = self._paths
        root = self.real_path(folder)
        if self._windows:
            path, root = paths.normcase(path), paths.normcase(root)
        return path == root or path.startswith(root.rstrip(paths.sep) + paths.sep)
