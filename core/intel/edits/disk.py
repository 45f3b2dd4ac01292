"""The real disk under the commit's :class:`~kandev_lsp.intel.edits.commit.FileSystem` protocol.

Every operation that changes the disk (a temporary file written, a file replaced, kept, created, moved,
deleted, a folder made or removed) reaches its path through :mod:`~kandev_lsp.intel.edits.anchored`:
from the workspace root's descriptor, folder by folder, never through a symbolic link (B8.11). A folder
swapped for a link after the commit's check makes the operation fail with
:class:`~kandev_lsp.intel.edits.anchored.RefusedPath`, and the commit rolls back; nothing is written
outside the workspace. A final component that is a link is refused too (:meth:`DiskFileSystem.kind`):
the applier edits files, never links.

Reads (:meth:`DiskFileSystem.read_bytes`) go by path through
:func:`~kandev_lsp.intel.files.regular.read_regular`: their bytes are only compared with the plan's digests,
and the commit's recheck of real paths reports a link that appeared as a conflict before any write.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterable
from typing import Final

from kandev_lsp.intel.edits import anchored
from kandev_lsp.intel.edits.anchored import Place, RefusedPath
from kandev_lsp.intel.edits.plan import PathKind
from kandev_lsp.intel.files.regular import read_regular

__all__ = ["DiskFileSystem"]

#: Marks the applier's temporary and kept files, so a person finding a leftover knows what it is.
_MARK: Final = "kandev-edit"

#: A new file of the applier's own: created here or not at all, never through a link.
_NEW: Final = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
#: An original read for a copy: never through a link, never waiting on a FIFO.
_ORIGINAL: Final = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def _side_name(path: str, suffix: str) -> str:
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}.{secrets.token_hex(4)}.{_MARK}-{suffix}")


def _set_mode(descriptor: int, path: str, mode: int) -> None:
    """``chmod`` the open file itself where the platform can (no name to re-point), else by path."""
    os.chmod(descriptor if os.chmod in os.supports_fd else path, mode)


def _copy_beside(place: Place, kept: str) -> None:
    """Copy the file at ``place`` to ``kept`` in the same folder with its mode and times (``copy2`` with
    descriptors: neither end is reached through a link)."""
    source = os.open(place.name, _ORIGINAL, dir_fd=place.folder)
    try:
        info = os.fstat(source)
        target = os.open(kept, _NEW, 0o600, dir_fd=place.folder)
        try:
            with open(source, "rb", closefd=False) as reader, open(target, "wb", closefd=False) as writer:
                shutil.copyfileobj(reader, writer)
            os.chmod(target, stat.S_IMODE(info.st_mode))
            os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
        finally:
            os.close(target)
    finally:
        os.close(source)


class DiskFileSystem:
    """The real disk, every change anchored at a workspace root (see the module docstring).

    :param roots: the folders every path must lie under (the plan's workspace roots, real paths). The
        default, the file system's root, still walks every folder without following a link; the commit
        passes the plan's roots.
    """

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self._anchors: tuple[str, ...] = tuple(roots) or (os.sep,)

    def kind(self, path: str) -> PathKind:
        try:
            info = anchored.lstat(path, self._anchors)
        except RefusedPath:
            raise
        except OSError:
            return "missing"
        if stat.S_ISLNK(info.st_mode):
            raise RefusedPath(
                errno.ELOOP,
                "is a symbolic link: the applier edits, creates, moves and deletes files and folders, never "
                "links (it may have appeared after the edit was checked); see what it points to before "
                "asking for the edit again",
                path,
            )
        return "directory" if stat.S_ISDIR(info.st_mode) else "file"

    def real_path(self, path: str) -> str:
        return os.path.realpath(path)

    def read_bytes(self, path: str) -> bytes | None:
        try:
            return read_regular(path).data  # a FIFO or device: None at once, never waited on
        except OSError:
            return None

    def mode(self, path: str) -> int | None:
        try:
            return stat.S_IMODE(anchored.lstat(path, self._anchors).st_mode)
        except OSError:
            return None

    def write_temp(self, path: str, data: bytes, mode: int | None) -> str:
        temp = _side_name(path, "new")
        with anchored.reach(temp, self._anchors) as place:
            descriptor = os.open(place.name, _NEW, 0o666, dir_fd=place.folder)
            try:
                with os.fdopen(descriptor, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    if mode is not None:
                        _set_mode(handle.fileno(), temp, mode)
                    os.fsync(handle.fileno())
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(place.name, dir_fd=place.folder)
                raise
        return temp

    def replace(self, source: str, target: str) -> None:
        with anchored.reach(source, self._anchors) as old, anchored.reach(target, self._anchors) as new:
            os.replace(old.name, new.name, src_dir_fd=old.folder, dst_dir_fd=new.folder)

    def keep(self, path: str) -> str:
        kept = _side_name(path, "orig")
        with anchored.reach(path, self._anchors) as place:
            beside = place.sibling(os.path.basename(kept))
            try:
                os.link(
                    place.name,
                    beside,
                    src_dir_fd=place.folder,
                    dst_dir_fd=place.folder,
                    follow_symlinks=False,
                )
            except OSError:  # no hard links here (some file systems, another device): a copy keeps the bytes
                try:
                    if place.folder is None:
                        shutil.copy2(path, kept, follow_symlinks=False)
                    else:
                        _copy_beside(place, beside)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(beside, dir_fd=place.folder)  # a half-made copy is nobody's file
                    raise
        return kept

    def aside_name(self, path: str) -> str:
        return _side_name(path, "deleted")

    def remove(self, path: str) -> None:
        with anchored.reach(path, self._anchors) as place:
            os.unlink(place.name, dir_fd=place.folder)

    def remove_tree(self, path: str) -> None:
        with anchored.reach(path, self._anchors) as place:
            shutil.rmtree(place.name, dir_fd=place.folder)

    def make_folder(self, path: str) -> None:
        with anchored.reach(path, self._anchors) as place:
            os.mkdir(place.name, dir_fd=place.folder)

    def remove_folder(self, path: str) -> None:
        with anchored.reach(path, self._anchors) as place:
            os.rmdir(place.name, dir_fd=place.folder)

    def folder_empty(self, path: str) -> bool:
        with (
            anchored.open_folder(path, self._anchors) as folder,
            os.scandir(path if folder is None else folder) as entries,
        ):
            return next(entries, None) is None

    def sync_folder(self, path: str) -> None:
        if not anchored.ANCHORED:
            return  # no folder descriptors here (Windows): nothing to fsync
        with contextlib.suppress(OSError), anchored.open_folder(path, self._anchors) as folder:
            assert folder is not None
            os.fsync(folder)
