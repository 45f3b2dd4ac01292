"""Where code_insert and code_replace put text (B6.26-B6.29), and overlap refusal: pure, table-tested,
each edit applied with the applier's own ``apply_text_edits`` to show the resulting text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.intel.edits.placement import (
    OverlappingEdits,
    check_overlaps,
    detect_indentation,
    document_edit,
    insert_at,
    replace_range,
)
from kandev_lsp.intel.edits.plan import apply_text_edits
from kandev_lsp.intel.errors import TargetOutOfRange
from kandev_lsp.intel.files.text import Document, PositionEncoding
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.reading.symbols import flatten_symbols
from kandev_lsp.intel.reading.targets import ResolvedTarget, Target, resolve_target

UTF16 = PositionEncoding.UTF16

SOURCE = (
    "import os\n"  # 1
    "\n"  # 2
    "class Dog:\n"  # 3
    "    def speak(self) -> str:\n"  # 4
    '        return "woof"\n'  # 5
    "\n"  # 6
    "def greet(name: str) -> str:\n"  # 7
    '    return "😀 hello " + name\n'  # 8
)


def _range(line: int, start: int, end_line: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": end_line, "character": end}}


SYMBOLS = [
    {
        "name": "Dog",
        "kind": 5,
        "range": _range(2, 0, 4, 21),
        "selectionRange": _range(2, 6, 2, 9),
        "children": [
            {
                "name": "speak",
                "kind": 6,
                "range": _range(3, 4, 4, 21),
                "selectionRange": _range(3, 8, 3, 13),
            }
        ],
    },
    {"name": "greet", "kind": 12, "range": _range(6, 0, 7, 30), "selectionRange": _range(6, 4, 6, 9)},
]


@pytest.fixture
def document(tmp_path: Path) -> Document:
    (tmp_path / "a.py").write_text(SOURCE)
    return Document(Workspace([tmp_path]).resolve("a.py"), SOURCE, version=4)


def resolved(document: Document, **target: Any) -> ResolvedTarget:
    return resolve_target(Target("a.py", **target), document, flatten_symbols(SYMBOLS), UTF16)


def applied(document: Document, *edits: dict[str, Any]) -> str:
    return apply_text_edits(document.text, list(edits), UTF16)


@pytest.mark.parametrize(
    ("target", "position", "text", "expected"),
    [
        ({"symbol": "greet"}, "before", "@cache", "@cache\ndef greet(name: str) -> str:\n"),
        (
            {"symbol": "Dog.speak"},
            "after",
            "\n    def sit(self) -> None: ...\n",
            '        return "woof"\n\n    def sit(self) -> None: ...\n\ndef greet',
        ),
        ({"symbol": "greet"}, "after", "\nx = 1", "+ name\n\nx = 1\n"),
        ({"line": 1}, "after", "import re", "import os\nimport re\n\nclass Dog"),
        ({"line": 8, "match_text": "hello"}, "start", "big ", '"😀 big hello " + name'),
        ({"line": 8, "match_text": "hello"}, "end", "!", '"😀 hello! " + name'),
        ({"symbol": "Dog"}, "start", "# a dog\n", "\n# a dog\nclass Dog:\n"),
    ],
)
def test_insert_positions(
    document: Document, target: dict[str, Any], position: Any, text: str, expected: str
) -> None:
    placed = insert_at(resolved(document, **target), position, text, UTF16)
    result = applied(document, placed.edit)
    assert expected in result, result
    assert len(result) == len(SOURCE) + len(placed.edit["newText"])


def test_insert_after_the_last_line_of_a_file_without_a_final_break(tmp_path: Path) -> None:
    (tmp_path / "b.py").write_text("x = 1")
    last = Document(Workspace([tmp_path]).resolve("b.py"), "x = 1", version=1)
    target = resolve_target(Target("b.py", line=1), last, None, UTF16)
    placed = insert_at(target, "after", "y = 2\n", UTF16)
    assert apply_text_edits(last.text, [placed.edit], UTF16) == "x = 1\ny = 2"


@pytest.mark.parametrize(
    ("target", "end_line", "text", "expected", "lines"),
    [
        # A symbol: its whole range; the text's final break is not doubled; indentation of line 1 kept.
        (
            {"symbol": "Dog.speak"},
            None,
            'def speak(self) -> str:\n        return "WOOF"\n',
            'class Dog:\n    def speak(self) -> str:\n        return "WOOF"\n\ndef greet',
            (4, 5),
        ),
        # Whole lines, breaks included; a missing final break is added.
        ({"line": 4}, 5, "    speak = None", "class Dog:\n    speak = None\n\ndef greet", (4, 5)),
        ({"line": 2}, None, "", "import os\nclass Dog:", (2, 2)),  # an empty text removes the lines
        # matchText with endLine validates line 1 of the range; without, it is the replaced text.
        ({"line": 7, "match_text": "def greet"}, 8, "greet = str\n", "\n\ngreet = str\n", (7, 8)),
        ({"line": 8, "match_text": "hello"}, None, "bye", '"😀 bye " + name', (8, 8)),
    ],
)
def test_replace_ranges(
    document: Document,
    target: dict[str, Any],
    end_line: int | None,
    text: str,
    expected: str,
    lines: tuple[int, int],
) -> None:
    placed = replace_range(resolved(document, **target), text, end_line, UTF16)
    result = applied(document, placed.edit)
    assert expected in result, result
    assert (placed.line, placed.end_line) == lines
    assert placed.location() == {"path": "a.py", "line": lines[0], "endLine": lines[1]}


def test_a_symbol_range_ending_at_a_line_start_keeps_the_text_break(tmp_path: Path) -> None:
    (tmp_path / "d.py").write_text("def f():\n    pass\n\nx = 1\n")
    source = (tmp_path / "d.py").read_text()
    doc = Document(Workspace([tmp_path]).resolve("d.py"), source, version=1)
    symbols = [{"name": "f", "kind": 12, "range": _range(0, 0, 2, 0), "selectionRange": _range(0, 4, 0, 5)}]
    target = resolve_target(Target("d.py", symbol="f"), doc, flatten_symbols(symbols), UTF16)
    placed = replace_range(target, "def f():\n    return 1\n", None, UTF16)
    assert apply_text_edits(source, [placed.edit], UTF16) == "def f():\n    return 1\n\nx = 1\n"


def test_a_line_range_past_the_end_is_refused(document: Document) -> None:
    with pytest.raises(TargetOutOfRange, match=r"endLine 12 is past the end of a.py"):
        replace_range(resolved(document, line=7), "x", 12, UTF16)


def test_edits_are_bound_to_the_document_version(document: Document) -> None:
    placed = replace_range(resolved(document, line=1), "import re\n", None, UTF16)
    bound = document_edit(document, [placed.edit])
    assert bound["textDocument"] == {"uri": document.file.uri, "version": 4}


def test_overlapping_batch_edits_are_refused_touching_ones_are_not(document: Document) -> None:
    whole = replace_range(resolved(document, symbol="greet"), "x", None, UTF16)
    inner = replace_range(resolved(document, line=8, match_text="hello"), "hi", None, UTF16)
    header = replace_range(resolved(document, line=1), "import re\n", None, UTF16)
    with pytest.raises(
        OverlappingEdits, match=r"edits\[1\] and edits\[2\] overlap in a.py \(lines 7-8 and 8-8\)"
    ):
        check_overlaps([header, whole, inner], ["edits[0]", "edits[1]", "edits[2]"])
    blank = replace_range(resolved(document, line=2), "\n", None, UTF16)  # line 2 touches line 1's end
    check_overlaps([header, blank, whole], ["a", "b", "c"])
    same_point = insert_at(resolved(document, line=3), "before", "x", UTF16)
    again = insert_at(resolved(document, line=3), "before", "y", UTF16)
    with pytest.raises(OverlappingEdits, match="a and b overlap"):
        check_overlaps([same_point, again], ["a", "b"])


def test_indentation_is_detected_from_the_file(document: Document, tmp_path: Path) -> None:
    assert detect_indentation(document) == {"tabSize": 4, "insertSpaces": True}
    (tmp_path / "c.ts").write_text("")
    two = Document(Workspace([tmp_path]).resolve("c.ts"), "a {\n  b\n    c\n}\n")
    assert detect_indentation(two) == {"tabSize": 2, "insertSpaces": True}
    tabs = Document(two.file, "a {\n\tb\n\t\tc\n}\n")
    assert detect_indentation(tabs)["insertSpaces"] is False
