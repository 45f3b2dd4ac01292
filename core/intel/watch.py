"""Which files may have changed on disk since the last look: the re-sync before each query (B8.12) asks
this instead of taking a ``stat`` of every open and seen file (issue 9 overhead goal).

Before every query a server's documents and the files seen in its answers are checked against the disk,
because the agent edits files with plain file tools too. With a ``stat`` each, that check grows with every
file an answer ever pointed at (a popular symbol's references span hundreds) and was most of what a warm
definition or hover call added to the server's own time. On Linux an inotify instance reports the changes
instead, and the caller takes a ``stat`` only of the files it names.

The rules that keep the check exact:

- **Watch, then look.** :meth:`DiskWatch.unchanged` starts watching a file (and each folder from it up to
  its root) the first time it is asked about it and answers False, so the caller takes its ``stat`` after
  the watch exists: a change before that ``stat`` is seen by it, a change after it is queued. Only a file
  watched before the current :meth:`DiskWatch.drain` can be answered from the queue.
- **Writes are queued before they return**: the kernel queues the event inside the writing system call,
  so a change the agent made before this query is in the queue when it is drained.
- **When in doubt, check everything.** A full queue, a watched folder moved, removed or replaced (a
  folder swapped for a symbolic link included) and any watch that cannot be added make every file
  "changed" until watched afresh: the caller falls back to a ``stat`` per file, exactly the old check.
- The file itself is watched too (a write through a hard link elsewhere reaches its inode, not the folder).

Without inotify (another OS, no instances left) :meth:`DiskWatch.unchanged` always answers False: a
``stat`` per file, as before.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import struct
import weakref
from typing import Final

__all__ = ["DiskWatch"]

_log = logging.getLogger("kandev_lsp.intel")

IN_MODIFY: Final = 0x00000002
IN_ATTRIB: Final = 0x00000004
IN_CLOSE_WRITE: Final = 0x00000008
IN_MOVED_FROM: Final = 0x00000040
IN_MOVED_TO: Final = 0x00000080
IN_CREATE: Final = 0x00000100
IN_DELETE: Final = 0x00000200
IN_DELETE_SELF: Final = 0x00000400
IN_MOVE_SELF: Final = 0x00000800
IN_Q_OVERFLOW: Final = 0x00004000
IN_IGNORED: Final = 0x00008000
IN_ONLYDIR: Final = 0x01000000
IN_DONT_FOLLOW: Final = 0x02000000

_CONTENT: Final = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE
_ENTRY: Final = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
_SELF: Final = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
_FOLDER_MASK: Final = _CONTENT | _ENTRY | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW
_FILE_MASK: Final = _CONTENT | IN_DELETE_SELF | IN_MOVE_SELF | IN_DONT_FOLLOW
_HEADER: Final = struct.Struct("iIII")
#: Files watched at most by one instance; past it the extra files are checked with a ``stat``.
MAX_FILES: Final = 20_000


class _Inotify:
    """The three libc calls, loaded once (None where there is no inotify)."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.init1 = libc.inotify_init1
        self.init1.argtypes = [ctypes.c_int]
        self.init1.restype = ctypes.c_int
        self.add_watch = libc.inotify_add_watch
        self.add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self.add_watch.restype = ctypes.c_int


def _load() -> _Inotify | None:
    try:
        return _Inotify()
    except (OSError, AttributeError):  # not Linux, or a libc without inotify
        return None


_INOTIFY: _Inotify | bool | None = False  # False: not loaded yet


def _inotify() -> _Inotify | None:
    global _INOTIFY
    if _INOTIFY is False:
        _INOTIFY = _load()
    assert _INOTIFY is not True
    return _INOTIFY


class DiskWatch:
    """Changes on disk of the files one server was told about (see the module docstring).

    Use: :meth:`drain` once at the start of a re-sync, then :meth:`unchanged` per file; a False answer
    means "take its ``stat``". :meth:`close` when the server stops.
    """

    def __init__(self) -> None:
        self._fd: int | None = None
        self._failed = False
        self._finalizer: weakref.finalize[[int], DiskWatch] | None = None
        #: Watch descriptor -> (path, is folder).
        self._watches: dict[int, tuple[str, bool]] = {}
        self._folders: set[str] = set()
        #: Files watched before the last drain without an event since.
        self._files: set[str] = set()
        #: Files whose watch was added since the last drain (trusted from the next one on).
        self._new: set[str] = set()
        self._changed: set[str] = set()

    @property
    def active(self) -> bool:
        """Whether changes are reported (an inotify instance is open)."""
        return self._fd is not None

    def drain(self) -> None:
        """Read the events queued since the last drain; files they touch are reported as changed."""
        self._changed.clear()
        self._files |= self._new
        self._new.clear()
        if self._fd is None:
            return
        chunks: list[bytes] = []
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                self._reset("read failed")
                return
            if not chunk:
                break
            chunks.append(chunk)
        if chunks and not self._apply(b"".join(chunks)):
            self._reset("a watched folder changed or the queue overflowed")

    def _apply(self, data: bytes) -> bool:
        """Record the events in ``data``; False when every file must be checked."""
        offset = 0
        size = _HEADER.size
        while offset + size <= len(data):
            wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            name = data[offset + size : offset + size + length].split(b"\0", 1)[0]
            offset += size + length
            if mask & IN_Q_OVERFLOW:
                return False
            watched = self._watches.get(wd)
            if watched is None:
                continue
            path, is_folder = watched
            if is_folder:
                if mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED):
                    return False
                if not name:
                    continue
                child = os.path.join(path, os.fsdecode(name))
                if child in self._folders:
                    if mask & _ENTRY:
                        return False  # a folder on a watched file's path moved, went or was replaced
                    continue  # its attributes changed: its files report their own changes
                self._changed.add(child)
                if mask & _ENTRY:  # another inode may now stand at that path: watch it afresh
                    self._files.discard(child)
            else:
                self._changed.add(path)
                if mask & _SELF:
                    self._files.discard(path)
                    if mask & IN_IGNORED:
                        self._watches.pop(wd, None)
        return True

    def unchanged(self, path: str, root: str) -> bool:
        """Whether ``path`` (a real path inside the real folder ``root``) is known unchanged since the last
        drain. False means "take its ``stat``"; the first question about a file starts watching it."""
        if path in self._files:
            return path not in self._changed
        self._watch(path, root)
        return False

    def _watch(self, path: str, root: str) -> None:
        if self._failed or path in self._new or len(self._files) + len(self._new) >= MAX_FILES:
            return
        inotify = _inotify()
        if inotify is None:
            self._failed = True
            return
        if self._fd is None:
            fd = inotify.init1(os.O_NONBLOCK | os.O_CLOEXEC)
            if fd < 0:
                self._failed = True  # no instance left (fs.inotify.max_user_instances): stat as before
                return
            self._fd = fd
            self._finalizer = weakref.finalize(self, os.close, fd)
        folders: list[str] = []
        folder = os.path.dirname(path)
        while True:
            folders.append(folder)
            if folder == root or len(folder) <= len(root):
                break
            folder = os.path.dirname(folder)
        if folders[-1] != root:
            return  # not inside root: never trusted
        for folder in folders:
            if folder not in self._folders and not self._add(inotify, folder, _FOLDER_MASK, True):
                return
        if self._add(inotify, path, _FILE_MASK, False):
            self._new.add(path)

    def _add(self, inotify: _Inotify, path: str, mask: int, is_folder: bool) -> bool:
        assert self._fd is not None
        wd = inotify.add_watch(self._fd, os.fsencode(path), mask)
        if wd < 0:
            code = ctypes.get_errno()
            if code == errno.ENOSPC:  # fs.inotify.max_user_watches: stat the files that are left
                self._failed = True
            return False
        self._watches[wd] = (path, is_folder)
        if is_folder:
            self._folders.add(path)
        return True

    def _reset(self, reason: str) -> None:
        """Forget every watch (a new instance next time): every file is checked and watched afresh."""
        _log.debug("intel disk watch reset: %s", reason)
        self.close()
        self._failed = False
        self._changed.clear()

    def close(self) -> None:
        """Close the inotify instance; the files are then checked with a ``stat`` until watched again."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._fd = None
        self._watches.clear()
        self._folders.clear()
        self._files.clear()
        self._new.clear()
