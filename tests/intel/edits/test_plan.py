"""Planning a WorkspaceEdit (B3.1, B3.4, B3.6, B8.11): LSP text-edit semantics on plain values, and both
WorkspaceEdit shapes, resource operations, annotations and path safety on a real workspace folder."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kandev_lsp.intel.edits.plan import (
    EditPlan,
    apply_text_edits,
    plan_edit,
    snippet_text,
    text_digest,
)
from kandev_lsp.intel.edits.preview import approval_for
from kandev_lsp.intel.errors import EditRejected, PathOutsideWorkspace
from kandev_lsp.intel.files.workspace import Workspace, WorkspaceFile
from kandev_lsp.lsp.positions import PositionEncoding

UTF8, UTF16, UTF32 = PositionEncoding.UTF8, PositionEncoding.UTF16, PositionEncoding.UTF32


def _edit(sl: int, sc: int, el: int, ec: int, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "range": {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}},
        "newText": text,
        **extra,
    }


# -- apply_text_edits --------------------------------------------------------------------------------------


def test_ranges_refer_to_the_original_text_whatever_the_order() -> None:
    text = "alpha beta\ngamma\n"
    edits = [_edit(1, 0, 1, 5, "GAMMA"), _edit(0, 0, 0, 5, "A"), _edit(0, 6, 0, 10, "B")]
    assert apply_text_edits(text, edits, UTF16) == "A B\nGAMMA\n"
    assert apply_text_edits(text, list(reversed(edits)), UTF16) == "A B\nGAMMA\n"


def test_inserts_at_one_position_keep_the_order_of_the_array() -> None:
    assert apply_text_edits("x", [_edit(0, 0, 0, 0, "a"), _edit(0, 0, 0, 0, "b")], UTF16) == "abx"
    assert apply_text_edits("x", [_edit(0, 0, 0, 0, "b"), _edit(0, 0, 0, 0, "a")], UTF16) == "bax"


def test_an_insert_at_the_start_of_a_replacement_goes_before_it() -> None:
    edits = [_edit(0, 0, 0, 3, "new"), _edit(0, 0, 0, 0, "import x\n")]
    assert apply_text_edits("old rest", edits, UTF16) == "import x\nnew rest"


def test_an_insert_at_the_end_of_a_replacement_does_not_overlap() -> None:
    edits = [_edit(0, 0, 0, 3, "NEW"), _edit(0, 3, 0, 3, "!")]
    assert apply_text_edits("old rest", edits, UTF16) == "NEW! rest"


def test_overlapping_edits_are_rejected_naming_both_ranges() -> None:
    with pytest.raises(EditRejected) as caught:
        apply_text_edits("abcdefgh", [_edit(0, 1, 0, 4, "X"), _edit(0, 3, 0, 5, "Y")], UTF16)
    assert "0:1-0:4" in caught.value.message and "0:3-0:5" in caught.value.message
    assert caught.value.fields["ranges"] == ["0:1-0:4", "0:3-0:5"]


def test_an_insert_strictly_inside_a_replacement_overlaps() -> None:
    with pytest.raises(EditRejected, match="overlap"):
        apply_text_edits("abcdefgh", [_edit(0, 1, 0, 4, "X"), _edit(0, 2, 0, 2, "Y")], UTF16)


def test_positions_count_code_units_of_the_servers_encoding() -> None:
    text = "s = '😀' + y\n"
    # "s = '" is 5 units everywhere; the emoji is 2 UTF-16 units, 4 UTF-8 bytes, 1 code point.
    for encoding, column in ((UTF16, 11), (UTF8, 13), (UTF32, 10)):
        assert apply_text_edits(text, [_edit(0, column, 0, column + 1, "z")], encoding) == "s = '😀' + z\n"
    assert apply_text_edits(text, [_edit(0, 5, 0, 7, "ok")], UTF16) == "s = 'ok' + y\n"


def test_a_position_inside_a_surrogate_pair_is_rejected() -> None:
    with pytest.raises(EditRejected, match="inside a character"):
        apply_text_edits("'😀'", [_edit(0, 2, 0, 2, "x")], UTF16)
    with pytest.raises(EditRejected, match="inside a character"):
        apply_text_edits("'😀'", [_edit(0, 3, 0, 3, "x")], UTF8)


def test_crlf_text_keeps_its_line_breaks() -> None:
    text = "a\r\nb\r\n"
    assert apply_text_edits(text, [_edit(1, 0, 1, 1, "c\nd")], UTF16) == "a\r\nc\r\nd\r\n"
    # A character past the end of its line means the end of the line: before the "\r\n".
    assert apply_text_edits(text, [_edit(0, 0, 0, 99, "z")], UTF16) == "z\r\nb\r\n"
    # A file of "\n" breaks gets its inserted text as given.
    assert apply_text_edits("a\nb\n", [_edit(1, 0, 1, 1, "c\r\nd")], UTF16) == "a\nc\r\nd\n"


def test_the_end_of_the_document_is_a_valid_position_and_past_it_is_not() -> None:
    # "a\nb" has two lines; (2, 0) is the position after the last one: a whole-document replacement.
    assert apply_text_edits("a\nb", [_edit(0, 0, 2, 0, "new\n")], UTF16) == "new\n"
    assert apply_text_edits("a\nb\n", [_edit(2, 0, 2, 0, "c\n")], UTF16) == "a\nb\nc\n"
    for bad in (_edit(0, 0, 3, 0, "x"), _edit(0, 0, 2, 1, "x")):
        with pytest.raises(EditRejected, match="another version of the file"):
            apply_text_edits("a\nb", [bad], UTF16)


@pytest.mark.parametrize(
    "edit",
    [
        {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}},
        _edit(-1, 0, 0, 0, "x"),
        _edit(0, 2, 0, 1, "x"),
        {"newText": "x"},
        _edit(0, 0, 0, 0, "x", annotationId=3),
        "not an edit",
    ],
)
def test_malformed_text_edits_are_rejected(edit: Any) -> None:
    with pytest.raises(EditRejected, match="malformed"):
        apply_text_edits("abc", [edit], UTF16)


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet="ab\n😀é\r", max_size=30),
    cuts=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3), st.text("xy\n", max_size=3)), max_size=5),
)
def test_applying_matches_splicing_the_code_points_from_the_back(
    text: str, cuts: list[tuple[int, int, str]]
) -> None:
    """Non-overlapping edits built from code-point offsets give what splicing them back to front gives."""
    from kandev_lsp.lsp.positions import LineIndex

    if "\r" in text:  # positions inside a "\r\n" are not expressible: keep breaks simple here
        text = text.replace("\r", "")
    index = LineIndex(text)
    spans: list[tuple[int, int, str]] = []
    taken = -1
    for start, length, new in sorted(cuts):
        start = min(start, len(text))
        end = min(start + length, len(text))
        if start <= taken:
            continue
        spans.append((start, end, new))
        taken = end
    edits = []
    for start, end, new in spans:
        (sl, sc), (el, ec) = index.position(start, UTF16), index.position(end, UTF16)
        edits.append(_edit(sl, sc, el, ec, new))
    expected = text
    for start, end, new in reversed(spans):
        expected = expected[:start] + new + expected[end:]
    assert apply_text_edits(text, list(reversed(edits)), UTF16) == expected


def test_snippets_become_the_text_they_insert() -> None:
    assert snippet_text("foo(${1:arg}, $2)$0") == "foo(arg, )"
    assert snippet_text("${1:outer ${2:inner}}") == "outer inner"
    assert snippet_text("${1|first,second|}") == "first"
    assert snippet_text("${TM_SELECTED_TEXT:default} $TM_FILENAME") == "default "
    assert snippet_text(r"cost \$5 \} \\") == "cost $5 } \\"
    assert snippet_text("${1:unterminated") == "${1:unterminated"
    assert snippet_text("price $ 3") == "price $ 3"


def test_a_snippet_text_edit_is_applied_as_its_text() -> None:
    snippet = {
        "range": _edit(0, 0, 0, 0, "")["range"],
        "snippet": {"kind": "snippet", "value": "f(${1:x})$0"},
    }
    assert apply_text_edits("", [snippet], UTF16) == "f(x)"
    legacy = _edit(0, 0, 0, 0, "g($1)", insertTextFormat=2)
    assert apply_text_edits("", [legacy], UTF16) == "g()"


# -- plan_edit ---------------------------------------------------------------------------------------------


class Reader:
    """The disk, counting reads (each file must be read once per plan)."""

    def __init__(self) -> None:
        self.reads: list[str] = []

    def __call__(self, file: WorkspaceFile) -> str:
        self.reads.append(file.display)
        return Path(file.absolute).read_text(encoding="utf-8")


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\nb = 2\n")
    (root / "src" / "b.py").write_text("print('😀', x)\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "m.py").write_text("m = 0\n")
    return Workspace([root])


def _uri(ws: Workspace, relative: str) -> str:
    return (Path(ws.roots[0].path) / relative).as_uri()


def _plan(
    ws: Workspace, edit: dict[str, Any], reader: Callable[[WorkspaceFile], str] | None = None
) -> EditPlan:
    return plan_edit(edit, ws, reader or Reader(), UTF16)


def test_edits_that_leave_a_file_as_it_was_are_no_change(ws: Workspace) -> None:
    """A rename to the name a symbol has (a trial: code_rename inc -> inc) is one edit per use, each
    putting back the text it replaces: it previewed "needs approval: 3 edits in 2 files" with an empty
    diff, and its approval "renamed → inc · 2 files", a receipt of 3 applied edits that changed nothing."""
    same = {
        "changes": {
            _uri(ws, "src/a.py"): [_edit(0, 0, 0, 1, "a"), _edit(1, 0, 1, 1, "b")],
            _uri(ws, "src/b.py"): [_edit(0, 12, 0, 13, "x")],
        }
    }
    assert _plan(ws, same).files == ()
    changed = {"changes": {**same["changes"], _uri(ws, "pkg/m.py"): [_edit(0, 0, 0, 1, "n")]}}
    assert [item.file.display for item in _plan(ws, changed).files] == ["pkg/m.py"]


def test_the_changes_shape_gives_one_file_edit_per_file_in_display_order(ws: Workspace) -> None:
    reader = Reader()
    plan = _plan(
        ws,
        {
            "changes": {
                _uri(ws, "src/b.py"): [_edit(0, 12, 0, 13, "y")],  # after the emoji: UTF-16 columns
                _uri(ws, "src/a.py"): [_edit(0, 0, 0, 1, "x"), _edit(1, 0, 1, 1, "y")],
            }
        },
        reader,
    )
    assert [f.file.display for f in plan.files] == ["src/a.py", "src/b.py"]
    assert [f.after for f in plan.files] == ["x = 1\ny = 2\n", "print('😀', y)\n"]
    assert [f.edits for f in plan.files] == [2, 1]
    assert [f.version for f in plan.files] == [None, None]
    assert plan.text_edit_count() == 3
    assert sorted(reader.reads) == ["src/a.py", "src/b.py"]
    assert plan.digests() == {
        f.file.absolute: text_digest(Path(f.file.absolute).read_text()) for f in plan.files
    }
    assert [f.display for f in plan.touched()] == ["src/a.py", "src/b.py"]


def test_several_text_document_edits_for_one_file_apply_in_sequence(ws: Workspace) -> None:
    uri = _uri(ws, "src/a.py")
    plan = _plan(
        ws,
        {
            "documentChanges": [
                {"textDocument": {"uri": uri, "version": 7}, "edits": [_edit(0, 0, 0, 0, "# head\n")]},
                # Line 1 is now "a = 1": this edit is against the text the first one produced.
                {"textDocument": {"uri": uri, "version": 8}, "edits": [_edit(1, 0, 1, 1, "z")]},
            ]
        },
    )
    (only,) = plan.files
    assert only.after == "# head\nz = 1\nb = 2\n"
    assert only.before == "a = 1\nb = 2\n"
    assert only.edits == 2 and only.version == 7


def test_document_changes_win_over_changes(ws: Workspace) -> None:
    uri = _uri(ws, "src/a.py")
    plan = _plan(
        ws,
        {
            "changes": {uri: [_edit(0, 0, 0, 1, "WRONG")]},
            "documentChanges": [
                {"textDocument": {"uri": uri, "version": None}, "edits": [_edit(0, 0, 0, 1, "q")]}
            ],
        },
    )
    assert plan.files[0].after.startswith("q = 1")


def test_an_empty_edit_plans_nothing(ws: Workspace) -> None:
    plan = _plan(ws, {})
    assert plan.empty and plan.touched() == () and plan.text_edit_count() == 0


@pytest.mark.parametrize(
    "uri",
    ["file:///etc/passwd", "untitled:Untitled-1", "https://example.invalid/a.py", "file://host/share/a.py"],
)
def test_uris_outside_the_workspace_fail_closed_without_reading(ws: Workspace, uri: str) -> None:
    reader = Reader()
    with pytest.raises(PathOutsideWorkspace, match="nothing was written"):
        _plan(
            ws,
            {"changes": {_uri(ws, "src/a.py"): [_edit(0, 0, 0, 1, "x")], uri: [_edit(0, 0, 0, 0, "x")]}},
            reader,
        )
    assert "passwd" not in " ".join(reader.reads)


def test_a_symlink_out_of_the_workspace_fails_closed(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("s = 1\n")
    os.symlink(outside, Path(ws.roots[0].path) / "link")
    with pytest.raises(PathOutsideWorkspace, match="symbolic link"):
        _plan(ws, {"changes": {_uri(ws, "link/secret.py"): [_edit(0, 0, 0, 1, "x")]}})
    with pytest.raises(PathOutsideWorkspace, match="symbolic link"):
        _plan(ws, {"documentChanges": [{"kind": "create", "uri": _uri(ws, "link/new.py")}]})
    assert (outside / "secret.py").read_text() == "s = 1\n"


def test_an_error_in_one_file_names_the_file(ws: Workspace) -> None:
    with pytest.raises(EditRejected, match=r"src/a\.py.*overlap"):
        _plan(ws, {"changes": {_uri(ws, "src/a.py"): [_edit(0, 0, 0, 3, "x"), _edit(0, 2, 0, 4, "y")]}})


def test_an_edit_to_a_missing_file_is_rejected(ws: Workspace) -> None:
    with pytest.raises(EditRejected, match="does not exist"):
        _plan(ws, {"changes": {_uri(ws, "src/nope.py"): [_edit(0, 0, 0, 0, "x")]}})


@pytest.mark.parametrize(
    "edit",
    [
        {"documentChanges": "no"},
        {"changes": ["no"]},
        {"documentChanges": [{"textDocument": {"uri": "file:///x"}}]},
        {"documentChanges": [{"edits": []}]},
        {"changeAnnotations": []},
    ],
)
def test_malformed_workspace_edits_are_rejected(ws: Workspace, edit: dict[str, Any]) -> None:
    with pytest.raises((EditRejected, PathOutsideWorkspace)):
        _plan(ws, edit)


def test_an_unknown_resource_kind_is_not_guessed(ws: Workspace) -> None:
    with pytest.raises(EditRejected, match="unknown kind 'chmod'"):
        _plan(ws, {"documentChanges": [{"kind": "chmod", "uri": _uri(ws, "src/a.py")}]})


def test_annotations_needing_confirmation_force_approval(ws: Workspace) -> None:
    uri = _uri(ws, "src/a.py")
    annotated = {
        "documentChanges": [
            {
                "textDocument": {"uri": uri, "version": 1},
                "edits": [_edit(0, 0, 0, 1, "x", annotationId="comments")],
            }
        ],
        "changeAnnotations": {"comments": {"label": "Rename in comments", "needsConfirmation": True}},
    }
    plan = _plan(ws, annotated)
    assert plan.annotations["comments"]["needsConfirmation"] is True
    assert plan.notes == ("the server asks to confirm a text edit on src/a.py (Rename in comments)",)
    assert approval_for(plan).required
    annotated["changeAnnotations"] = {"comments": {"label": "Rename in comments"}}
    assert not approval_for(_plan(ws, annotated)).required
    annotated["changeAnnotations"] = {}
    with pytest.raises(EditRejected, match="'comments', which changeAnnotations does not define"):
        _plan(ws, annotated)


def test_a_snippet_edit_is_planned_as_text_with_a_note(ws: Workspace) -> None:
    edit = {"range": _edit(1, 0, 1, 0, "")["range"], "snippet": {"kind": "snippet", "value": "c = ${1:3}\n"}}
    plan = _plan(
        ws,
        {"documentChanges": [{"textDocument": {"uri": _uri(ws, "src/a.py"), "version": 2}, "edits": [edit]}]},
    )
    assert plan.files[0].after == "a = 1\nc = 3\nb = 2\n"
    assert plan.notes and "snippet" in plan.notes[0]
    assert approval_for(plan).required


# -- resource operations -----------------------------------------------------------------------------------


def test_edits_to_a_created_file_start_from_empty_text(ws: Workspace) -> None:
    uri = _uri(ws, "src/new/c.py")
    plan = _plan(
        ws,
        {
            "documentChanges": [
                {"kind": "create", "uri": uri},
                {"textDocument": {"uri": uri, "version": None}, "edits": [_edit(0, 0, 0, 0, "c = 3\n")]},
            ]
        },
    )
    (create,) = plan.resources
    assert create.kind == "create" and not create.exists and not create.would_overwrite
    (only,) = plan.files
    assert (only.file.display, only.before, only.after) == ("src/new/c.py", "", "c = 3\n")
    assert plan.read == {}


def test_creating_an_existing_file_needs_an_option(ws: Workspace) -> None:
    uri = _uri(ws, "src/a.py")
    with pytest.raises(EditRejected, match="exists, without overwrite or ignoreIfExists"):
        _plan(ws, {"documentChanges": [{"kind": "create", "uri": uri}]})
    skipped = _plan(
        ws, {"documentChanges": [{"kind": "create", "uri": uri, "options": {"ignoreIfExists": True}}]}
    )
    assert skipped.resources[0].skipped and not skipped.resources[0].would_overwrite
    # overwrite wins over ignoreIfExists (the specification)
    both = {"overwrite": True, "ignoreIfExists": True}
    over = _plan(ws, {"documentChanges": [{"kind": "create", "uri": uri, "options": both}]})
    assert over.resources[0].would_overwrite and not over.resources[0].skipped


def test_edits_follow_a_file_through_its_rename(ws: Workspace) -> None:
    old, new = _uri(ws, "src/a.py"), _uri(ws, "src/renamed.py")
    for changes in (
        [
            {"kind": "rename", "oldUri": old, "newUri": new},
            {"textDocument": {"uri": new, "version": 1}, "edits": [_edit(0, 0, 0, 1, "x")]},
        ],
        [
            {"textDocument": {"uri": old, "version": 1}, "edits": [_edit(0, 0, 0, 1, "x")]},
            {"kind": "rename", "oldUri": old, "newUri": new},
        ],
    ):
        plan = _plan(ws, {"documentChanges": changes})
        (only,) = plan.files
        assert only.file.display == "src/renamed.py"
        assert (only.before, only.after) == ("a = 1\nb = 2\n", "x = 1\nb = 2\n")
        assert list(plan.read) == [str(Path(ws.roots[0].path) / "src" / "a.py")]
        assert [f.display for f in plan.touched()] == ["src/renamed.py", "src/a.py"]


def test_rename_onto_an_existing_file(ws: Workspace) -> None:
    old, new = _uri(ws, "src/a.py"), _uri(ws, "src/b.py")
    with pytest.raises(EditRejected, match="exists, without overwrite"):
        _plan(ws, {"documentChanges": [{"kind": "rename", "oldUri": old, "newUri": new}]})
    over = _plan(
        ws,
        {
            "documentChanges": [
                {"kind": "rename", "oldUri": old, "newUri": new, "options": {"overwrite": True}}
            ]
        },
    )
    assert over.resources[0].target_exists and over.resources[0].would_overwrite
    with pytest.raises(EditRejected, match="does not exist"):
        _plan(ws, {"documentChanges": [{"kind": "rename", "oldUri": _uri(ws, "src/gone.py"), "newUri": new}]})


def test_deleting_and_then_editing_is_rejected(ws: Workspace) -> None:
    uri = _uri(ws, "src/a.py")
    with pytest.raises(EditRejected, match="does not exist"):
        _plan(
            ws,
            {
                "documentChanges": [
                    {"kind": "delete", "uri": uri},
                    {"textDocument": {"uri": uri, "version": 1}, "edits": [_edit(0, 0, 0, 1, "x")]},
                ]
            },
        )
    with pytest.raises(EditRejected, match="does not exist"):
        _plan(ws, {"documentChanges": [{"kind": "delete", "uri": _uri(ws, "src/gone.py")}]})
    ignored = _plan(
        ws,
        {
            "documentChanges": [
                {"kind": "delete", "uri": _uri(ws, "src/gone.py"), "options": {"ignoreIfNotExists": True}}
            ]
        },
    )
    assert ignored.resources[0].skipped


def test_folder_operations_are_inspected_and_may_not_mix_with_edits_inside(ws: Workspace) -> None:
    plan = _plan(
        ws, {"documentChanges": [{"kind": "delete", "uri": _uri(ws, "pkg"), "options": {"recursive": True}}]}
    )
    assert plan.resources[0].directory and plan.resources[0].recursive
    with pytest.raises(EditRejected, match=r"folder pkg and also changes pkg/m\.py"):
        _plan(
            ws,
            {
                "documentChanges": [
                    {
                        "textDocument": {"uri": _uri(ws, "pkg/m.py"), "version": 1},
                        "edits": [_edit(0, 0, 0, 1, "x")],
                    },
                    {"kind": "rename", "oldUri": _uri(ws, "pkg"), "newUri": _uri(ws, "lib")},
                ]
            },
        )
    with pytest.raises(EditRejected, match="workspace root"):
        _plan(
            ws,
            {"documentChanges": [{"kind": "delete", "uri": ws.roots[0].uri, "options": {"recursive": True}}]},
        )
