"""The preview and the approval rule (B3.2-B3.5, B3.8): counts, a bounded diff with workspace paths,
resource inspection, and which edits need explicit approval and why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.intel.edits.commit import disk_text
from kandev_lsp.intel.edits.plan import EditPlan, plan_edit
from kandev_lsp.intel.edits.preview import approval_for, preview
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.lsp.positions import PositionEncoding


def _edit(sl: int, sc: int, el: int, ec: int, text: str) -> dict[str, Any]:
    return {
        "range": {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}},
        "newText": text,
    }


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\nb = 2\n")
    (root / "src" / "b.py").write_text("b = 2")  # no final line break
    (root / "old").mkdir()
    (root / "old" / "x.py").write_text("x\n")
    return Workspace([root])


def _uri(ws: Workspace, relative: str) -> str:
    return (Path(ws.roots[0].path) / relative).as_uri()


def _plan(ws: Workspace, edit: dict[str, Any]) -> EditPlan:
    return plan_edit(edit, ws, disk_text, PositionEncoding.UTF16)


def test_counts_diff_and_touched_paths(ws: Workspace) -> None:
    plan = _plan(
        ws,
        {
            "changes": {
                _uri(ws, "src/a.py"): [_edit(0, 0, 0, 1, "x"), _edit(1, 0, 1, 1, "y")],
                _uri(ws, "src/b.py"): [_edit(0, 0, 0, 1, "c")],
            }
        },
    )
    shown = preview(plan)
    assert (shown["files"], shown["edits"], shown["resources"]) == (2, 3, [])
    assert shown["touched"] == ["src/a.py", "src/b.py"]
    assert shown["diffCut"] == []
    assert shown["diff"] == (
        "--- a/src/a.py\n+++ b/src/a.py\n@@ -1,2 +1,2 @@\n-a = 1\n-b = 2\n+x = 1\n+y = 2\n"
        "--- a/src/b.py\n+++ b/src/b.py\n@@ -1 +1 @@\n-b = 2\n\\ No newline at end of file\n"
        "+c = 2\n\\ No newline at end of file\n"
    )
    assert "notes" not in shown


def test_a_created_file_diffs_from_dev_null(ws: Workspace) -> None:
    uri = _uri(ws, "src/new.py")
    plan = _plan(
        ws,
        {
            "documentChanges": [
                {"kind": "create", "uri": uri},
                {"textDocument": {"uri": uri, "version": None}, "edits": [_edit(0, 0, 0, 0, "n = 1\n")]},
            ]
        },
    )
    shown = preview(plan)
    assert shown["diff"].startswith("--- /dev/null\n+++ b/src/new.py\n")
    assert shown["resources"] == [
        {
            "kind": "create",
            "path": "src/new.py",
            "exists": False,
            "options": {},
            "wouldOverwrite": False,
            "destructive": False,
        }
    ]


def test_the_diff_is_bounded_and_says_what_was_cut(ws: Workspace) -> None:
    root = Path(ws.roots[0].path)
    changes: dict[str, Any] = {}
    for number in range(6):
        path = root / "many" / f"f{number}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(f"line {i}\n" for i in range(50)))
        changes[path.as_uri()] = [_edit(i, 0, i, 4, "LINE") for i in range(0, 50, 2)]
    plan = _plan(ws, {"changes": changes})
    full = preview(plan, max_diff_bytes=10**9)
    assert full["diffCut"] == []
    first = full["diff"].index("--- a/many/f1.py")
    budget = first + 100  # the first file in full, a little of the second
    shown = preview(plan, max_diff_bytes=budget)
    body = shown["diff"].split("[diff of")[0]
    assert first < len(body.encode()) <= budget
    assert full["diff"].startswith(body)
    assert shown["diffCut"] == [f"many/f{n}.py" for n in range(1, 6)]
    assert "[diff of many/f1.py cut:" in shown["diff"]
    assert (
        shown["diff"]
        .rstrip()
        .endswith(
            "5 of 6 files not shown in full: many/f1.py, many/f2.py, many/f3.py, many/f4.py, many/f5.py]"
        )
    )
    assert (shown["files"], shown["edits"]) == (6, 150)  # counts are never cut


def test_multi_root_paths_carry_the_root_id(tmp_path: Path) -> None:
    for name in ("front", "back"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "index.ts").write_text("let a = 1;\n")
    ws = Workspace([tmp_path / "front", tmp_path / "back"])
    plan = _plan(ws, {"changes": {(tmp_path / "back" / "index.ts").as_uri(): [_edit(0, 4, 0, 5, "b")]}})
    shown = preview(plan)
    assert shown["touched"] == ["back/index.ts"]
    assert shown["diff"].startswith("--- a/back/index.ts\n+++ b/back/index.ts\n")


def test_text_edits_alone_follow_auto_approve(ws: Workspace) -> None:
    plan = _plan(ws, {"changes": {_uri(ws, "src/a.py"): [_edit(0, 0, 0, 1, "x")]}})
    assert approval_for(plan).required is False
    assert approval_for(plan).reasons == ()
    with_command = approval_for(plan, commands=2)
    assert with_command.required
    assert with_command.reasons == ("runs 2 server commands whose effects cannot be previewed",)


def test_every_resource_operation_needs_approval_with_a_reason(ws: Workspace) -> None:
    plan = _plan(
        ws,
        {
            "documentChanges": [
                {
                    "textDocument": {"uri": _uri(ws, "src/b.py"), "version": 1},
                    "edits": [_edit(0, 0, 0, 1, "x")],
                },
                {"kind": "create", "uri": _uri(ws, "src/c.py")},
                {
                    "kind": "rename",
                    "oldUri": _uri(ws, "src/b.py"),
                    "newUri": _uri(ws, "src/a.py"),
                    "options": {"overwrite": True},
                },
                {"kind": "delete", "uri": _uri(ws, "old"), "options": {"recursive": True}},
            ]
        },
    )
    approval = approval_for(plan)
    assert approval.required
    assert approval.reasons == (
        "creates src/c.py",
        "renames src/b.py to src/a.py, overwriting the existing file",
        "deletes the folder old and everything in it",
    )
    resources = preview(plan)["resources"]
    assert [r["destructive"] for r in resources] == [False, True, True]
    assert resources[1]["targetExists"] is True and resources[1]["wouldOverwrite"] is True
    assert resources[2]["directory"] is True and resources[2]["options"] == {"recursive": True}


def test_a_resource_only_edit_says_there_is_no_diff(ws: Workspace) -> None:
    plan = _plan(ws, {"documentChanges": [{"kind": "delete", "uri": _uri(ws, "src/a.py")}]})
    assert approval_for(plan).reasons == (
        "changes files without any text diff to preview (resource operations only)",
        "deletes the file src/a.py",
    )
    assert preview(plan)["diff"] == ""


def test_an_overwrite_capable_create_is_named(ws: Workspace) -> None:
    over = {"overwrite": True}
    plan = _plan(
        ws,
        {
            "documentChanges": [
                {"kind": "create", "uri": _uri(ws, "src/a.py"), "options": over},
                {"kind": "create", "uri": _uri(ws, "src/d.py"), "options": over},
            ]
        },
    )
    reasons = approval_for(plan).reasons
    assert "creates src/a.py over the existing file (its content is lost)" in reasons
    assert "creates src/d.py (may overwrite it if it appears)" in reasons


def test_an_operation_its_options_skip_needs_no_approval(ws: Workspace) -> None:
    plan = _plan(
        ws,
        {
            "documentChanges": [
                {"kind": "create", "uri": _uri(ws, "src/a.py"), "options": {"ignoreIfExists": True}}
            ]
        },
    )
    assert approval_for(plan) == approval_for(_plan(ws, {}))
    assert preview(plan)["resources"][0]["skipped"] is True
