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

Files that appear in or leave a watched folder (created, moved in or out, deleted) are also collected
(:attr:`DiskWatch.created`, :attr:`DiskWatch.removed`, since the last drain): a file the agent creates next
to files a server already answered about is announced to that server (``didChangeWatchedFiles``), or its
imports and references stay unknown to it. Folders that no answer reached are not watched, so a file
created there is not seen; nor is anything after an overflow.

Without inotify (another OS, no instances left) :meth:`DiskWatch.unchanged` always answers False: a
``stat`` per file, as before.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from inotify_simple import Event, INotify

try:  # inotify_simple: the inotify calls and event parsing (a dependency on Linux only)
    from inotify_simple import flags
except ImportError:  # not Linux: no inotify, so a stat per file (see _open_inotify)
    flags = None

__all__ = ["DiskWatch"]

_log = logging.getLogger("kandev_lsp.intel")

if flags is not None:
    _CONTENT: Final = flags.MODIFY | flags.ATTRIB | flags.CLOSE_WRITE
    _ENTRY: Final = flags.MOVED_FROM | flags.MOVED_TO | flags.CREATE | flags.DELETE
    _SELF: Final = flags.DELETE_SELF | flags.MOVE_SELF | flags.IGNORED
    _FOLDER_MASK: Final = (
        _CONTENT | _ENTRY | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR | flags.DONT_FOLLOW
    )
    _FILE_MASK: Final = _CONTENT | flags.DELETE_SELF | flags.MOVE_SELF | flags.DONT_FOLLOW

#: Files watched at most by one instance; past it the extra files are checked with a ``stat``.
MAX_FILES: Final = 20_000


def _open_inotify() -> INotify | None:
    """A non-blocking inotify instance, or None where there is none (another OS, a libc without inotify,
    no instance left under ``fs.inotify.max_user_instances``): then every file is checked with a stat."""
    if flags is None:
        return None
    from inotify_simple import INotify

    try:
        return INotify(nonblocking=True)
    except (OSError, AttributeError):
        return None


#: How an instance is opened; tests replace it to run without inotify.
_OPEN: Callable[[], INotify | None] = _open_inotify


class DiskWatch:
    """Changes on disk of the files one server was told about (see the module docstring).

    Use: :meth:`drain` once at the start of a re-sync, then :meth:`unchanged` per file; a False answer
    means "take its ``stat``". :meth:`close` when the server stops.
    """

    def __init__(self) -> None:
        self._inotify: INotify | None = None
        self._failed = False
        #: Watch descriptor -> (path, is folder).
        self._watches: dict[int, tuple[str, bool]] = {}
        self._folders: set[str] = set()
        #: Files watched before the last drain without an event since.
        self._files: set[str] = set()
        #: Files whose watch was added since the last drain (trusted from the next one on).
        self._new: set[str] = set()
        self._changed: set[str] = set()
        #: Files (not folders) that appeared in / left a watched folder since the last drain.
        self.created: set[str] = set()
        self.removed: set[str] = set()
        #: Counts the changes of the watched paths' shape, cumulative across drains: an entry created,
        #: moved or deleted in a watched folder, a watched file or folder moved or deleted, every reset
        #: or close (watches lost). A check of a path made while it was watched stays true while this is
        #: unchanged (:meth:`vouches`), whichever call drained the events in between.
        self.layout = 0

    @property
    def active(self) -> bool:
        """Whether changes are reported (an inotify instance is open)."""
        return self._inotify is not None

    def drain(self) -> None:
        """Read the events queued since the last drain; files they touch are reported as changed."""
        self._changed.clear()
        self.created.clear()
        self.removed.clear()
        self._files |= self._new
        self._new.clear()
        if self._inotify is None:
            return
        try:
            events = self._inotify.read(timeout=0)
        except OSError:
            self._reset("read failed")
            return
        if events and not self._apply(events):
            self._reset("a watched folder changed or the queue overflowed")

    def _apply(self, events: Iterable[Event]) -> bool:
        """Record ``events``; False when every file must be checked."""
        for wd, mask, _cookie, name in events:
            if mask & flags.Q_OVERFLOW:
                return False
            if mask & (_ENTRY | _SELF):
                self.layout += 1
            watched = self._watches.get(wd)
            if watched is None:
                continue
            path, is_folder = watched
            if is_folder:
                if mask & _SELF:
                    return False
                if not name:
                    continue
                child = os.path.join(path, name)
                if child in self._folders:
                    if mask & _ENTRY:
                        return False  # a folder on a watched file's path moved, went or was replaced
                    continue  # its attributes changed: its files report their own changes
                self._changed.add(child)
                if mask & _ENTRY:  # another inode may now stand at that path: watch it afresh
                    self._files.discard(child)
                    if not mask & flags.ISDIR:  # a file appeared or left: the server may need to know
                        if mask & (flags.CREATE | flags.MOVED_TO):
                            self.created.add(child)
                            self.removed.discard(child)
                        elif child in self.created:  # came and went since the last drain (a temp file)
                            self.created.discard(child)
                        else:
                            self.removed.add(child)
            else:
                self._changed.add(path)
                if mask & _SELF:
                    self._files.discard(path)
                    if mask & flags.IGNORED:
                        self._watches.pop(wd, None)
        return True

    def unchanged(self, path: str, root: str) -> bool:
        """Whether ``path`` (a real path inside the real folder ``root``) is known unchanged since the last
        drain. False means "take its ``stat``"; the first question about a file starts watching it."""
        if path in self._files:
            return path not in self._changed
        self._watch(path, root)
        return False

    @property
    def changed(self) -> set[str]:
        """The paths the events drained last named (files, and entries of watched folders)."""
        return self._changed

    def vouches(self, path: str, layout: int) -> bool:
        """Whether a check of ``path``'s place (its real path, that it exists) made while it was watched,
        with :attr:`layout` then ``layout``, still holds after this call's drain: nothing on the way from
        its root to it was created, moved, deleted or replaced since (content changes do not matter)."""
        return layout == self.layout and path in self._files

    def watching(self, path: str) -> bool:
        """Whether ``path`` is watched now: a change from this moment on will be reported, so a check of
        the file made now can be trusted while :meth:`unchanged` says True ("watch, then look")."""
        return path in self._files or path in self._new

    def open(self) -> bool:
        """Open the inotify instance now (it is opened by the first watch otherwise): whether one is open.
        Without one every file is checked with a ``stat``, as before."""
        if self._inotify is None and not self._failed:
            self._inotify = _OPEN()
            if self._inotify is None:
                self._failed = True
        return self._inotify is not None

    def _watch(self, path: str, root: str) -> None:
        if self._failed or path in self._new or len(self._files) + len(self._new) >= MAX_FILES:
            return
        if not self.open():
            return
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
            if folder not in self._folders and not self._add(folder, _FOLDER_MASK, True):
                return
        if self._add(path, _FILE_MASK, False):
            self._new.add(path)

    def _add(self, path: str, mask: int, is_folder: bool) -> bool:
        assert self._inotify is not None
        try:
            wd = self._inotify.add_watch(path, mask)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:  # fs.inotify.max_user_watches: stat the files that are left
                self._failed = True
            return False
        self._watches[wd] = (path, is_folder)
        if is_folder:
            self._folders.add(path)
        return True

    def _reset(self, reason: str) -> None:
        """Forget every watch (a new instance next time): every file is checked and watched afresh."""
        _log.debug("intel disk watch reset: %s", reason)
        self.close()  # counts as a layout change
        self._failed = False
        self._changed.clear()

    def close(self) -> None:
        """Close the inotify instance; the files are then checked with a ``stat`` until watched again."""
        self.layout += 1
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
        self._watches.clear()
        self._folders.clear()
        self._files.clear()
        self._new.clear()
