"""Document lines and conversions agree with the shared LSP position helpers (kandev_lsp.lsp.positions)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kandev_lsp.intel.files.text import Document, PositionEncoding
from kandev_lsp.intel.files.workspace import Workspace, WorkspaceFile
from kandev_lsp.lsp.positions import LineIndex

_PIECES = ["a", "é", "😀", " ", "\n", "\r\n", "\r", "\f", "\u2028", "\x85", "\t", "x = 1"]


@pytest.fixture(scope="module")
def file(tmp_path_factory: pytest.TempPathFactory) -> WorkspaceFile:
    root = tmp_path_factory.mktemp("text")
    (root / "t.txt").write_text("")
    return Workspace([root]).resolve("t.txt")


def test_lines_end_only_where_lsp_ends_them(file: WorkspaceFile) -> None:
    document = Document(file, "a\r\nb\rc\nd\fe\u2028f\x85g\n")
    assert [document.line(n) for n in range(document.line_count)] == ["a", "b", "c", "d\fe\u2028f\x85g", ""]
    assert document.line(-1) == "" and document.line(99) == ""


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=30),
    line=st.integers(min_value=0, max_value=12),
    character=st.integers(min_value=0, max_value=40),
    encoding=st.sampled_from(list(PositionEncoding)),
)
def test_document_agrees_with_line_index(
    file: WorkspaceFile, pieces: list[str], line: int, character: int, encoding: PositionEncoding
) -> None:
    """Property: lines, line count, and both conversions match LineIndex on the whole text."""
    text = "".join(pieces)
    document, index = Document(file, text), LineIndex(text)
    assert document.line_count == index.line_count
    assert document.line(line) == index.line_text(line)
    if line < index.line_count:
        expected = index.offset(line, character, encoding) - index.offset(line, 0, encoding)
        assert document.column_index(line, character, encoding) == expected
        position = document.lsp_position(line, expected, encoding)
        assert (position["line"], position["character"]) == index.position(
            index.offset(line, 0) + expected, encoding
        )


def test_model_positions_tolerate_malformed_values(file: WorkspaceFile) -> None:
    document = Document(file, "abc\n")
    assert document.model_position({"line": 0, "character": 2}, PositionEncoding.UTF16) == (1, 3)
    assert document.model_position({"line": True, "character": -1}, PositionEncoding.UTF16) == (1, 1)
    assert document.model_position(None, PositionEncoding.UTF16) == (1, 1)
    assert document.model_position({"line": 0, "character": 99}, PositionEncoding.UTF16) == (1, 4)


def test_stamped_texts_reuse_a_file_until_it_changes_on_disk(tmp_path: Path) -> None:
    from kandev_lsp.intel.files.text import StampedTexts
    from kandev_lsp.intel.files.workspace import Workspace

    source = tmp_path / "a.py"
    source.write_text("one\n")
    file = Workspace([tmp_path]).resolve("a.py")
    texts = StampedTexts(max_files=1)
    first = texts.document(file)
    assert first is not None and first.line(0) == "one"
    assert texts.document(file) is first  # unchanged on disk: not read again
    source.write_text("two, longer\n")
    second = texts.document(file)
    assert second is not None and second.line(0) == "two, longer"
    os.utime(source, ns=(1, 1))  # same size, another mtime: read again
    assert texts.document(file) is not second
    source.unlink()
    assert texts.document(file) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_line_index_lines_are_the_lsp_line_breaks_split(text: str) -> None:
    """LineIndex's ``str.find`` path (texts without ``\\r``) and its regex path (with ``\\r``) both give
    exactly the lines of a split at ``\\r\\n``, ``\\r`` and ``\\n``, and the lines Document gives."""
    import re

    index = LineIndex(text)
    expected = re.split(r"\r\n|\r|\n", text)
    assert [index.line_text(n) for n in range(index.line_count)] == expected
    assert LineIndex(text.replace("\r", "")).line_count == text.replace("\r", "").count("\n") + 1


def test_a_tool_calls_own_stamps_save_the_second_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stamps the server's re-sync check just took (ManagedServer.checked) reach the text reads of
    the same call through TextCache, so a file is not ``stat``-ed twice per call; a stamp that differs
    from the remembered one still reads the file afresh."""
    from kandev_lsp.intel.files import text as text_module
    from kandev_lsp.intel.files.text import StampedTexts, TextCache

    source = tmp_path / "a.py"
    source.write_text("one\n")
    file = Workspace([tmp_path]).resolve("a.py")
    disk = StampedTexts()
    first = TextCache(disk=disk).document(file)
    info = os.stat(source)
    stamp = (info.st_mtime_ns, info.st_size)
    calls: list[str] = []
    real_stat = os.stat
    monkeypatch.setattr(text_module.os, "stat", lambda path: calls.append(path) or real_stat(path))
    assert TextCache(disk=disk, stamps={file.absolute: stamp}).document(file) is first
    assert calls == []
    source.write_text("two, longer\n")
    changed = TextCache(disk=disk, stamps={file.absolute: (stamp[0] + 1, stamp[1] + 8)}).document(file)
    assert changed is not None and changed.line(0) == "two, longer"
    assert TextCache(disk=disk).document(file) is not first and calls  # without stamps: stat as before
