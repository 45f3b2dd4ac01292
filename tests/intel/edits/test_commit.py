"""Committing a plan on the real disk (B3.6, B3.7): all or nothing, conflicts before any write, every
file put back after a failure in the middle, "uncertain" when putting back fails, resource operations in
the same transaction. Faults are injected through the FileSystem protocol (the only fake here)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.intel.edits import anchored
from kandev_lsp.intel.edits.commit import DiskFileSystem, commit, disk_text
from kandev_lsp.intel.edits.plan import EditPlan, FileEdit, plan_edit
from kandev_lsp.intel.errors import EditRejected
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.lsp.positions import PositionEncoding


def _edit(sl: int, sc: int, el: int, ec: int, text: str) -> dict[str, Any]:
    return {
        "range": {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}},
        "newText": text,
    }


class FailingDisk(DiskFileSystem):
    """The real disk, failing the Nth move of new content into place and, optionally, putting back
    chosen files (a restore is a move of a kept original)."""

    def __init__(self, *, fail_install: int | None = None, fail_restore: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.fail_install = fail_install
        self.fail_restore = fail_restore
        self.installs = 0
        self.new: set[str] = set()
        self.kept: set[str] = set()

    def write_temp(self, path: str, data: bytes, mode: int | None) -> str:
        temp = super().write_temp(path, data, mode)
        self.new.add(temp)
        return temp

    def keep(self, path: str) -> str:
        kept = super().keep(path)
        self.kept.add(kept)
        return kept

    def replace(self, source: str, target: str) -> None:
        if source in self.new:
            self.installs += 1
            if self.installs == self.fail_install:
                raise OSError(errno.EIO, "injected write failure", target)
        if source in self.kept and os.path.basename(target) in self.fail_restore:
            raise OSError(errno.EIO, "injected restore failure", target)
        super().replace(source, target)


class FailingTempWrite(DiskFileSystem):
    """The real disk, the Nth temporary file failing to be written (a full disk)."""

    def __init__(self, nth: int) -> None:
        super().__init__()
        self.nth = nth
        self.writes = 0

    def write_temp(self, path: str, data: bytes, mode: int | None) -> str:
        self.writes += 1
        if self.writes == self.nth:
            raise OSError(errno.ENOSPC, "No space left on device (injected)", path)
        return super().write_temp(path, data, mode)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "src" / "b.py").write_text("b = 2\r\n")
    (root / "src" / "c.py").write_text("c = 3\n")
    (root / "src" / "c.py").chmod(0o755)
    (root / "pkg").mkdir()
    (root / "pkg" / "m.py").write_text("m = 0\n")
    return root


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace([root])


def _snapshot(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every entry under ``root``: bytes (None for folders) and mode. Leftover temp files show up too."""
    found: dict[str, tuple[bytes | None, int]] = {}
    for path in sorted(root.rglob("*")):
        mode = stat.S_IMODE(path.lstat().st_mode)
        found[str(path.relative_to(root))] = (None if path.is_dir() else path.read_bytes(), mode)
    return found


def _plan(ws: Workspace, edit: dict[str, Any]) -> EditPlan:
    return plan_edit(edit, ws, disk_text, PositionEncoding.UTF16)


def _three_files(ws: Workspace, root: Path) -> EditPlan:
    return _plan(
        ws,
        {
            "changes": {
                (root / "src" / name).as_uri(): [_edit(0, 0, 0, 1, name[0].upper())]
                for name in ("a.py", "b.py", "c.py")
            }
        },
    )


def test_a_multi_file_edit_is_written_with_modes_kept_and_nothing_left_over(
    ws: Workspace, root: Path
) -> None:
    before = _snapshot(root)
    outcome = commit(_three_files(ws, root))
    assert outcome.status == "applied", outcome.message
    assert outcome.written == ("src/a.py", "src/b.py", "src/c.py")
    assert (root / "src" / "a.py").read_bytes() == b"A = 1\n"
    assert (root / "src" / "b.py").read_bytes() == b"B = 2\r\n"
    assert (root / "src" / "c.py").read_bytes() == b"C = 3\n"
    after = _snapshot(root)
    assert after.keys() == before.keys()  # no temporary or kept file left
    assert after["src/c.py"][1] == 0o755 and after["src/a.py"][1] == before["src/a.py"][1]


def test_a_file_changed_since_planning_is_a_conflict_and_nothing_is_written(
    ws: Workspace, root: Path
) -> None:
    plan = _three_files(ws, root)
    (root / "src" / "b.py").write_text("b = 22\r\n")  # someone else's edit
    before = _snapshot(root)
    outcome = commit(plan)
    assert outcome.status == "conflict"
    assert outcome.conflicts == ("src/b.py",)
    assert outcome.written == ()
    assert "src/b.py: its content changed" in outcome.message and "ask for the edit again" in outcome.message
    assert _snapshot(root) == before


def test_a_file_gone_since_planning_is_a_conflict(ws: Workspace, root: Path) -> None:
    plan = _three_files(ws, root)
    (root / "src" / "c.py").unlink()
    outcome = commit(plan)
    assert (outcome.status, outcome.conflicts) == ("conflict", ("src/c.py",))
    assert (root / "src" / "a.py").read_text() == "a = 1\n"


@pytest.mark.parametrize("nth", [1, 2, 3])
def test_a_failure_in_the_middle_puts_every_file_back(ws: Workspace, root: Path, nth: int) -> None:
    plan = _three_files(ws, root)
    before = _snapshot(root)
    disk = FailingDisk(fail_install=nth)
    outcome = commit(plan, fs=disk)
    assert outcome.status == "failed"
    assert outcome.written == ()
    assert "injected write failure" in outcome.message and "every file was put back" in outcome.message
    assert _snapshot(root) == before  # byte-identical, modes included, no temporary file left
    assert disk.installs == nth


def test_a_failed_temporary_write_changes_nothing(ws: Workspace, root: Path) -> None:
    plan = _three_files(ws, root)
    before = _snapshot(root)
    outcome = commit(plan, fs=FailingTempWrite(3))
    assert outcome.status == "failed" and "No space left" in outcome.message
    assert _snapshot(root) == before


def test_a_failed_restore_is_uncertain_and_says_what_is_known(ws: Workspace, root: Path) -> None:
    plan = _three_files(ws, root)
    outcome = commit(plan, fs=FailingDisk(fail_install=3, fail_restore=("a.py",)))
    assert outcome.status == "uncertain"
    assert outcome.written == ("src/a.py",)
    assert "src/a.py may hold the new content; its original is kept at src/.a.py." in outcome.message
    assert "injected restore failure" in outcome.message and "git status" in outcome.message
    # What the outcome says is what is on disk: a.py new, b.py put back, c.py never replaced.
    assert (root / "src" / "a.py").read_text() == "A = 1\n"
    assert (root / "src" / "b.py").read_bytes() == b"b = 2\r\n"
    assert (root / "src" / "c.py").read_text() == "c = 3\n"
    kept = [p for p in (root / "src").iterdir() if p.name.startswith(".a.py.")]
    assert len(kept) == 1 and kept[0].read_text() == "a = 1\n"


@pytest.mark.parametrize("with_descriptors", [True, False])
def test_create_rename_and_delete_in_one_commit(
    ws: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch, with_descriptors: bool
) -> None:
    """Through folder descriptors (B8.11: never through a link), and by path as on a platform without
    ``dir_fd`` support."""
    if not with_descriptors:
        monkeypatch.setattr(anchored, "ANCHORED", False)
    elif not anchored.ANCHORED:
        pytest.fail("this platform has no dir_fd support; the anchored applier is not exercised here")
    created, old, renamed = root / "lib" / "deep" / "new.py", root / "src" / "a.py", root / "src" / "moved.py"
    plan = _plan(
        ws,
        {
            "documentChanges": [
                {"kind": "create", "uri": created.as_uri()},
                {
                    "textDocument": {"uri": created.as_uri(), "version": None},
                    "edits": [_edit(0, 0, 0, 0, "n = 1\n")],
                },
                {"kind": "rename", "oldUri": old.as_uri(), "newUri": renamed.as_uri()},
                {"textDocument": {"uri": renamed.as_uri(), "version": 3}, "edits": [_edit(0, 0, 0, 1, "z")]},
                {"kind": "delete", "uri": (root / "src" / "b.py").as_uri()},
                {"kind": "delete", "uri": (root / "pkg").as_uri(), "options": {"recursive": True}},
            ]
        },
    )
    outcome = commit(plan)
    assert outcome.status == "applied", outcome.message
    assert created.read_text() == "n = 1\n"
    assert renamed.read_text() == "z = 1\n" and not old.exists()
    assert not (root / "src" / "b.py").exists() and not (root / "pkg").exists()
    assert set(_snapshot(root)) == {"lib", "lib/deep", "lib/deep/new.py", "src", "src/c.py", "src/moved.py"}
    assert outcome.written == ("lib/deep/new.py", "src/moved.py")


def test_a_failure_after_resource_operations_undoes_them_too(ws: Workspace, root: Path) -> None:
    plan = _plan(
        ws,
        {
            "documentChanges": [
                {"kind": "create", "uri": (root / "lib" / "new.py").as_uri()},
                {
                    "kind": "rename",
                    "oldUri": (root / "src" / "a.py").as_uri(),
                    "newUri": (root / "src" / "z.py").as_uri(),
                },
                {
                    "kind": "rename",
                    "oldUri": (root / "src" / "b.py").as_uri(),
                    "newUri": (root / "src" / "c.py").as_uri(),
                    "options": {"overwrite": True},
                },
                {"kind": "delete", "uri": (root / "pkg").as_uri(), "options": {"recursive": True}},
                {
                    "textDocument": {"uri": (root / "src" / "z.py").as_uri(), "version": 1},
                    "edits": [_edit(0, 0, 0, 1, "q")],
                },
            ]
        },
    )
    before = _snapshot(root)
    # Moves of new content: the created (empty) file is the 1st, the text of z.py the 2nd.
    outcome = commit(plan, fs=FailingDisk(fail_install=2))
    assert outcome.status == "failed", outcome.message
    assert _snapshot(root) == before  # created file and folder gone, renames undone, folder back


def test_rename_options_at_commit_time(ws: Workspace, root: Path) -> None:
    source, target = root / "src" / "a.py", root / "src" / "b.py"
    skip = {
        "kind": "rename",
        "oldUri": source.as_uri(),
        "newUri": target.as_uri(),
        "options": {"ignoreIfExists": True},
    }
    before = _snapshot(root)
    assert commit(_plan(ws, {"documentChanges": [skip]})).status == "applied"
    assert _snapshot(root) == before
    over = dict(skip, options={"overwrite": True})
    outcome = commit(_plan(ws, {"documentChanges": [over]}))
    assert outcome.status == "applied" and outcome.written == ("src/b.py",)
    assert target.read_text() == "a = 1\n" and not source.exists()
    assert not [p for p in (root / "src").iterdir() if p.name.startswith(".")]  # the kept original dropped


def test_create_with_overwrite_empties_the_file(ws: Workspace, root: Path) -> None:
    path = root / "src" / "c.py"
    outcome = commit(
        _plan(
            ws,
            {"documentChanges": [{"kind": "create", "uri": path.as_uri(), "options": {"overwrite": True}}]},
        )
    )
    assert outcome.status == "applied" and path.read_bytes() == b""


def test_a_path_that_appeared_since_planning_is_a_conflict(ws: Workspace, root: Path) -> None:
    path = root / "src" / "new.py"
    plan = _plan(ws, {"documentChanges": [{"kind": "create", "uri": path.as_uri()}]})
    path.write_text("someone else's\n")
    outcome = commit(plan)
    assert (outcome.status, outcome.conflicts) == ("conflict", ("src/new.py",))
    assert "it exists now" in outcome.message
    assert path.read_text() == "someone else's\n"


def test_a_non_empty_folder_is_deleted_only_recursively(ws: Workspace, root: Path) -> None:
    plan = _plan(ws, {"documentChanges": [{"kind": "delete", "uri": (root / "pkg").as_uri()}]})
    before = _snapshot(root)
    outcome = commit(plan)
    assert outcome.status == "failed" and "not empty" in outcome.message
    assert _snapshot(root) == before
    (root / "pkg" / "m.py").unlink()
    assert commit(plan).status == "applied" and not (root / "pkg").exists()


def test_a_symlink_that_appeared_since_planning_is_not_followed(
    ws: Workspace, root: Path, tmp_path: Path
) -> None:
    plan = _plan(ws, {"changes": {(root / "pkg" / "m.py").as_uri(): [_edit(0, 0, 0, 1, "X")]}})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "m.py").write_text("m = 0\n")  # same bytes: only the path check can catch it
    (root / "pkg" / "m.py").unlink()
    (root / "pkg").rmdir()
    os.symlink(outside, root / "pkg")
    outcome = commit(plan)
    assert (outcome.status, outcome.conflicts) == ("conflict", ("pkg/m.py",))
    assert "symbolic link" in outcome.message
    assert (outside / "m.py").read_text() == "m = 0\n"


def test_disk_text_refuses_what_it_could_not_check(ws: Workspace, root: Path) -> None:
    (root / "src" / "bin.py").write_bytes(b"\xff\xfe broken")
    with pytest.raises(EditRejected, match="not UTF-8"):
        _plan(ws, {"changes": {(root / "src" / "bin.py").as_uri(): [_edit(0, 0, 0, 0, "x")]}})


def test_an_empty_plan_writes_nothing(ws: Workspace, root: Path) -> None:
    before = _snapshot(root)
    outcome = commit(_plan(ws, {}))
    assert (outcome.status, outcome.written) == ("applied", ())
    assert _snapshot(root) == before


def test_an_edit_that_changes_nothing_leaves_the_file_alone(ws: Workspace, root: Path) -> None:
    path = root / "src" / "a.py"
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    plan = _plan(ws, {"changes": {path.as_uri(): [_edit(0, 0, 0, 1, "a")]}})
    assert plan.files == ()  # planning drops it (test_plan.py); the commit skips one built by hand too
    planned = EditPlan((FileEdit(ws.resolve("src/a.py"), "a = 1\n", "a = 1\n", 1, None),), (), {})
    for each in (plan, planned):
        outcome = commit(each)
        assert (outcome.status, outcome.written) == ("applied", ())
        assert path.stat().st_mtime_ns == 1_000_000_000


def test_a_plan_built_by_hand_is_checked_against_its_before_text(ws: Workspace, root: Path) -> None:
    planned = _three_files(ws, root)
    by_hand = EditPlan(planned.files, (), {})  # no ``read``: the file edits' ``before`` is what is checked
    (root / "src" / "c.py").write_text("c = 33\n")
    outcome = commit(by_hand)
    assert (outcome.status, outcome.conflicts) == ("conflict", ("src/c.py",))
    assert (root / "src" / "a.py").read_text() == "a = 1\n"


def test_without_hard_links_the_originals_are_kept_as_copies(
    ws: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EPERM, "hard links not permitted here")

    monkeypatch.setattr(os, "link", refuse)
    before = _snapshot(root)
    outcome = commit(_three_files(ws, root), fs=FailingDisk(fail_install=3))
    assert outcome.status == "failed", outcome.message
    assert _snapshot(root) == before  # bytes and modes back from the copies, no copy left
    assert commit(_three_files(ws, root)).status == "applied"
    assert (root / "src" / "c.py").read_text() == "C = 3\n"
    assert set(_snapshot(root)) == set(before)
