"""Receipts and diagnostics deltas (B7.3, B7.5): keys without positions, bounded lists, every field."""

from __future__ import annotations

from typing import Any

from kandev_lsp.intel.edits.receipts import diagnostic_key, diagnostics_delta, receipt


def _diag(
    line: int, message: str, *, severity: int = 1, code: Any = "reportGeneralTypeIssues"
) -> dict[str, Any]:
    return {
        "range": {"start": {"line": line, "character": 4}, "end": {"line": line, "character": 9}},
        "severity": severity,
        "source": "Pyright",
        "code": code,
        "message": message,
    }


def test_keys_leave_positions_out_and_accept_both_shapes() -> None:
    lsp = _diag(3, "Type  is\n wrong")
    problem = {
        "path": "a.py",
        "line": 9,
        "column": 1,
        "severity": "error",
        "message": "Type is wrong",
        "source": "Pyright",
        "code": "reportGeneralTypeIssues",
    }
    assert diagnostic_key("a.py", lsp) == diagnostic_key("a.py", problem)
    assert diagnostic_key("a.py", lsp) == diagnostic_key("a.py", _diag(40, "Type is wrong"))
    assert diagnostic_key("a.py", lsp) != diagnostic_key("b.py", lsp)
    assert diagnostic_key("a.py", {"message": "m"})[3] == "error"  # missing severity means error


def test_a_shifted_diagnostic_persists_instead_of_being_introduced() -> None:
    before = {"a.py": [_diag(3, "bad type")]}
    after = {"a.py": [_diag(5, "bad type")]}
    delta = diagnostics_delta(before, after)
    assert delta["counts"] == {"introduced": 0, "resolved": 0, "persisting": 1}
    assert delta["introduced"] == [] and delta["resolved"] == []


def test_introduced_and_resolved_entries_carry_where_and_what() -> None:
    before = {"a.py": [_diag(3, "old error")], "b.py": []}
    after = {"a.py": [_diag(7, "new error", severity=2, code=12)], "b.py": [_diag(0, "also new")]}
    delta = diagnostics_delta(before, after)
    assert delta["counts"] == {"introduced": 2, "resolved": 1, "persisting": 0}
    assert delta["introduced"][0] == {
        "path": "a.py",
        "severity": "warning",
        "line": 8,
        "message": "new error",
        "source": "Pyright",
        "code": "12",
    }
    assert delta["resolved"] == [
        {
            "path": "a.py",
            "severity": "error",
            "line": 4,
            "message": "old error",
            "source": "Pyright",
            "code": "reportGeneralTypeIssues",
        }
    ]


def test_duplicates_count_as_a_multiset() -> None:
    before = {"a.py": [_diag(1, "same")]}
    after = {"a.py": [_diag(1, "same"), _diag(9, "same")]}
    delta = diagnostics_delta(before, after)
    assert delta["counts"] == {"introduced": 1, "resolved": 0, "persisting": 1}


def test_a_file_not_collected_after_is_not_all_resolved() -> None:
    before = {"a.py": [_diag(1, "x")], "b.py": [_diag(1, "y")]}
    delta = diagnostics_delta(before, {"a.py": [_diag(1, "x")]})
    assert delta["counts"] == {"introduced": 0, "resolved": 0, "persisting": 1}
    assert delta["files"] == 1


def test_lists_are_bounded_but_counts_are_not() -> None:
    after = {"a.py": [_diag(n, f"error {n}") for n in range(50)]}
    delta = diagnostics_delta({}, after, limit=5)
    assert delta["counts"]["introduced"] == 50 and len(delta["introduced"]) == 5 and delta["truncated"]


def test_the_receipt_has_every_field_even_without_diagnostics() -> None:
    result = receipt(outcome="rejected", touched=["b.py", "a.py", "a.py"])
    assert result == {
        "outcome": "rejected",
        "textEdits": 0,
        "resourceOperations": [],
        "commands": [],
        "touched": ["a.py", "b.py"],
        "saved": "not-saved",
        "diagnostics": {
            "introduced": [],
            "resolved": [],
            "persisting": 0,
            "counts": {"introduced": 0, "resolved": 0, "persisting": 0},
            "truncated": False,
            "files": 0,
            "status": "not-collected",
        },
    }
    applied = receipt(
        outcome="applied",
        text_edits=3,
        commands=[{"command": "x", "status": "ok"}],
        saved="saved",
        diagnostics=diagnostics_delta({}, {"a.py": [_diag(0, "m")]}),
        diagnostics_status="current",
    )
    assert applied["textEdits"] == 3 and applied["saved"] == "saved"
    assert (
        applied["diagnostics"]["status"] == "current" and applied["diagnostics"]["counts"]["introduced"] == 1
    )


def test_resource_entries_use_the_preview_shape_and_say_whether_exact(tmp_path: Any) -> None:
    from kandev_lsp.intel.edits.plan import ResourceOp
    from kandev_lsp.intel.edits.receipts import resource_entry
    from kandev_lsp.intel.files.workspace import Workspace

    (tmp_path / "a.py").write_text("x = 1\n")
    workspace = Workspace([tmp_path])
    old = workspace.resolve("a.py")
    new = workspace.resolve("b.py", must_exist=False)
    op = ResourceOp("rename", old, new, overwrite=True, ignore_if_exists=False, recursive=False, exists=True)
    entry = resource_entry(op)
    assert entry["kind"] == "rename" and entry["path"] == "a.py" and entry["newPath"] == "b.py"
    assert entry["options"] == {"overwrite": True} and entry["exact"] is True
    assert resource_entry(op, exact=False)["exact"] is False
