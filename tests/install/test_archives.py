"""Safe extraction of zip and tar.gz assets, with archives built here by zipfile and tarfile.

After every refusal the folder holding the target must look exactly as before: no target, no temporary
folder, and nothing written outside it (``outside`` is a sibling folder an attack would aim at).
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from kandev_lsp.install.archives import (
    ArchiveEntry,
    ArchiveError,
    ArchiveKind,
    CorruptArchiveError,
    UnsafeArchiveError,
    extract_archive,
    member_path,
    plan_extraction,
    symlink_destination,
)

SERVER = b"#!/bin/sh\necho server\n"


# --------------------------------------------------------------------------------------------------
# Building archives


def zip_file(path: Path, entries: list[tuple[str, bytes, int]]) -> Path:
    """``entries``: (name, content, unix mode incl. file type bits); mode 0 means a non-Unix zip."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content, mode in entries:
            info = zipfile.ZipInfo(name)
            if mode:
                info.create_system = 3
                info.external_attr = mode << 16
            else:
                info.create_system = 0
            archive.writestr(info, content)
    return path


def tar_gz(path: Path, entries: list[tarfile.TarInfo | tuple[str, bytes, int]]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for entry in entries:
            if isinstance(entry, tarfile.TarInfo):
                archive.addfile(entry)
                continue
            name, content, mode = entry
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(content), mode
            archive.addfile(info, io.BytesIO(content))
    return path


def tar_link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def tar_dir(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    return info


@pytest.fixture
def place(tmp_path: Path) -> Path:
    """``tmp_path/place`` holds archives and targets; ``tmp_path/outside`` is what an attack aims at."""
    (tmp_path / "outside").mkdir()
    folder = tmp_path / "place"
    folder.mkdir()
    return folder


def contents(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


# --------------------------------------------------------------------------------------------------
# Good archives


def test_zip_extracts_files_dirs_links_and_exec_bits(place: Path) -> None:
    archive = zip_file(
        place / "server.zip",
        [
            ("server/", b"", stat.S_IFDIR | 0o755),
            ("server/bin/server", SERVER, stat.S_IFREG | 0o755),
            ("server/lib/data.txt", b"data", stat.S_IFREG | 0o664),
            ("server/lib/setuid-tool", b"x", stat.S_IFREG | 0o4777),
            ("server/current", b"lib/data.txt", stat.S_IFLNK | 0o777),
            ("README", b"readme", 0),  # made on a non-Unix system: no mode
        ],
    )
    dest = place / "unpacked"

    extract_archive(archive, "zip", dest)

    assert (dest / "server/bin/server").read_bytes() == SERVER
    assert mode_of(dest / "server/bin/server") == 0o755
    assert mode_of(dest / "server/lib/data.txt") == 0o644  # group write dropped
    assert mode_of(dest / "server/lib/setuid-tool") == 0o755  # set-uid and world write dropped
    assert mode_of(dest / "README") == 0o644
    assert os.readlink(dest / "server/current") == "lib/data.txt"
    assert (dest / "server/current").read_bytes() == b"data"
    assert mode_of(dest) == 0o755
    assert sorted(path.name for path in place.iterdir()) == ["server.zip", "unpacked"]


def test_tar_gz_extracts_files_dirs_links_and_exec_bits(place: Path) -> None:
    archive = tar_gz(
        place / "server.tar.gz",
        [
            tar_dir("./server"),
            ("./server/bin/server", SERVER, 0o755),
            ("./server/lib/libx.so.1", b"lib", 0o644),
            tar_link("./server/lib/libx.so", "libx.so.1"),
            tar_link("server/bin/server-alias", "server/bin/server", tarfile.LNKTYPE),
            tar_link("server/up", "../server/lib"),  # climbs, but stays inside
        ],
    )
    dest = place / "unpacked"

    extract_archive(archive, "tar.gz", dest)

    assert (dest / "server/bin/server").read_bytes() == SERVER
    assert mode_of(dest / "server/bin/server") == 0o755
    assert mode_of(dest / "server/lib/libx.so.1") == 0o644
    assert os.readlink(dest / "server/lib/libx.so") == "libx.so.1"
    assert (dest / "server/bin/server-alias").stat().st_ino == (dest / "server/bin/server").stat().st_ino
    assert (dest / "server/up/libx.so.1").read_bytes() == b"lib"
    assert sorted(path.name for path in place.iterdir()) == ["server.tar.gz", "unpacked"]


def test_an_existing_empty_target_folder_is_replaced(place: Path) -> None:
    archive = tar_gz(place / "a.tar.gz", [("tool", SERVER, 0o755)])
    (place / "unpacked").mkdir()

    extract_archive(archive, "tar.gz", place / "unpacked")

    assert (place / "unpacked" / "tool").read_bytes() == SERVER


# --------------------------------------------------------------------------------------------------
# Refused archives leave nothing behind


def zip_attack(place: Path, name: str, content: bytes = b"evil", mode: int = stat.S_IFREG | 0o644) -> Path:
    return zip_file(place / "a.zip", [("good.txt", b"fine", stat.S_IFREG | 0o644), (name, content, mode)])


def tar_attack(place: Path, entry: tarfile.TarInfo | tuple[str, bytes, int]) -> Path:
    return tar_gz(place / "a.tar.gz", [("good.txt", b"fine", 0o644), entry])


ATTACKS = [
    pytest.param("zip", lambda p: zip_attack(p, "../evil"), "../evil", "'..'", id="zip-dotdot"),
    pytest.param(
        "zip",
        lambda p: zip_attack(p, "sub/../../outside/evil"),
        "sub/../../outside/evil",
        "'..'",
        id="zip-nested-dotdot",
    ),
    pytest.param("zip", lambda p: zip_attack(p, "/abs"), "/abs", "absolute path", id="zip-absolute"),
    pytest.param("zip", lambda p: zip_attack(p, "C:/evil"), "C:/evil", "absolute path", id="zip-drive"),
    pytest.param("zip", lambda p: zip_attack(p, "..\\evil"), "..\\evil", "'..'", id="zip-backslash-dotdot"),
    pytest.param(
        "zip",
        lambda p: zip_attack(p, "link", b"../outside", stat.S_IFLNK | 0o777),
        "link",
        "symlink pointing outside",
        id="zip-symlink-out",
    ),
    pytest.param(
        "zip",
        lambda p: zip_attack(p, "link", b"/etc/passwd", stat.S_IFLNK | 0o777),
        "link",
        "symlink to an absolute path",
        id="zip-symlink-abs",
    ),
    pytest.param(
        "zip",
        lambda p: zip_attack(p, "dev", b"", stat.S_IFCHR | 0o644),
        "dev",
        "device file",
        id="zip-device",
    ),
    pytest.param(
        "tar.gz", lambda p: tar_attack(p, ("../evil", b"evil", 0o644)), "../evil", "'..'", id="tar-dotdot"
    ),
    pytest.param(
        "tar.gz",
        lambda p: tar_attack(p, ("/abs", b"evil", 0o644)),
        "/abs",
        "absolute path",
        id="tar-absolute",
    ),
    pytest.param(
        "tar.gz",
        lambda p: tar_attack(p, tar_link("link", "../outside")),
        "link",
        "symlink pointing outside",
        id="tar-symlink-out",
    ),
    pytest.param(
        "tar.gz",
        lambda p: tar_attack(p, tar_link("a/b/link", "../../../outside")),
        "a/b/link",
        "symlink pointing outside",
        id="tar-deep-symlink-out",
    ),
    pytest.param(
        "tar.gz",
        lambda p: tar_attack(p, tar_link("link", "/etc")),
        "link",
        "symlink to an absolute path",
        id="tar-symlink-abs",
    ),
    pytest.param(
        "tar.gz",
        lambda p: tar_attack(p, tar_link("hard", "/etc/passwd", tarfile.LNKTYPE)),
        "hard",
        "absolute path",
        id="tar-hardlink-abs",
    ),
    pytest.param(
        "tar.gz",
        lambda p: tar_attack(p, tar_link("hard", "../outside/x", tarfile.LNKTYPE)),
        "hard",
        "'..'",
        id="tar-hardlink-out",
    ),
    pytest.param(
        "tar.gz",
        lambda p: tar_attack(p, tar_link("hard", "missing", tarfile.LNKTYPE)),
        "hard",
        "not a file in the archive",
        id="tar-hardlink-missing",
    ),
    pytest.param(
        "tar.gz",
        lambda p: tar_attack(p, tar_link("dev", "", tarfile.CHRTYPE)),
        "dev",
        "device file",
        id="tar-chardev",
    ),
    pytest.param(
        "tar.gz",
        lambda p: tar_attack(p, tar_link("fifo", "", tarfile.FIFOTYPE)),
        "fifo",
        "FIFO",
        id="tar-fifo",
    ),
    pytest.param(
        "tar.gz",
        lambda p: tar_attack(p, ("good.txt", b"again", 0o644)),
        "good.txt",
        "more than once",
        id="tar-duplicate",
    ),
]


@pytest.mark.parametrize(("kind", "build", "entry", "reason"), ATTACKS)
def test_unsafe_entries_are_refused_and_nothing_is_left(
    place: Path, kind: ArchiveKind, build: Callable[[Path], Path], entry: str, reason: str
) -> None:
    archive = build(place)
    before = contents(place.parent)

    with pytest.raises(UnsafeArchiveError) as caught:
        extract_archive(archive, kind, place / "unpacked")

    assert caught.value.entry == entry
    assert repr(entry) in str(caught.value) and reason in str(caught.value)
    assert archive.name in str(caught.value)
    assert contents(place.parent) == before


def test_writing_through_a_symlink_entry_is_refused(place: Path) -> None:
    # "lnk -> sub" is harmless alone; a later "lnk/file" would write through it.
    archive = tar_gz(place / "a.tar.gz", [tar_dir("sub"), tar_link("lnk", "sub"), ("lnk/file", b"x", 0o644)])

    with pytest.raises(UnsafeArchiveError, match=r"lies under 'lnk', a symlink"):
        extract_archive(archive, "tar.gz", place / "unpacked")
    assert sorted(path.name for path in place.iterdir()) == ["a.tar.gz"]


def test_symlink_chain_escaping_on_disk_is_refused(place: Path) -> None:
    # Each link looks inside on its own ("b/.." is "."), but b -> . makes "b/.." the parent folder.
    archive = tar_gz(place / "a.tar.gz", [tar_link("b", "."), tar_link("x", "b/..")])
    before = contents(place.parent)

    with pytest.raises(
        UnsafeArchiveError, match="resolves outside the target folder through other links"
    ) as caught:
        extract_archive(archive, "tar.gz", place / "unpacked")

    assert caught.value.entry == "x"
    assert contents(place.parent) == before


def test_corrupt_archives_are_reported_and_leave_nothing(place: Path) -> None:
    good = tar_gz(place / "good.tar.gz", [("tool", os.urandom(200_000), 0o755)])
    truncated = place / "cut.tar.gz"
    truncated.write_bytes(good.read_bytes()[:50_000])
    not_zip = place / "x.zip"
    not_zip.write_bytes(b"PK but not really")
    before = contents(place.parent)

    with pytest.raises(CorruptArchiveError, match=r"cannot read cut.tar.gz as an archive"):
        extract_archive(truncated, "tar.gz", place / "unpacked")
    with pytest.raises(CorruptArchiveError, match=r"cannot read x.zip"):
        extract_archive(not_zip, "zip", place / "unpacked")
    with pytest.raises(CorruptArchiveError):
        extract_archive(good, "zip", place / "unpacked")  # declared the wrong kind

    assert contents(place.parent) == before


def test_content_over_the_limit_is_refused(place: Path) -> None:
    archive = zip_file(place / "bomb.zip", [("zeros", bytes(2_000_000), stat.S_IFREG | 0o644)])

    with pytest.raises(ArchiveError, match="larger than 1000000 bytes"):
        extract_archive(archive, "zip", place / "unpacked", max_bytes=1_000_000)
    assert sorted(path.name for path in place.iterdir()) == ["bomb.zip"]


def test_a_non_empty_target_is_not_overwritten(place: Path) -> None:
    archive = tar_gz(place / "a.tar.gz", [("tool", SERVER, 0o755)])
    (place / "unpacked").mkdir()
    (place / "unpacked" / "keep").write_text("mine")

    with pytest.raises(ArchiveError, match="already exists and is not an empty folder"):
        extract_archive(archive, "tar.gz", place / "unpacked")

    assert contents(place) == ["a.tar.gz", "unpacked", "unpacked/keep"]


# --------------------------------------------------------------------------------------------------
# The pure checks, with plain values


@pytest.mark.parametrize(
    ("name", "expected"),
    [("a/b", ("a", "b")), ("./a//b/", ("a", "b")), ("a\\b", ("a", "b")), (".", ()), ("", ())],
)
def test_member_path_normalises(name: str, expected: tuple[str, ...]) -> None:
    assert member_path(name) == expected


@pytest.mark.parametrize("name", ["/a", "\\a", "C:a", "c:\\a", "a/../b", "..", "a/\x00"])
def test_member_path_refuses(name: str) -> None:
    with pytest.raises(ValueError):
        member_path(name)


@pytest.mark.parametrize(
    ("path", "target", "expected"),
    [
        (("a", "l"), "b", ("a", "b")),
        (("a", "l"), "../b", ("b",)),
        (("a", "b", "l"), "../../c/./d", ("c", "d")),
        (("l",), ".", ()),
    ],
)
def test_symlink_destination(path: tuple[str, ...], target: str, expected: tuple[str, ...]) -> None:
    assert symlink_destination(path, target) == expected


@pytest.mark.parametrize("target", ["../x", "a/../../x", "/x", "C:\\x", "", "..\\x"])
def test_symlink_destination_refuses(target: str) -> None:
    with pytest.raises(ValueError):
        symlink_destination(("l",), target)


def test_plan_orders_dirs_files_hardlinks_symlinks_and_keeps_repeated_dirs() -> None:
    plan = plan_extraction(
        Path("a.tar.gz"),
        [
            ArchiveEntry("s", "symlink", link="f"),
            ArchiveEntry("h", "hardlink", link="./f"),
            ArchiveEntry("f", "file"),
            ArchiveEntry("d", "dir"),
            ArchiveEntry("d/", "dir"),
            ArchiveEntry("./", "dir"),
        ],
    )
    assert [(item.path, item.entry.type) for item in plan] == [
        (("d",), "dir"),
        (("d",), "dir"),
        (("f",), "file"),
        (("h",), "hardlink"),
        (("s",), "symlink"),
    ]
    assert plan[3].link_path == ("f",)


@pytest.mark.parametrize(
    ("entries", "bad", "reason"),
    [
        ([ArchiveEntry("f", "file"), ArchiveEntry("f/g", "file")], "f/g", "lies under 'f', a file"),
        ([ArchiveEntry("d", "dir"), ArchiveEntry("d", "file")], "d", "more than once"),
        ([ArchiveEntry(".", "file")], ".", "names the target folder itself"),
        (
            [ArchiveEntry("h", "hardlink", link="d"), ArchiveEntry("d", "dir")],
            "h",
            "not a file in the archive",
        ),
    ],
)
def test_plan_refuses(entries: list[ArchiveEntry], bad: str, reason: str) -> None:
    with pytest.raises(UnsafeArchiveError) as caught:
        plan_extraction(Path("a.zip"), entries)
    assert caught.value.entry == bad
    assert reason in caught.value.reason
