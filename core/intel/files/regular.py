"""Reading a workspace file's bytes without ever blocking on something that is not a file.

A path in a workspace may name a FIFO, a socket or a device (``mkfifo testdata/fifo.go``). A plain
``open()`` of a FIFO waits for a writer that never comes: the tool call never answers, its deadline cannot
stop the thread, and a lock held around the read stalls every later call. So every read of file content
in the intel layer (document sync, snippets and bodies, the applier's texts and digests) goes through
:func:`read_regular`: it opens with ``O_NONBLOCK`` (a FIFO's open returns at once), ``O_NOCTTY`` (a
terminal never becomes the process's controlling one) and ``O_CLOEXEC`` (no descriptor leaks into a server
started meanwhile), ``fstat``\\ s the descriptor (what was opened, not a name that may have been swapped
since) and refuses anything but a regular file before reading a byte.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import Final

__all__ = ["NOT_REGULAR", "NotRegularFile", "RegularRead", "read_regular"]

#: What a tool says about such a path (after the path's name).
NOT_REGULAR: Final = "not a regular file (a FIFO/socket/device); it is not read"

_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


class NotRegularFile(OSError):
    """The path names a FIFO, socket, device or folder: refused without reading (an ``OSError``, so code
    treating an unreadable file as absent keeps doing so)."""

    def __init__(self, path: str) -> None:
        super().__init__(errno.EINVAL, NOT_REGULAR, path)


@dataclass(frozen=True, slots=True)
class RegularRead:
    """A regular file's bytes and the stamp of what was read.

    :param data: the bytes (at most ``limit`` of :func:`read_regular`), or None when the file is larger
        than ``max_bytes`` (not read).
    :param stamp: ``(st_mtime_ns, st_size)`` of the opened file (its ``fstat``).
    """

    data: bytes | None
    stamp: tuple[int, int]


def read_regular(path: str, *, max_bytes: int | None = None, limit: int | None = None) -> RegularRead:
    """Read ``path`` if it is a regular file (symlinks followed, as ``open`` does).

    :param max_bytes: a file larger than this is not read (``data`` is None).
    :param limit: read at most this many bytes (None: all).
    :raises NotRegularFile: a FIFO, socket, device or folder; nothing was read, nothing waited for.
    :raises OSError: the file cannot be opened or read (missing, no permission ...).
    """
    descriptor = os.open(path, _FLAGS)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(path)
        found = (info.st_mtime_ns, info.st_size)
        if max_bytes is not None and info.st_size > max_bytes:
            return RegularRead(None, found)
        with os.fdopen(descriptor, "rb", closefd=True) as handle:
            descriptor = -1  # the handle closes it now
            data = handle.read(-1 if limit is None else limit)
        return RegularRead(data, found)
    finally:
        if descriptor >= 0:
            os.close(descriptor)
