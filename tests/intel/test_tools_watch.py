"""DiskWatch: the re-sync before each tool call (B8.12) takes a ``stat`` only of the files inotify says
changed. Every way a file can change under the tools must still make it "changed" (real files, real
inotify; Linux only, as the watch itself)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from inotify_simple import Event, flags
from kandev_lsp.intel.runtime import watch as watch_module
from kandev_lsp.intel.runtime.watch import DiskWatch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@pytest.fixture
def disk() -> Iterator[DiskWatch]:
    watch = DiskWatch()
    yield watch
    watch.close()


def _tree(tmp_path: Path) -> tuple[str, Path, Path]:
    root = tmp_path / "root"
    (root / "src" / "pkg").mkdir(parents=True)
    target = root / "src" / "pkg" / "mod.py"
    target.write_text("x = 1\n")
    return os.path.realpath(root), Path(os.path.realpath(target)), Path(os.path.realpath(root / "src"))


def _watched(disk: DiskWatch, path: Path, root: str) -> None:
    """Ask about ``path`` until it is trusted: first answer False (take a stat), then True."""
    disk.drain()
    assert not disk.unchanged(str(path), root)  # never asked before: the caller takes its stat
    disk.drain()
    assert disk.unchanged(str(path), root) and disk.active


def test_a_watched_file_is_unchanged_until_it_is_written(tmp_path: Path, disk: DiskWatch) -> None:
    root, target, _ = _tree(tmp_path)
    _watched(disk, target, root)
    disk.drain()
    assert disk.unchanged(str(target), root)  # nothing happened: no stat needed
    target.write_text("x = 2\n")
    disk.drain()
    assert not disk.unchanged(str(target), root)
    disk.drain()
    assert disk.unchanged(str(target), root)  # that change was handled by the caller's stat


@pytest.mark.parametrize(
    "change",
    [
        "touch",
        "append",
        "replace_by_rename",  # an editor's atomic save: a new inode at the path
        "delete_and_recreate",
        "write_through_a_hard_link",
        "swap_for_a_symlink",
    ],
)
def test_every_kind_of_change_is_reported(tmp_path: Path, disk: DiskWatch, change: str) -> None:
    root, target, _ = _tree(tmp_path)
    _watched(disk, target, root)
    if change == "touch":
        os.utime(target, ns=(1, 1))
    elif change == "append":
        with open(target, "a") as handle:
            handle.write("y = 2\n")
    elif change == "replace_by_rename":
        staged = target.with_name("mod.py.tmp")
        staged.write_text("x = 3\n")
        os.replace(staged, target)
    elif change == "delete_and_recreate":
        target.unlink()
        target.write_text("x = 4\n")
    elif change == "write_through_a_hard_link":
        elsewhere = tmp_path / "link.py"
        os.link(target, elsewhere)
        with open(elsewhere, "a") as handle:
            handle.write("z = 5\n")
    else:
        (tmp_path / "outside.py").write_text("secret = 1\n")
        target.unlink()
        target.symlink_to(tmp_path / "outside.py")
    disk.drain()
    assert not disk.unchanged(str(target), root)
    if change in ("replace_by_rename", "delete_and_recreate"):
        # The new file at the path is watched afresh: its own later writes are reported too.
        disk.drain()
        assert disk.unchanged(str(target), root)
        target.write_text("x = 6\n")
        disk.drain()
        assert not disk.unchanged(str(target), root)


@pytest.mark.parametrize("swap", ["rename_folder", "folder_to_symlink"])
def test_a_folder_on_the_path_replaced_makes_every_file_changed(
    tmp_path: Path, disk: DiskWatch, swap: str
) -> None:
    root, target, src = _tree(tmp_path)
    other = Path(root) / "other.py"
    other.write_text("o = 1\n")
    _watched(disk, target, root)
    _watched(disk, other, root)
    copy = tmp_path / "copy"
    (copy / "pkg").mkdir(parents=True)
    (copy / "pkg" / "mod.py").write_text("x = 'replaced'\n")
    os.rename(src, tmp_path / "old-src")
    if swap == "rename_folder":
        os.rename(copy, src)  # the path now names another folder whose files were never watched
    else:
        src.symlink_to(copy)
    disk.drain()
    assert not disk.unchanged(str(target), root)
    assert not disk.unchanged(str(other), root)  # when in doubt, every file is checked


def test_a_new_file_in_a_watched_folder_does_not_disturb_the_others(tmp_path: Path, disk: DiskWatch) -> None:
    root, target, _ = _tree(tmp_path)
    _watched(disk, target, root)
    (target.parent / "new.py").write_text("n = 1\n")
    (target.parent / "__pycache__").mkdir()
    disk.drain()
    assert disk.unchanged(str(target), root)


def test_a_path_outside_its_root_is_never_trusted(tmp_path: Path, disk: DiskWatch) -> None:
    root, _, _ = _tree(tmp_path)
    outside = tmp_path / "outside.py"
    outside.write_text("o = 1\n")
    for _ in range(3):
        disk.drain()
        assert not disk.unchanged(str(outside), root)


def test_without_inotify_every_file_is_checked(
    tmp_path: Path, disk: DiskWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watch_module, "_OPEN", lambda: None)
    root, target, _ = _tree(tmp_path)
    for _ in range(3):
        disk.drain()
        assert not disk.unchanged(str(target), root)
    assert not disk.active


def test_an_overflowed_queue_makes_every_file_changed(tmp_path: Path, disk: DiskWatch) -> None:
    root, target, _ = _tree(tmp_path)
    _watched(disk, target, root)
    assert not disk._apply([Event(-1, flags.Q_OVERFLOW, 0, "")])


def test_files_that_appear_or_leave_a_watched_folder_are_collected(tmp_path: Path, disk: DiskWatch) -> None:
    """A file the agent creates next to a file a server answered about must reach that server
    (didChangeWatchedFiles), or its imports stay unresolved (user trial: a new module's references were
    missing until the workspace was re-activated)."""
    root, target, _ = _tree(tmp_path)
    _watched(disk, target, root)
    new = target.with_name("new.py")
    new.write_text("y = 1\n")
    (target.parent / "sub").mkdir()  # a folder is not a file to announce
    staged = target.with_name("saved.py.tmp")  # an editor's atomic save of a new file: tmp, then rename
    staged.write_text("z = 1\n")
    os.replace(staged, target.with_name("saved.py"))
    disk.drain()
    assert disk.created == {str(new), str(target.with_name("saved.py"))}
    assert disk.removed == set()
    new.unlink()
    disk.drain()
    assert disk.created == set() and disk.removed == {str(new)}
    disk.drain()
    assert disk.created == set() and disk.removed == set()


def test_open_makes_the_instance_before_any_file_is_watched(
    tmp_path: Path, disk: DiskWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool opens its servers' watch while the server starts (off the first call's cold path)."""
    opened: list[object] = []
    real_open = watch_module._OPEN

    def counted() -> object:
        opened.append(real_open())
        return opened[-1]

    monkeypatch.setattr(watch_module, "_OPEN", counted)
    assert disk.open() and disk.active and len(opened) == 1
    root, target, _ = _tree(tmp_path)
    _watched(disk, target, root)
    assert len(opened) == 1  # the first watch used it
    monkeypatch.setattr(watch_module, "_OPEN", lambda: None)
    without = DiskWatch()
    assert not without.open() and not without.active
    without.drain()
    assert not without.unchanged(str(target), root)  # a stat per file, as before


def test_the_whole_tree_is_watched_and_a_lost_watch_is_caught_up(tmp_path: Path, disk: DiskWatch) -> None:
    """Issue 20 item 3: every folder of a project is watched (vendored ones skipped), so a file no tool
    asked about is reported written, created or deleted; a new folder's files count as created; after
    the watches were lost, walking the tree again reports what changed meanwhile."""
    root, target, src = _tree(tmp_path)
    other = src / "other.py"
    other.write_text("a = 1\n")
    vendored = Path(root) / "node_modules" / "dep.js"
    vendored.parent.mkdir()
    vendored.write_text("x\n")
    disk.drain()
    assert not disk.walked(root)
    disk.watch_tree(root)
    assert disk.walked(root) and disk.created == set() and disk.modified == set()
    layout = disk.layout
    other.write_text("a = 2\n")
    vendored.write_text("y\n")
    new = src / "new.py"
    new.write_text("b = 1\n")
    (Path(root) / "pkg2").mkdir()
    (Path(root) / "pkg2" / "mod.py").write_text("c = 1\n")
    disk.drain()
    assert disk.modified == {str(other)}
    assert disk.created == {str(new), str(Path(root) / "pkg2" / "mod.py")}  # the new folder's listed too
    (Path(root) / "pkg2" / "later.py").write_text("d = 1\n")  # and it is watched from then on
    disk.drain()
    assert str(Path(root) / "pkg2" / "later.py") in disk.created
    assert disk.layout == layout  # entries of folders only the tree watches leave path checks alone
    new.unlink()
    disk.drain()
    assert disk.removed == {str(new)}
    disk.close()  # the watches are lost (as on an overflow): changes meanwhile are found by the stamps
    other.write_text("a = 333\n")
    target.unlink()
    assert not disk.walked(root)
    disk.drain()
    disk.watch_tree(root)
    assert disk.modified == {str(other)} and str(target) in disk.removed
