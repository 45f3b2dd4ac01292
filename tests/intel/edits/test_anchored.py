"""The commit never acts on a path through a symbolic link (B8.11), even one that appears after its check.

A real race is hard to hit on purpose, so the swap is made deterministic: the commit's recheck passes,
then a :class:`SwappingDisk` (the real disk, with one step that first replaces a folder of the workspace
by a link to an outside folder holding look-alike files) runs the step. Before the fix each of these
writes, creates, moves or deletes through the link; now each is refused, the journal puts the workspace
back and the outside folder is untouched.
"""

from __future__ import annotations

import errno
import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.intel.edits import anchored
from kandev_lsp.intel.edits.anchored import RefusedPath, route
from kandev_lsp.intel.edits.commit import DiskFileSystem, commit, disk_text
from kandev_lsp.intel.edits.plan import EditPlan, plan_edit
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.lsp.positions import PositionEncoding

#: The module (the package exports its ``commit`` function under the same name).
commit_module = importlib.import_module("kandev_lsp.intel.edits.commit")


def _edit(sl: int, sc: int, el: int, ec: int, text: str) -> dict[str, Any]:
    return {
        "range": {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}},
        "newText": text,
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "src" / "b.py").write_text("b = 2\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "m.py").write_text("m = 0\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the workspace with the same file names and bytes as ``src`` and ``pkg``: a write
    that follows a link shows up here and nowhere else."""
    outside = tmp_path / "outside"
    outside.mkdir()
    for name, text in {"a.py": "a = 1\n", "b.py": "b = 2\n", "m.py": "m = 0\n"}.items():
        (outside / name).write_text(text)
    return outside


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace([root])


def _plan(ws: Workspace, edit: dict[str, Any]) -> EditPlan:
    return plan_edit(edit, ws, disk_text, PositionEncoding.UTF16)


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder`` (hidden ones too, links not followed): bytes, None for a folder."""
    found: dict[str, bytes | None] = {}
    for path in sorted(folder.rglob("*")):
        found[str(path.relative_to(folder))] = None if path.is_dir() else path.read_bytes()
    return found


def _swap(folder: Path, outside: Path) -> None:
    """Replace ``folder`` by a link to ``outside`` (the real folder is moved beside the workspace)."""
    folder.rename(folder.parent.parent / f"moved-{folder.name}")
    folder.symlink_to(outside, target_is_directory=True)


class SwappingDisk(DiskFileSystem):
    """The real disk anchored at ``roots``; the first call of ``step`` whose first path argument lies under
    ``under`` runs ``swap`` before doing its work."""

    def __init__(self, roots: list[str], step: str, under: Path, swap: Callable[[], None]) -> None:
        super().__init__(roots)
        self.step, self.under, self.swap = step, str(under), swap
        self.swapped = False

    def _maybe(self, step: str, path: str) -> None:
        if not self.swapped and step == self.step and (path + os.sep).startswith(self.under + os.sep):
            self.swapped = True
            self.swap()

    def kind(self, path: str) -> Any:
        self._maybe("kind", path)
        return super().kind(path)

    def write_temp(self, path: str, data: bytes, mode: int | None) -> str:
        self._maybe("write_temp", path)
        return super().write_temp(path, data, mode)

    def replace(self, source: str, target: str) -> None:
        self._maybe("replace", source)
        super().replace(source, target)

    def make_folder(self, path: str) -> None:
        self._maybe("make_folder", path)
        super().make_folder(path)


# -- where to walk (pure) ---------------------------------------------------------------------------------


def test_route_walks_from_the_outermost_root_holding_the_path() -> None:
    assert route("/w/src/a.py", ["/w"]) == anchored.Route("/w", ("src",), "a.py")
    # Nested roots: the outer one, so the folders leading to the inner root are walked without links too.
    assert route("/w/inner/x/a.py", ["/w/inner", "/w"]) == anchored.Route("/w", ("inner", "x"), "a.py")
    assert route("/w", ["/w"]) == anchored.Route("/w", (), "")
    assert route("/w/a.py", ["/"]) == anchored.Route("/", ("w",), "a.py")
    assert route("/wx/a.py", ["/w", "/wx"]).anchor == "/wx"  # a name prefix is not a folder prefix


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/elsewhere/a.py", "outside every workspace root"),
        ("/w/../etc/passwd", "not a normalized absolute path"),
        ("/w/src/./a.py", "not a normalized absolute path"),
        ("/w/src//a.py", "not a normalized absolute path"),
        ("/w/src/", "not a normalized absolute path"),
    ],
)
def test_route_refuses_a_path_it_could_walk_out_of_the_root_with(path: str, why: str) -> None:
    with pytest.raises(RefusedPath) as refused:
        route(path, ["/w"])
    assert why in refused.value.strerror and refused.value.filename == path


# -- the walk, directly -----------------------------------------------------------------------------------


def test_a_folder_on_the_way_that_is_a_link_is_refused_and_named(root: Path, outside: Path) -> None:
    _swap(root / "pkg", outside)
    disk = DiskFileSystem([str(root)])
    before = _tree(outside)
    with pytest.raises(RefusedPath) as refused:
        disk.write_temp(str(root / "pkg" / "m.py"), b"owned\n", None)
    assert refused.value.errno == errno.ELOOP and refused.value.filename == str(root / "pkg")
    assert "is a symbolic link" in refused.value.strerror and "before asking for the edit again" in (
        refused.value.strerror
    )
    with pytest.raises(RefusedPath, match="symbolic link"):
        disk.remove(str(root / "pkg" / "m.py"))
    with pytest.raises(RefusedPath, match="symbolic link"):
        disk.make_folder(str(root / "pkg" / "sub"))
    assert _tree(outside) == before


def test_a_final_component_that_is_a_link_is_refused(root: Path, outside: Path) -> None:
    (root / "src" / "link.py").symlink_to(outside / "a.py")
    with pytest.raises(RefusedPath, match="never links") as refused:
        DiskFileSystem([str(root)]).kind(str(root / "src" / "link.py"))
    assert refused.value.filename == str(root / "src" / "link.py")


def test_a_file_where_a_folder_should_be_is_refused(root: Path) -> None:
    with pytest.raises(RefusedPath, match="is not a folder") as refused:
        DiskFileSystem([str(root)]).make_folder(str(root / "src" / "a.py" / "sub"))
    assert refused.value.errno == errno.ENOTDIR and refused.value.filename == str(root / "src" / "a.py")


def test_a_path_outside_the_roots_is_refused(root: Path, outside: Path) -> None:
    with pytest.raises(RefusedPath, match="outside every workspace root"):
        DiskFileSystem([str(root)]).remove(str(outside / "a.py"))
    assert (outside / "a.py").exists()


def test_a_missing_folder_on_the_way_reads_as_missing(root: Path) -> None:
    disk = DiskFileSystem([str(root)])
    assert disk.kind(str(root / "nope" / "deeper" / "x.py")) == "missing"
    assert disk.kind(str(root)) == "directory" and disk.kind(str(root / "src" / "a.py")) == "file"


# -- the commit, with a folder swapped after its check ----------------------------------------------------


def test_a_folder_swapped_for_a_link_before_the_write_is_refused(
    ws: Workspace, root: Path, outside: Path
) -> None:
    plan = _plan(ws, {"changes": {(root / "pkg" / "m.py").as_uri(): [_edit(0, 0, 0, 1, "X")]}})
    before = _tree(outside)
    disk = SwappingDisk([str(root)], "write_temp", root / "pkg", lambda: _swap(root / "pkg", outside))
    outcome = commit(plan, fs=disk)
    assert disk.swapped
    assert outcome.status == "failed", outcome.message
    assert "pkg is a symbolic link" in outcome.message and "every file was put back" in outcome.message
    assert _tree(outside) == before  # nothing written through the link


def test_a_swap_in_the_middle_rolls_back_what_was_done(ws: Workspace, root: Path, outside: Path) -> None:
    plan = _plan(
        ws,
        {
            "documentChanges": [
                {
                    "kind": "rename",
                    "oldUri": (root / "pkg" / "m.py").as_uri(),
                    "newUri": (root / "pkg" / "n.py").as_uri(),
                },
                {
                    "textDocument": {"uri": (root / "src" / "a.py").as_uri(), "version": 1},
                    "edits": [_edit(0, 0, 0, 1, "Q")],
                },
            ]
        },
    )
    before, before_outside = _tree(root / "pkg"), _tree(outside)
    disk = SwappingDisk([str(root)], "write_temp", root / "src", lambda: _swap(root / "src", outside))
    outcome = commit(plan, fs=disk)
    assert outcome.status == "failed", outcome.message
    assert "src is a symbolic link" in outcome.message
    assert _tree(root / "pkg") == before  # the rename was undone
    assert _tree(outside) == before_outside


def test_a_swap_before_a_folder_is_created_is_refused(ws: Workspace, root: Path, outside: Path) -> None:
    created = root / "src" / "new" / "deep.py"
    plan = _plan(ws, {"documentChanges": [{"kind": "create", "uri": created.as_uri()}]})
    before = _tree(outside)
    disk = SwappingDisk([str(root)], "make_folder", root / "src", lambda: _swap(root / "src", outside))
    outcome = commit(plan, fs=disk)
    assert outcome.status == "failed" and "src is a symbolic link" in outcome.message, outcome.message
    assert _tree(outside) == before


def test_a_swap_before_a_rename_leaves_the_file_where_it_was(
    ws: Workspace, root: Path, outside: Path
) -> None:
    source, target = root / "src" / "a.py", root / "pkg" / "moved.py"
    plan = _plan(
        ws, {"documentChanges": [{"kind": "rename", "oldUri": source.as_uri(), "newUri": target.as_uri()}]}
    )
    before = _tree(outside)
    disk = SwappingDisk([str(root)], "replace", root / "src", lambda: _swap(root / "pkg", outside))
    outcome = commit(plan, fs=disk)
    assert outcome.status == "failed" and "pkg is a symbolic link" in outcome.message, outcome.message
    assert source.read_text() == "a = 1\n"
    assert _tree(outside) == before


def test_a_swap_before_a_delete_deletes_nothing_outside(ws: Workspace, root: Path, outside: Path) -> None:
    plan = _plan(ws, {"documentChanges": [{"kind": "delete", "uri": (root / "src" / "b.py").as_uri()}]})
    before = _tree(outside)
    disk = SwappingDisk([str(root)], "replace", root / "src", lambda: _swap(root / "src", outside))
    outcome = commit(plan, fs=disk)
    assert outcome.status == "failed" and "src is a symbolic link" in outcome.message, outcome.message
    assert _tree(outside) == before


def test_a_file_swapped_for_a_link_is_not_replaced(ws: Workspace, root: Path, outside: Path) -> None:
    path = root / "src" / "a.py"

    def swap() -> None:
        path.unlink()
        path.symlink_to(outside / "a.py")

    plan = _plan(ws, {"changes": {path.as_uri(): [_edit(0, 0, 0, 1, "X")]}})
    before = _tree(outside)
    outcome = commit(plan, fs=SwappingDisk([str(root)], "kind", path, swap))
    assert outcome.status == "failed" and "src/a.py is a symbolic link" in outcome.message, outcome.message
    assert path.is_symlink() and _tree(outside) == before


# -- ordinary edits, anchored and on the fallback ---------------------------------------------------------


def test_a_restore_through_a_swapped_folder_is_refused_and_uncertain(
    ws: Workspace, root: Path, outside: Path
) -> None:
    # Written in order: pkg/m.py, then src/a.py. While src/a.py is moved into place, pkg is swapped for
    # a link and the move fails: putting pkg/m.py back would go through the link, so it is refused.
    plan = _plan(
        ws,
        {
            "changes": {
                (root / "pkg" / "m.py").as_uri(): [_edit(0, 0, 0, 1, "M")],
                (root / "src" / "a.py").as_uri(): [_edit(0, 0, 0, 1, "A")],
            }
        },
    )

    def swap_then_fail() -> None:
        _swap(root / "pkg", outside)
        raise OSError(errno.EIO, "injected write failure")

    before = _tree(outside)
    disk = SwappingDisk([str(root)], "replace", root / "src", swap_then_fail)
    outcome = commit(plan, fs=disk)
    assert outcome.status == "uncertain", outcome.message
    assert "pkg/m.py may hold the new content" in outcome.message
    assert "(pkg is a symbolic link: the applier never follows one" in outcome.message
    assert outcome.written == ("pkg/m.py",) and "git status" in outcome.message
    assert _tree(outside) == before
    assert (root / "src" / "a.py").read_text() == "a = 1\n"
    moved = root.parent / "moved-pkg"
    assert (moved / "m.py").read_text() == "M = 0\n"  # the new text, where the outcome says it may be


def test_nested_roots_are_walked_from_the_outer_one(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outer = tmp_path / "ws"
    inner = outer / "sub" / "inner"
    inner.mkdir(parents=True)
    (inner / "a.py").write_text("a = 1\n")
    (outside / "inner").mkdir()
    (outside / "inner" / "a.py").write_text("a = 1\n")
    plan = _plan(
        Workspace([outer, inner]), {"changes": {(inner / "a.py").as_uri(): [_edit(0, 0, 0, 1, "X")]}}
    )
    assert {file.root.path for file in plan.touched()} == {str(inner)}  # the plan knows the inner root only

    class Swapping(SwappingDisk):
        def __init__(self, roots: list[str]) -> None:
            super().__init__(roots, "write_temp", inner, lambda: _swap(outer / "sub", outside))

    monkeypatch.setattr(commit_module, "DiskFileSystem", Swapping)  # the disk commit() makes itself
    before = _tree(outside)
    outcome = commit(plan, roots=[str(outer), str(inner)])
    assert outcome.status == "failed" and "sub is a symbolic link" in outcome.message, outcome.message
    assert _tree(outside) == before
