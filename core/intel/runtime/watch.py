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
(:attr:`DiskWatch.created`, :attr:`DiskWatch.removed`, since the last drain), and so are files whose
content was written (:attr:`DiskWatch.modified`): a file the agent changes, creates or deletes anywhere in
a project must reach its server (``didChangeWatchedFiles``), or its imports and references stay unknown to
it (issue 20 item 3: a call added to a file no tool had opened was never seen).

**The whole tree.** :meth:`DiskWatch.watch_tree` watches every folder of a project root (bounded by
:data:`MAX_TREE_FOLDERS`; :data:`VENDORED` folders and hidden ones are skipped, as a server's own file
search skips them) and takes a stamp of each file in it. A folder created later is watched when its
creation is drained, and its files count as created ("watch, then look": they are listed after the watch
exists). When the watches are lost (an overflow, a watched folder moved or deleted), the next
:meth:`DiskWatch.watch_tree` walks the tree again and reports what its stamps say changed, appeared or
left meanwhile, so nothing is missed for good. Entries created or deleted in a folder that only the tree
watch holds (not one on the way to a file asked about) do not count as a change of the watched paths'
shape (:attr:`DiskWatch.layout`): a temporary file written elsewhere in the project leaves the path checks
of files the tools use alone.

Without inotify (another OS, no instances left) :meth:`DiskWatch.unchanged` always answers False: a
``stat`` per file, as before.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from inotify_simple import Event, INotify

try:  # inotify_simple: the inotify calls and event parsing (a dependency on Linux only)
    from inotify_simple import flags
except ImportError:  # not Linux: no inotify, so a stat per file (see _open_inotify)
    flags = None

__all__ = ["MAX_TREE_FOLDERS", "VENDORED", "DiskWatch", "skipped_folder"]

_log = logging.getLogger("kandev_lsp.intel")

if flags is not None:
    _CONTENT: Final = flags.MODIFY | flags.ATTRIB | flags.CLOSE_WRITE
    _ENTRY: Final = flags.MOVED_FROM | flags.MOVED_TO | flags.CREATE | flags.DELETE
    _SELF: Final = flags.DELETE_SELF | flags.MOVE_SELF | flags.IGNORED
    _FOLDER_MASK: Final = (
        _CONTENT | _ENTRY | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR | flags.DONT_FOLLOW
    )
    _FILE_MASK: Final = _CONTENT | flags.DELETE_SELF | flags.MOVE_SELF | flags.DONT_FOLLOW
    #: A file's content was written (a touch or chmod is not a change a server needs to hear).
    _WRITTEN: Final = flags.MODIFY | flags.CLOSE_WRITE

#: Files watched at most by one instance; past it the extra files are checked with a ``stat``.
MAX_FILES: Final = 20_000
#: Folders of a project's tree watched at most by one instance (:meth:`DiskWatch.watch_tree`); past it
#: the rest of the tree is not watched (its changes reach the server through its own watching, or when
#: an answer reaches its files).
MAX_TREE_FOLDERS: Final = 4096
#: Files of a project's tree stamped at most (the comparison after the watches were lost).
MAX_TREE_FILES: Final = 50_000
#: Folders never walked nor watched: version control, dependencies, caches and build output.
VENDORED: Final = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", "venv", "dist", "build", ".mypy_cache"}
)


def skipped_folder(name: str) -> bool:
    """Whether a folder named ``name`` is left out of a project's tree (vendored, or hidden)."""
    return name in VENDORED or name.startswith(".")


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


@dataclass(slots=True)
class _Tree:
    """A project root watched whole: its files' stamps at the last walk, and whether its watches hold."""

    stamps: dict[str, tuple[int, int]]
    watched: bool


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
        #: Files whose content was written since the last drain (in a watched folder, or watched itself).
        self.modified: set[str] = set()
        #: Folders watched because a file asked about lies below them (their entries' changes count as a
        #: change of the watched paths' shape); the other folders are the tree's only.
        self._on_paths: set[str] = set()
        #: The tree roots watched whole (:meth:`watch_tree`), each with the stamps of its files at the
        #: last walk; a root whose watches were lost is walked again on the next :meth:`watch_tree`.
        self._trees: dict[str, _Tree] = {}
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
        self.modified.clear()
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

    def watch_tree(self, root: str) -> None:
        """Watch every folder of ``root`` (a real path; see the module docstring), or walk it again when
        its watches were lost, adding what changed, appeared or left since the last walk to
        :attr:`modified`, :attr:`created` and :attr:`removed`. Blocking (a walk): call it in a thread,
        between drains. Without inotify it does nothing."""
        tree = self._trees.get(root)
        if self.walked(root) or not self.open():
            return
        stamps: dict[str, tuple[int, int]] = {}
        self._walk(root, stamps)
        if tree is not None:  # the watches were lost: what changed meanwhile is found by the stamps
            for path, stamp in stamps.items():
                before = tree.stamps.get(path)
                if before is None:
                    self.created.add(path)
                elif before != stamp:
                    self.modified.add(path)
            self.removed.update(path for path in tree.stamps if path not in stamps)
        self._trees[root] = _Tree(stamps, watched=self._inotify is not None)

    def walked(self, root: str) -> bool:
        """Whether ``root``'s tree is watched now (False before :meth:`watch_tree`, and after a loss)."""
        tree = self._trees.get(root)
        return tree is not None and tree.watched

    def _walk(self, top: str, stamps: dict[str, tuple[int, int]], *, announce: bool = False) -> None:
        """Watch ``top`` and the folders below it (skipped ones left out, bounded), then stamp their
        files (with ``announce``, they count as created: a new folder's files are new to the server).
        Each folder is watched before it is listed, so a file written meanwhile is reported."""
        pending = [top]
        while pending and self._inotify is not None:
            folder = pending.pop()
            if folder not in self._folders and (
                len(self._folders) >= MAX_TREE_FOLDERS or not self._add(folder, _FOLDER_MASK, True)
            ):
                continue
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if not skipped_folder(entry.name):
                            pending.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        if announce:
                            self.created.add(entry.path)
                        if len(stamps) < MAX_TREE_FILES:
                            info = entry.stat(follow_symlinks=False)
                            stamps[entry.path] = (info.st_mtime_ns, info.st_size)
                except OSError:
                    continue

    def _tree_of(self, path: str) -> str | None:
        for root in self._trees:
            if path.startswith(root.rstrip(os.sep) + os.sep):
                return root
        return None

    def _apply(self, events: Iterable[Event]) -> bool:
        """Record ``events``; False when every file must be checked."""
        new_folders: list[str] = []
        for wd, mask, _cookie, name in events:
            if mask & flags.Q_OVERFLOW:
                return False
            watched = self._watches.get(wd)
            if watched is None:
                if mask & (_ENTRY | _SELF):
                    self.layout += 1
                continue
            path, is_folder = watched
            if mask & (_ENTRY | _SELF) and (not is_folder or path in self._on_paths):
                self.layout += 1
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
                    if mask & flags.ISDIR:
                        if mask & (flags.CREATE | flags.MOVED_TO) and self._tree_of(child) is not None:
                            new_folders.append(child)
                    elif mask & (flags.CREATE | flags.MOVED_TO):  # the server may need to know
                        self.created.add(child)
                        self.removed.discard(child)
                        self.modified.discard(child)
                    elif child in self.created:  # came and went since the last drain (a temp file)
                        self.created.discard(child)
                    else:
                        self.removed.add(child)
                        self.modified.discard(child)
                elif mask & _WRITTEN and not mask & flags.ISDIR and child not in self.created:
                    self.modified.add(child)
            else:
                self._changed.add(path)
                if mask & _WRITTEN and path not in self.created:
                    self.modified.add(path)
                if mask & _SELF:
                    self._files.discard(path)
                    if mask & flags.IGNORED:
                        self._watches.pop(wd, None)
        for folder in new_folders:  # a tree's new folder: watched, then its files listed as created
            root = self._tree_of(folder)
            if root is not None and not skipped_folder(os.path.basename(folder)):
                self._walk(folder, self._trees[root].stamps, announce=True)
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
            self._on_paths.add(folder)
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
        self._on_paths.clear()
        self._files.clear()
        self._new.clear()
        for tree in self._trees.values():
            tree.watched = False  # walked again by the next watch_tree, which compares the stamps
