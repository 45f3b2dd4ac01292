"""The host platform as a value.

Every rule that differs between operating systems (PATHEXT, execute bits, case-insensitive environment
keys, which release asset to download) takes a :class:`HostPlatform` argument instead of reading
``sys.platform``, so Windows and macOS behaviour is tested on Linux with plain values.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import sys
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import Literal

from kandev_lsp._values import dataclass

OperatingSystem = Literal["linux", "darwin", "windows"]
Architecture = Literal["x86_64", "aarch64", "other"]

_OS_VALUES: tuple[OperatingSystem, ...] = ("linux", "darwin", "windows")
_ARCH_VALUES: tuple[Architecture, ...] = ("x86_64", "aarch64", "other")
_OS_NAMES: dict[str, OperatingSystem] = {"win32": "windows", "cygwin": "windows", "darwin": "darwin"}
_ARCH_ALIASES: dict[str, Architecture] = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
}


def _machine() -> str:
    """``platform.machine()``. On POSIX that is ``os.uname().machine``: read it directly and spare every
    kandev-lsp start-up the import of the platform module."""
    if hasattr(os, "uname"):
        return os.uname().machine
    import platform

    return platform.machine()


@dataclass(frozen=True, slots=True)
class HostPlatform:
    """The operating system and CPU architecture a server would run on."""

    os: OperatingSystem
    arch: Architecture

    @classmethod
    def current(cls) -> HostPlatform:
        """The platform of this interpreter."""
        os_name = _OS_NAMES.get(sys.platform, "linux")
        arch: Architecture = _ARCH_ALIASES.get(_machine().lower(), "other")
        return cls(os_name, arch)

    @classmethod
    def parse(cls, text: str) -> HostPlatform:
        """``"windows-x86_64"`` -> ``HostPlatform("windows", "x86_64")``; ValueError names what is wrong."""
        os_name, _, arch = text.partition("-")
        for known_os in _OS_VALUES:
            for known_arch in _ARCH_VALUES:
                if (os_name, arch) == (known_os, known_arch):
                    return cls(known_os, known_arch)
        raise ValueError(
            f"{text!r} is not a platform: expected OS-ARCH with OS one of {', '.join(_OS_VALUES)} "
            f"and ARCH one of {', '.join(_ARCH_VALUES)}"
        )

    @property
    def is_windows(self) -> bool:
        return self.os == "windows"

    def pure_path(self, text: str) -> PurePath:
        """A path object with this platform's syntax (drive letters and backslashes on Windows)."""
        return PureWindowsPath(text) if self.is_windows else PurePosixPath(text)

    def join(self, folder: str, *names: str) -> str:
        """Join path parts with this platform's rules. String based: the resolver's hot path calls it
        for every candidate, and pathlib objects cost ten times more than the stat they lead to."""
        if self.is_windows:
            return ntpath.join(folder, *names)
        return posixpath.join(folder, *names)

    def is_absolute(self, text: str) -> bool:
        """Whether ``text`` is an absolute path on this platform (``C:\\x`` yes, ``\\x`` or ``x`` no)."""
        if not text:
            return False
        if self.is_windows:
            drive, rest = ntpath.splitdrive(text)
            return bool(drive) and rest[:1] in ("\\", "/")
        return text.startswith("/")

    def __str__(self) -> str:
        return f"{self.os}-{self.arch}"
