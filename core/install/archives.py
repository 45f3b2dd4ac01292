"""Extract zip and tar.gz release assets, refusing any entry that could write outside the target folder.

Two steps. :func:`plan_extraction` is pure: it takes the entries as plain values and rejects absolute
paths, ``..``, links pointing outside, device files, duplicates and entries under a file or a link, naming
the offending entry. :func:`extract_archive` reads the archive, plans, and writes into a temporary folder
beside the target, creating symlinks last (so nothing is ever written through one) and checking where each
resolves on disk; the folder is renamed into place only when everything succeeded, so a refused or broken
archive leaves nothing behind.

Permissions are simplified, never copied: executables get 0o755, other files 0o644, folders 0o755.
set-uid bits and group/world write bits from an archive never reach the disk.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from kandev_lsp.errors import KandevLspError

ArchiveKind = Literal["zip", "tar.gz"]
EntryType = Literal["file", "dir", "symlink", "hardlink", "special"]
RelPath = tuple[str, ...]

#: Extracted content larger than this is refused: a guard against archive bombs, far above any server.
DEFAULT_MAX_BYTES = 4 * 1024**3
_COPY_CHUNK = 1024 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")


class ArchiveError(KandevLspError):
    """An archive could not be extracted; nothing was written to the target folder."""

    def __init__(self, message: str, *, archive: Path) -> None:
        self.archive = archive
        super().__init__(message)


class UnsafeArchiveError(ArchiveError):
    """An entry would escape the target folder or is a kind of file that is never extracted."""

    def __init__(self, archive: Path, entry: str, reason: str) -> None:
        self.entry = entry
        self.reason = reason
        super().__init__(
            f"refusing to extract {archive.name}: entry {entry!r} {reason}. Nothing was extracted; the "
            "archive is damaged or malicious. Check the mirror and the pinned digest.",
            archive=archive,
        )


class CorruptArchiveError(ArchiveError):
    """The archive cannot be read (truncated, bad checksum, unsupported feature)."""


@dataclass(frozen=True, slots=True)
class ArchiveEntry:
    """One archive member as plain data: its stored name, what it is, its mode, and a link's target.

    ``link`` is the symlink's target text, or for a hard link the name of the member it links to.
    """

    name: str
    type: EntryType
    mode: int = 0o644
    link: str | None = None


@dataclass(frozen=True, slots=True)
class PlannedEntry:
    """An entry that passed every check: its normalised path inside the target and what to create."""

    entry: ArchiveEntry
    path: RelPath
    link_path: RelPath | None = None  # a hard link's source, normalised

    @property
    def executable(self) -> bool:
        return bool(self.entry.mode & 0o111)


# --------------------------------------------------------------------------------------------------
# Pure planning


def member_path(name: str) -> RelPath:
    """The normalised relative path of a member name; ``()`` is the target folder itself.

    Backslashes count as separators (as they would on Windows), ``.`` and empty segments are dropped.
    Raises :class:`ValueError` for a NUL character, an absolute path or drive, or any ``..`` segment.
    """
    if "\x00" in name:
        raise ValueError("has a NUL character in its name")
    text = name.replace("\\", "/")
    if text.startswith("/") or _DRIVE.match(text):
        raise ValueError("has an absolute path")
    parts = tuple(part for part in text.split("/") if part not in ("", "."))
    if ".." in parts:
        raise ValueError("has a '..' path segment")
    return parts


def symlink_destination(path: RelPath, target: str) -> RelPath:
    """Where a symlink at ``path`` pointing to ``target`` lands, resolved lexically inside the folder.

    Raises :class:`ValueError` when the target is absolute or climbs above the target folder. (Links
    through other links are checked on disk after extraction, since only the disk knows them all.)
    """
    if not target or "\x00" in target:
        raise ValueError("is a symlink with an empty or invalid target")
    text = target.replace("\\", "/")
    if text.startswith("/") or _DRIVE.match(text):
        raise ValueError(f"is a symlink to an absolute path ({target!r})")
    resolved = list(path[:-1])
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                raise ValueError(f"is a symlink pointing outside the target folder ({target!r})")
            resolved.pop()
        else:
            resolved.append(part)
    return tuple(resolved)


def plan_extraction(archive: Path, entries: Sequence[ArchiveEntry]) -> list[PlannedEntry]:
    """Checks every entry of ``archive`` and returns them in creation order: folders, files, hard links,
    symlinks. Touches no file; ``archive`` only names the archive in errors.

    Raises :class:`UnsafeArchiveError` for the first entry refused: absolute or ``..`` names, device
    files, FIFOs and sockets, symlinks leaving the folder, hard links to anything but a regular file in
    the archive, a name used twice (folders excepted), and any entry under a file or link (which would
    write through a link).
    """
    kinds: dict[RelPath, EntryType] = {}
    planned: list[PlannedEntry] = []
    for entry in entries:
        try:
            path = member_path(entry.name)
            if entry.type == "special":
                raise ValueError("is a device file, FIFO or socket")
            if not path:
                if entry.type != "dir":
                    raise ValueError("is not a folder but names the target folder itself")
                continue
            previous = kinds.get(path)
            if previous is not None and not (previous == "dir" and entry.type == "dir"):
                raise ValueError("appears more than once in the archive")
            link_path: RelPath | None = None
            if entry.type == "symlink":
                symlink_destination(path, entry.link or "")
            elif entry.type == "hardlink":
                link_path = member_path(entry.link or "")
        except ValueError as exc:
            raise UnsafeArchiveError(archive, entry.name, str(exc)) from None
        kinds[path] = entry.type
        planned.append(PlannedEntry(entry, path, link_path))

    for item in planned:
        for depth in range(1, len(item.path)):
            parent_kind = kinds.get(item.path[:depth])
            if parent_kind not in (None, "dir"):
                raise UnsafeArchiveError(
                    archive, item.entry.name, f"lies under {'/'.join(item.path[:depth])!r}, a {parent_kind}"
                )
        if item.link_path is not None and kinds.get(item.link_path) != "file":
            raise UnsafeArchiveError(
                archive,
                item.entry.name,
                f"is a hard link to {item.entry.link!r}, which is not a file in the archive",
            )
    order: dict[EntryType, int] = {"dir": 0, "file": 1, "hardlink": 2, "symlink": 3}
    return sorted(planned, key=lambda item: order[item.entry.type])


# --------------------------------------------------------------------------------------------------
# Reading archives


class _Reader:
    """Lists entries of an open archive and opens regular files for reading."""

    def entries(self) -> list[ArchiveEntry]:
        raise NotImplementedError

    def open(self, entry: ArchiveEntry) -> IO[bytes]:
        raise NotImplementedError


class _ZipReader(_Reader):
    def __init__(self, archive: zipfile.ZipFile) -> None:
        self._zip = archive
        self._infos: dict[str, zipfile.ZipInfo] = {}

    def entries(self) -> list[ArchiveEntry]:
        result = []
        for info in self._zip.infolist():
            self._infos.setdefault(info.filename, info)
            result.append(self._entry(info))
        return result

    def _entry(self, info: zipfile.ZipInfo) -> ArchiveEntry:
        # Unix permissions live in the high 16 bits of external_attr, only for zips made on Unix.
        mode = (info.external_attr >> 16) if info.create_system == 3 else 0
        file_type = stat.S_IFMT(mode)
        if info.is_dir() or file_type == stat.S_IFDIR:
            return ArchiveEntry(info.filename, "dir", 0o755)
        if file_type == stat.S_IFLNK:
            with self._zip.open(info) as link_text:  # a link target is short; never read a "bomb"
                target = link_text.read(4096).decode("utf-8", errors="surrogateescape")
            return ArchiveEntry(info.filename, "symlink", 0o777, target)
        if file_type not in (0, stat.S_IFREG):
            return ArchiveEntry(info.filename, "special", mode)
        return ArchiveEntry(info.filename, "file", stat.S_IMODE(mode) or 0o644)

    def open(self, entry: ArchiveEntry) -> IO[bytes]:
        return self._zip.open(self._infos[entry.name])


class _TarReader(_Reader):
    def __init__(self, archive: tarfile.TarFile) -> None:
        self._tar = archive
        self._members: dict[str, tarfile.TarInfo] = {}

    def entries(self) -> list[ArchiveEntry]:
        result = []
        for member in self._tar.getmembers():
            self._members.setdefault(member.name, member)
            result.append(self._entry(member))
        return result

    @staticmethod
    def _entry(member: tarfile.TarInfo) -> ArchiveEntry:
        if member.isdir():
            return ArchiveEntry(member.name, "dir", 0o755)
        if member.issym():
            return ArchiveEntry(member.name, "symlink", 0o777, member.linkname)
        if member.islnk():
            return ArchiveEntry(member.name, "hardlink", member.mode, member.linkname)
        if member.isreg():
            return ArchiveEntry(member.name, "file", member.mode)
        return ArchiveEntry(member.name, "special", member.mode)

    def open(self, entry: ArchiveEntry) -> IO[bytes]:
        stream = self._tar.extractfile(self._members[entry.name])
        if stream is None:  # pragma: no cover - only regular files are opened
            raise OSError(f"{entry.name!r} has no content")
        return stream


# --------------------------------------------------------------------------------------------------
# Extraction


def extract_archive(
    archive: Path,
    kind: ArchiveKind,
    dest_dir: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> None:
    """Extract ``archive`` (a ``"zip"`` or ``"tar.gz"`` file) so its members end up in ``dest_dir``.

    ``dest_dir`` must not exist (an empty folder is replaced); its parent is created if needed. Entries
    are written to a temporary folder beside it, which is renamed to ``dest_dir`` only when every entry
    was checked and written. Raises :class:`UnsafeArchiveError` naming the first refused entry,
    :class:`CorruptArchiveError` for an unreadable archive, :class:`ArchiveError` when the content exceeds
    ``max_bytes`` or ``dest_dir`` is in the way; in every case nothing is left behind.

    This is blocking file I/O: from async code, run it with :func:`asyncio.to_thread`.
    """
    if kind not in ("zip", "tar.gz"):
        raise ArchiveError(f"cannot extract {archive.name}: unknown archive kind {kind!r}", archive=archive)
    if dest_dir.is_symlink() or (dest_dir.exists() and (not dest_dir.is_dir() or any(dest_dir.iterdir()))):
        raise ArchiveError(
            f"cannot extract {archive.name} into {dest_dir}: it already exists and is not an empty folder. "
            "Remove it first.",
            archive=archive,
        )
    dest_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest_dir.name}.", suffix=".extracting", dir=dest_dir.parent))
    done = False
    try:
        with _open_reader(archive, kind) as reader:
            planned = plan_extraction(archive, _read_entries(archive, reader))
            _write_entries(archive, reader, planned, staging, max_bytes)
        os.chmod(staging, 0o755)
        try:
            os.rename(staging, dest_dir)
        except OSError as exc:
            raise ArchiveError(
                f"cannot move the extracted {archive.name} into {dest_dir}: {exc.strerror}. Remove it first.",
                archive=archive,
            ) from None
        done = True
    finally:
        if not done:
            shutil.rmtree(staging, ignore_errors=True)


# Errors a damaged archive raises while being read, from the archive modules and the decompressors.
_READ_ERRORS = (
    zipfile.BadZipFile,
    tarfile.TarError,
    gzip.BadGzipFile,
    EOFError,
    zlib.error,
    RuntimeError,  # an encrypted zip entry
    NotImplementedError,  # a zip compression method this Python lacks
)


@contextlib.contextmanager
def _open_reader(archive: Path, kind: ArchiveKind) -> Iterator[_Reader]:
    """The archive of ``kind``, open for reading; an unreadable one is a :class:`CorruptArchiveError`."""
    try:
        handle = _open_handle(archive, kind)
    except FileNotFoundError:
        raise
    except (*_READ_ERRORS, OSError) as exc:
        raise _corrupt(archive, exc) from None
    with handle:
        yield _ZipReader(handle) if isinstance(handle, zipfile.ZipFile) else _TarReader(handle)


def _open_handle(archive: Path, kind: ArchiveKind) -> zipfile.ZipFile | tarfile.TarFile:
    if kind == "zip":
        return zipfile.ZipFile(archive)
    return tarfile.open(archive, "r:gz")


def _read_entries(archive: Path, reader: _Reader) -> list[ArchiveEntry]:
    try:
        return reader.entries()
    except (*_READ_ERRORS, OSError) as exc:
        raise _corrupt(archive, exc) from None


def _corrupt(archive: Path, exc: BaseException) -> CorruptArchiveError:
    return CorruptArchiveError(
        f"cannot read {archive.name} as an archive: {type(exc).__name__}: {exc}. The download may be "
        "damaged or not the archive kind the plugin declared.",
        archive=archive,
    )


class _Budget:
    """Bytes still allowed; counts what is actually written, not what the headers claim."""

    def __init__(self, archive: Path, limit: int) -> None:
        self.archive = archive
        self.limit = limit
        self.left = limit

    def spend(self, size: int) -> None:
        self.left -= size
        if self.left < 0:
            raise ArchiveError(
                f"refusing to extract {self.archive.name}: its content is larger than {self.limit} bytes. "
                "Check that the mirror serves the right file.",
                archive=self.archive,
            )


def _write_entries(
    archive: Path, reader: _Reader, planned: Sequence[PlannedEntry], staging: Path, max_bytes: int
) -> None:
    budget = _Budget(archive, max_bytes)
    for item in planned:
        target = staging.joinpath(*item.path)
        kind = item.entry.type
        if kind == "dir":
            target.mkdir(mode=0o755, parents=True, exist_ok=True)
            os.chmod(target, 0o755)
            continue
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        if kind == "file":
            _write_file(archive, reader, item, target, budget)
        elif kind == "hardlink":
            assert item.link_path is not None
            os.link(staging.joinpath(*item.link_path), target, follow_symlinks=False)
        else:
            assert item.entry.link is not None
            os.symlink(item.entry.link, target)
    _check_links_on_disk(archive, planned, staging)


def _write_file(archive: Path, reader: _Reader, item: PlannedEntry, target: Path, budget: _Budget) -> None:
    mode = 0o755 if item.executable else 0o644
    # O_EXCL and O_NOFOLLOW: never write into something that is already there, least of all a link.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(target, flags, mode)
    with os.fdopen(fd, "wb") as out:
        try:
            with reader.open(item.entry) as source:
                for chunk in _chunks(source):
                    budget.spend(len(chunk))
                    out.write(chunk)
        except _READ_ERRORS as exc:
            raise _corrupt(archive, exc) from None
    os.chmod(target, mode)  # os.open's mode is filtered by the umask; the result must not depend on it


def _chunks(source: IO[bytes]) -> Iterator[bytes]:
    while chunk := source.read(_COPY_CHUNK):
        yield chunk


def _check_links_on_disk(archive: Path, planned: Sequence[PlannedEntry], staging: Path) -> None:
    """Each symlink, followed through every other link on disk, must stay inside the folder.

    The lexical check in :func:`plan_extraction` cannot see chains such as ``a -> .`` plus ``b -> a/..``.
    """
    root = os.path.realpath(staging)
    for item in planned:
        if item.entry.type != "symlink":
            continue
        resolved = os.path.realpath(staging.joinpath(*item.path))
        if resolved != root and not resolved.startswith(root + os.sep):
            raise UnsafeArchiveError(
                archive,
                item.entry.name,
                f"is a symlink that resolves outside the target folder through other links ({item.entry.link!r})",
            )
