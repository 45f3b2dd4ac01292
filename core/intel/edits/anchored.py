"""Reaching a path inside a workspace root through folder descriptors, never through a symbolic link (B8.11).

Why: the commit checks that every path it touches is its own real path (no symbolic link on the way),
then writes. Between that check and the write a folder on the way can be swapped for a symbolic link to a
folder outside the workspace (by a build, a command a language server runs, any other process). A write
*by path* follows that link and lands outside the workspace; so would a create, a rename, a delete or the
restore of a rollback.

So the applier never acts on a path by name from the top. It opens the outermost workspace root holding
the path, then each folder on the way with ``O_RDONLY | O_DIRECTORY | O_NOFOLLOW`` relative to the folder
before it (``dir_fd``), and acts on the final name relative to the last folder (``dir_fd=``,
``src_dir_fd=``/``dst_dir_fd=``). A descriptor stands for the folder that was opened, not for a name that
can be re-pointed; ``O_NOFOLLOW`` turns a symbolic link on the way into a refusal (:class:`RefusedPath`)
instead of a detour. The root itself is opened by its path (``O_NOFOLLOW`` on its last component): the
folders above a root are outside the workspace, beyond what an edit or a process working in it changes.
What a descriptor cannot prevent: a folder *moved* elsewhere while it is open still receives the write,
as it would have a moment before the move (a process that can move it out could move the file too).

:func:`route` (where to walk: pure) is separate from :func:`reach`, :func:`open_folder` and
:func:`lstat` (the walk: I/O).

Platforms without ``dir_fd`` support (Windows): :data:`ANCHORED` is False and these functions hand back
the whole path with no descriptor, so the applier acts by path as it did before; the commit's recheck of
real paths is then the only guard and the window between that check and the write stays open there.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

__all__ = ["ANCHORED", "Place", "RefusedPath", "Route", "lstat", "open_folder", "reach", "route"]

#: Whether this platform can act relative to folder descriptors without following links: every call the
#: applier makes takes ``dir_fd`` (``os.replace`` goes with ``os.rename``) and ``shutil.rmtree`` removes a
#: tree without following links. False on Windows.
ANCHORED: Final = (
    {os.open, os.stat, os.rename, os.unlink, os.link, os.mkdir, os.rmdir} <= os.supports_dir_fd
    and hasattr(os, "O_DIRECTORY")
    and hasattr(os, "O_NOFOLLOW")
    and shutil.rmtree.avoids_symlink_attacks
)

#: How each folder on the way is opened: a folder, never through a link, never inherited by a child.
_FOLDER: Final = (
    os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)

_LINK: Final = (
    "is a symbolic link: the applier never follows one (a folder or file may have been replaced by a link "
    "after the edit was checked), so nothing was written through it; see what replaced it before asking "
    "for the edit again"
)
_NOT_FOLDER: Final = (
    "is not a folder (it was expected to hold the edited path), so nothing was written under it; see what "
    "is there before asking for the edit again"
)


class RefusedPath(OSError):
    """A path the applier will not act on: a symbolic link or a non-folder on the way, or a path outside
    every workspace root. An ``OSError`` (``filename`` is the offending path, ``strerror`` says why and
    what to do), so a commit rolls back on it like on any disk failure."""


@dataclass(frozen=True, slots=True)
class Route:
    """The way from a workspace root to a path: the folders to open in turn, then the final name."""

    #: The outermost root holding the path; the walk starts at its descriptor.
    anchor: str
    #: Folder names between the anchor and the final name, outermost first.
    folders: tuple[str, ...]
    #: The final component; ``""`` when the path is the anchor itself.
    name: str

    def folder_path(self, depth: int) -> str:
        """The absolute path of the anchor and its first ``depth`` folders (for messages)."""
        return os.path.join(self.anchor, *self.folders[:depth])


def route(path: str, anchors: Iterable[str]) -> Route:
    """Split ``path`` into the walk from the outermost anchor holding it.

    The outermost, not the nearest: with nested roots, a folder of the outer root that leads to the inner
    one is inside the workspace and must be walked without following links too.

    :raises RefusedPath: ``path`` is under no anchor, or is not a normalized absolute path (an empty,
        ``.`` or ``..`` component could lead the walk out of the anchor).
    """
    holders = [
        anchor
        for anchor in anchors
        if path == anchor or path.startswith(anchor if anchor.endswith(os.sep) else anchor + os.sep)
    ]
    if not holders:
        raise RefusedPath(
            errno.EXDEV,
            "is outside every workspace root, so the applier does not act on it; ask for the edit again",
            path,
        )
    anchor = min(holders, key=len)
    rest = path[len(anchor) :]
    if rest and not anchor.endswith(os.sep):
        rest = rest[1:]  # the separator after the anchor
    parts = tuple(rest.split(os.sep)) if rest else ()
    if any(part in {"", ".", ".."} for part in parts):
        raise RefusedPath(errno.EINVAL, "is not a normalized absolute path; it is not acted on", path)
    if not parts:
        return Route(anchor, (), "")
    return Route(anchor, parts[:-1], parts[-1])


@dataclass(frozen=True, slots=True)
class Place:
    """Where an operation acts: ``name`` relative to the open folder ``folder``. ``folder`` is None where
    :data:`ANCHORED` is False; ``name`` is then the whole path."""

    folder: int | None
    name: str

    def sibling(self, name: str) -> str:
        """How to name ``name`` in the same folder (relative to ``folder``, or a whole path without one)."""
        return name if self.folder is not None else os.path.join(os.path.dirname(self.name), name)


def _refusal(name: str, folder: int | None, shown: str) -> RefusedPath:
    """Why ``name`` could not be opened as a folder: a link, or something else than a folder."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return RefusedPath(errno.ENOTDIR, _NOT_FOLDER, shown)
    if stat.S_ISLNK(info.st_mode):
        return RefusedPath(errno.ELOOP, _LINK, shown)
    return RefusedPath(errno.ENOTDIR, _NOT_FOLDER, shown)


def _open_folder(name: str, folder: int | None, shown: str) -> int:
    """Open one folder on the way without following a link; every error names the whole path."""
    try:
        return os.open(name, _FOLDER, dir_fd=folder)
    except OSError as error:
        # O_DIRECTORY | O_NOFOLLOW on a link: ENOTDIR on Linux, ELOOP elsewhere, EMLINK on FreeBSD.
        if error.errno in {errno.ENOTDIR, errno.ELOOP, errno.EMLINK}:
            raise _refusal(name, folder, shown) from None
        raise OSError(error.errno, error.strerror, shown) from None


def _walk(way: Route, depth: int) -> int:
    """A descriptor of the anchor's ``depth``-th folder on the way (0: the anchor); the caller closes it."""
    current = _open_folder(way.anchor, None, way.anchor)
    try:
        for index in range(depth):
            following = _open_folder(way.folders[index], current, way.folder_path(index + 1))
            os.close(current)
            current = following
    except BaseException:
        os.close(current)
        raise
    return current


@contextmanager
def reach(path: str, anchors: Iterable[str]) -> Iterator[Place]:
    """The folder holding ``path`` (open, never reached through a link) and ``path``'s name in it.

    The final component is not opened or checked here: each operation on it says itself whether it
    follows a link (``follow_symlinks=False``, ``O_NOFOLLOW``; ``os.replace`` and ``os.unlink`` act on a
    link itself).

    :raises RefusedPath: a folder on the way is a link or not a folder; ``path`` is outside every anchor
        or is an anchor itself (a root is never replaced, moved or deleted).
    :raises OSError: a folder on the way is missing (``FileNotFoundError``) or cannot be opened.
    """
    if not ANCHORED:
        yield Place(None, path)
        return
    way = route(path, anchors)
    if not way.name:
        raise RefusedPath(
            errno.EPERM, "is a workspace root: the applier never replaces, moves or deletes one", path
        )
    folder = _walk(way, len(way.folders))
    try:
        yield Place(folder, way.name)
    finally:
        os.close(folder)


@contextmanager
def open_folder(path: str, anchors: Iterable[str]) -> Iterator[int | None]:
    """A descriptor of the folder at ``path`` itself (a root included), reached as :func:`reach` does;
    None where :data:`ANCHORED` is False (then the caller uses the path).

    :raises RefusedPath: ``path`` or a folder on the way is a link or not a folder, or is outside every
        anchor.
    """
    if not ANCHORED:
        yield None
        return
    way = route(path, anchors)
    if way.name:
        way = Route(way.anchor, (*way.folders, way.name), "")
    folder = _walk(way, len(way.folders))
    try:
        yield folder
    finally:
        os.close(folder)


def lstat(path: str, anchors: Iterable[str]) -> os.stat_result:
    """``os.lstat(path)`` reached without following a link on the way (a final link is described, not
    followed; a root is described through its own descriptor).

    :raises RefusedPath: a folder on the way is a link or not a folder, or ``path`` is outside every anchor.
    :raises OSError: ``path`` or a folder on the way is missing.
    """
    if not ANCHORED:
        return os.lstat(path)
    way = route(path, anchors)
    if not way.name:
        with open_folder(path, anchors) as folder:
            assert folder is not None
            return os.fstat(folder)
    with reach(path, anchors) as place:
        return os.stat(place.name, dir_fd=place.folder, follow_symlinks=False)
