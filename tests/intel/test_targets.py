"""Target resolution (B §3, B4.1-B4.10): symbol, line + matchText, line + column, line; table-tested."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.intel.errors import (
    AmbiguousTarget,
    AnchorNotFound,
    InvalidArguments,
    SymbolNotFound,
    TargetOutOfRange,
)
from kandev_lsp.intel.files.text import Document, PositionEncoding
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.reading.symbols import (
    SymbolEntry,
    enclosing_symbol,
    flatten_symbols,
    kind_name,
    kind_number,
)
from kandev_lsp.intel.reading.targets import Target, match_symbols, resolve_target

UTF16 = PositionEncoding.UTF16
UTF8 = PositionEncoding.UTF8

SOURCE = """\
import os


class ChatProvider:
    def send(self, text: str) -> None:
        label = "😀 send"; self.send_now(label)

    def send_now(self, label: str) -> None:
        pass


def send(message: str) -> None:
    ChatProvider().send(message)
"""


def _range(line: int, start: int, end_line: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": end_line, "character": end}}


def _symbol(
    name: str, kind: int, rng: dict[str, Any], sel: dict[str, Any], children: list[Any] | None = None
) -> dict[str, Any]:
    return {"name": name, "kind": kind, "range": rng, "selectionRange": sel, "children": children or []}


#: A documentSymbol answer shaped like pyright's for SOURCE.
TREE = [
    _symbol("os", 2, _range(0, 7, 0, 9), _range(0, 7, 0, 9)),
    _symbol(
        "ChatProvider",
        5,
        _range(3, 0, 8, 12),
        _range(3, 6, 3, 18),
        [
            _symbol("send", 6, _range(4, 4, 5, 47), _range(4, 8, 4, 12)),
            _symbol("send_now", 6, _range(7, 4, 8, 12), _range(7, 8, 7, 16)),
        ],
    ),
    _symbol("send", 12, _range(11, 0, 12, 32), _range(11, 4, 11, 8)),
]


@pytest.fixture
def document(tmp_path: Path) -> Document:
    (tmp_path / "chat.py").write_text(SOURCE)
    workspace = Workspace([tmp_path])
    return Document(workspace.resolve("chat.py"), SOURCE, version=7)


def _resolve(document: Document, symbols: Any = TREE, first_match: bool = False, **target: Any) -> Any:
    parsed = Target.from_json({"path": "chat.py", **target})
    return resolve_target(parsed, document, flatten_symbols(symbols), UTF16, first_match=first_match)


def test_flatten_gives_qualified_names_in_tree_order() -> None:
    entries = flatten_symbols(TREE)
    assert [(e.qualified_name, e.kind_label, e.container) for e in entries] == [
        ("os", "module", None),
        ("ChatProvider", "class", None),
        ("ChatProvider.send", "method", "ChatProvider"),
        ("ChatProvider.send_now", "method", "ChatProvider"),
        ("send", "function", None),
    ]
    assert entries[2].depth == 1


def test_flatten_skips_malformed_items() -> None:
    answer: list[Any] = [
        None,
        {"name": "", "kind": 5, "range": _range(0, 0, 0, 1)},
        {"name": "x", "kind": "class", "range": _range(0, 0, 0, 1)},
        {"name": "y", "kind": 13, "range": {"start": {"line": 0}}},
        {"name": "z", "kind": 13, "range": _range(1, 0, 1, 1)},  # no selectionRange: range.start stands in
        {"name": "w", "kind": 13, "location": {"range": _range(0, 0, 0, 1)}},
    ]
    assert [(e.name, e.selection_line) for e in flatten_symbols(answer)] == [("z", 1)]
    assert flatten_symbols(None) == [] and flatten_symbols({"name": "x"}) == []


def test_symbol_information_lists_use_container_name() -> None:
    uri = "file:///w/chat.py"
    answer = [
        {"name": "ChatProvider", "kind": 5, "location": {"uri": uri, "range": _range(3, 0, 8, 12)}},
        {
            "name": "send",
            "kind": 6,
            "containerName": "ChatProvider",
            "location": {"uri": uri, "range": _range(4, 4, 5, 47)},
        },
        {"name": "lazy", "kind": 12, "location": {"uri": uri}},  # WorkspaceSymbol without a range
    ]
    entries = flatten_symbols(answer)
    assert [(e.qualified_name, e.uri) for e in entries] == [
        ("ChatProvider", uri),
        ("ChatProvider.send", uri),
        ("lazy", uri),
    ]


@pytest.mark.parametrize(
    ("kind", "number"),
    [("class", 5), ("Class", 5), ("enumMember", 22), ("enum_member", 22), ("enum-member", 22)],
)
def test_kind_names(kind: str, number: int) -> None:
    assert kind_number(kind) == number
    assert kind_name(5) == "class" and kind_name(99) == "kind99"
    assert kind_number("gadget") is None


@pytest.mark.parametrize(
    ("query", "kind", "expected"),
    [
        ("ChatProvider", None, ["ChatProvider"]),
        ("ChatProvider.send", None, ["ChatProvider.send"]),
        ("send", None, ["ChatProvider.send", "send"]),
        ("send", "function", ["send"]),
        ("send", "method", ["ChatProvider.send"]),
        ("send_now", None, ["ChatProvider.send_now"]),
        ("Provider.send", None, []),  # a suffix only at a "." boundary
        ("send@12", None, ["send"]),
        ("ChatProvider.send@5", None, ["ChatProvider.send"]),
        ("send@99", None, []),
    ],
)
def test_match_symbols(query: str, kind: str | None, expected: list[str]) -> None:
    assert [e.qualified_name for e in match_symbols(flatten_symbols(TREE), query, kind)] == expected


def test_unique_symbol_resolves_to_its_name_start(document: Document) -> None:
    resolved = _resolve(document, symbol="ChatProvider.send")
    assert resolved.position == {"line": 4, "character": 8}
    assert (resolved.line, resolved.column) == (5, 9)
    assert resolved.range == _range(4, 4, 5, 47)  # the whole declaration, for bodies and replacements
    assert resolved.confidence == "symbol"
    assert resolved.version == 7
    assert resolved.uri == document.file.uri
    assert resolved.to_json() == {
        "path": "chat.py",
        "line": 5,
        "column": 9,
        "symbol": "ChatProvider.send",
        "kind": "method",
        "id": "ChatProvider.send@5",
        "confidence": "symbol",
        "version": 7,
    }


def test_more_than_one_match_is_ambiguous_with_candidates(document: Document) -> None:
    with pytest.raises(AmbiguousTarget) as caught:
        _resolve(document, symbol="send")
    result = caught.value.to_result()
    assert result["ok"] is False and result["ambiguous"] is True
    assert result["candidates"] == [
        {
            "id": "ChatProvider.send@5",
            "qualifiedName": "ChatProvider.send",
            "kind": "method",
            "path": "chat.py",
            "rootId": document.file.root.id,
            "line": 5,
            "endLine": 6,
            "container": "ChatProvider",
        },
        {
            "id": "send@12",
            "qualifiedName": "send",
            "kind": "function",
            "path": "chat.py",
            "rootId": document.file.root.id,
            "line": 12,
            "endLine": 13,
            "container": None,
        },
    ]
    assert "firstMatch" in result["error"]
    # Each candidate id, passed back as the symbol, resolves to exactly that candidate.
    for candidate in result["candidates"]:
        assert _resolve(document, symbol=candidate["id"]).line == candidate["line"]


@pytest.mark.parametrize(
    ("target", "line", "confidence"),
    [
        ({"symbol": "send", "kind": "function"}, 12, "symbol"),
        ({"symbol": "send", "line": 12}, 12, "symbol"),
        ({"symbol": "send", "line": 6}, 5, "symbol"),  # the line is inside ChatProvider.send's body
    ],
)
def test_kind_and_line_narrow_an_ambiguous_symbol(
    document: Document, target: dict[str, Any], line: int, confidence: str
) -> None:
    resolved = _resolve(document, **target)
    assert (resolved.line, resolved.confidence) == (line, confidence)


def test_first_match_takes_the_first_in_document_order(document: Document) -> None:
    resolved = _resolve(document, first_match=True, symbol="send")
    assert (resolved.symbol.qualified_name, resolved.confidence) == ("ChatProvider.send", "firstMatch")


def test_zero_matches_give_the_nearest_names(document: Document) -> None:
    with pytest.raises(SymbolNotFound) as caught:
        _resolve(document, symbol="ChatProvider.sendNow")
    result = caught.value.to_result()
    assert "ChatProvider.send_now" in result["candidates"]
    assert "not found in chat.py" in result["error"] and "nearest" in result["error"]
    with pytest.raises(SymbolNotFound) as caught:
        _resolve(document, symbol="Chat")
    assert "ChatProvider" in caught.value.to_result()["candidates"]  # a substring counts as near


def test_a_symbol_of_another_kind_says_which_kinds_exist(document: Document) -> None:
    with pytest.raises(SymbolNotFound, match=r"is not a class .*it is: function, method"):
        _resolve(document, symbol="send", kind="class")


def test_no_symbols_suggest_line_targeting(document: Document) -> None:
    with pytest.raises(SymbolNotFound, match=r"reported no symbols.*matchText"):
        _resolve(document, symbols=[], symbol="send")


def test_symbol_information_positions_move_to_the_name(document: Document) -> None:
    uri = document.file.uri
    answer = [
        {"name": "send", "kind": 12, "location": {"uri": uri, "range": _range(11, 0, 12, 32)}},
        {
            "name": "send_now",
            "kind": 6,
            "containerName": "ChatProvider",
            "location": {"uri": uri, "range": _range(7, 4, 8, 12)},
        },
    ]
    resolved = _resolve(document, symbols=answer, symbol="send")
    assert resolved.position == {"line": 11, "character": 4}  # "def " skipped
    resolved = _resolve(document, symbols=answer, symbol="send_now")
    assert resolved.position == {"line": 7, "character": 8}


@pytest.mark.parametrize(
    ("target", "position", "column", "confidence"),
    [
        ({"line": 6, "matchText": "send_now"}, {"line": 5, "character": 32}, 32, "anchor"),
        ({"line": 6, "matchText": "send"}, {"line": 5, "character": 20}, 20, "anchor"),
        # with a column too, the occurrence nearest to it wins
        ({"line": 6, "matchText": "send", "column": 30}, {"line": 5, "character": 32}, 32, "anchor"),
        ({"line": 6, "column": 10}, {"line": 5, "character": 9}, 10, "position"),
        ({"line": 6, "column": 37}, {"line": 5, "character": 37}, 37, "position"),
        ({"line": 5}, {"line": 4, "character": 4}, 5, "line"),
        ({"line": 2}, {"line": 1, "character": 0}, 1, "line"),  # a blank line: its start
    ],
)
def test_line_targets(
    document: Document, target: dict[str, Any], position: dict[str, int], column: int, confidence: str
) -> None:
    resolved = _resolve(document, **target)
    assert resolved.position == position  # UTF-16: the emoji before "send_now" counts two units
    assert (resolved.line, resolved.column, resolved.confidence) == (target["line"], column, confidence)
    assert resolved.symbol is None


def test_positions_follow_the_negotiated_encoding(document: Document) -> None:
    parsed = Target.from_json({"path": "chat.py", "line": 6, "matchText": "send_now"})
    assert resolve_target(parsed, document, None, UTF8).position == {"line": 5, "character": 34}
    assert resolve_target(parsed, document, None, PositionEncoding.UTF32).position == {
        "line": 5,
        "character": 31,
    }


def test_a_missing_anchor_fails_and_shows_the_current_line(document: Document) -> None:
    with pytest.raises(AnchorNotFound) as caught:
        _resolve(document, line=5, matchText="send_now")
    result = caught.value.to_result()
    assert result["currentLine"] == "    def send(self, text: str) -> None:"
    assert result["line"] == 5
    assert result["foundOnLines"] == [6, 8]
    assert "occurs on lines 6, 8" in result["error"]
    with pytest.raises(AnchorNotFound, match=r"does not occur in the file"):
        _resolve(document, line=5, matchText="nowhere")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ({"line": 99}, rf"line 99 is past the end of chat.py \({SOURCE.count(chr(10))} lines\)"),
        ({"line": 5, "column": 60}, "column 60 is past the end of line 5"),
    ],
)
def test_out_of_range_targets(document: Document, target: dict[str, Any], message: str) -> None:
    with pytest.raises(TargetOutOfRange, match=message):
        _resolve(document, **target)


def test_a_files_length_in_an_out_of_range_message_is_its_line_count(tmp_path: Path) -> None:
    """A 13-line file is 13 lines, not 14 (LSP's empty line after the final break; issue 17 item 12)."""
    text = "".join(f"x{i} = {i}\n" for i in range(13))
    (tmp_path / "app.py").write_text(text)
    doc = Document(Workspace([tmp_path]).resolve("app.py"), text, version=1)
    with pytest.raises(TargetOutOfRange, match=r"^line 15 is past the end of app.py \(13 lines\)$") as caught:
        resolve_target(Target.from_json({"path": "app.py", "line": 15}), doc, [], UTF16)
    assert caught.value.to_result()["lineCount"] == 13
    assert resolve_target(Target.from_json({"path": "app.py", "line": 13}), doc, [], UTF16).line == 13


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ({}, "target needs `symbol`"),
        ({"column": 3}, "target needs `symbol`"),
        ({"symbol": "x", "column": 3}, "go with target.line"),
        ({"symbol": "x", "matchText": "x"}, "go with target.line"),
        ({"line": 3, "kind": "class"}, "give target.symbol too"),
        ({"symbol": "x", "kind": "gadget"}, "not a symbol kind"),
    ],
)
def test_target_field_rules(target: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidArguments) as caught:
        Target.from_json({"path": "a.py", **target}, tool="code_navigate")
    assert any(problem in item for item in caught.value.problems)
    assert caught.value.message.startswith("invalid arguments for code_navigate")


def test_enclosing_symbol_is_the_innermost() -> None:
    entries = flatten_symbols(TREE)
    holder = enclosing_symbol(entries, 5)
    assert isinstance(holder, SymbolEntry) and holder.qualified_name == "ChatProvider.send"
    assert enclosing_symbol(entries, 1) is None


#: A line where an anchor occurs several times, as a whole word and inside a longer name.
REPEATED = """\
def greet(name): return name
greeting = greet("a") + greet("b")
label = greeting if greet else None
"""


@pytest.fixture
def repeated(tmp_path: Path) -> Document:
    (tmp_path / "greet.py").write_text(REPEATED)
    return Document(Workspace([tmp_path]).resolve("greet.py"), REPEATED, version=3)


def _anchor(document: Document, first_match: bool = False, **target: Any) -> Any:
    parsed = Target.from_json({"path": "greet.py", **target})
    return resolve_target(parsed, document, None, UTF16, first_match=first_match)


def test_a_repeated_anchor_is_ambiguous_with_a_candidate_per_occurrence(repeated: Document) -> None:
    # It took the first occurrence silently: "greet" at column 1, inside "greeting".
    with pytest.raises(AmbiguousTarget) as caught:
        _anchor(repeated, line=2, matchText="greet")
    result = caught.value.to_result()
    assert result["ok"] is False and result["ambiguous"] is True
    assert [(c["line"], c["column"], c["endColumn"]) for c in result["candidates"]] == [
        (2, 12, 17),
        (2, 25, 30),
    ]
    assert result["candidates"][0]["context"] == 'greeting = [greet]("a") + greet("b")'
    assert result["candidates"][0]["path"] == "greet.py" and "rootId" in result["candidates"][0]
    assert "occurs 2 times on line 2" in result["error"] and "inside longer names" in result["error"]
    assert "target.column" in result["error"] and "firstMatch" in result["error"]


def test_a_candidate_column_resolves_the_ambiguity(repeated: Document) -> None:
    with pytest.raises(AmbiguousTarget) as caught:
        _anchor(repeated, line=2, matchText="greet")
    second = caught.value.to_result()["candidates"][1]
    resolved = _anchor(repeated, line=2, matchText="greet", column=second["column"])
    assert (resolved.column, resolved.end_column, resolved.confidence) == (25, 30, "anchor")


def test_first_match_takes_the_first_occurrence(repeated: Document) -> None:
    resolved = _anchor(repeated, first_match=True, line=2, matchText="greet")
    assert (resolved.column, resolved.confidence) == (12, "firstMatch")
    assert resolved.position == {"line": 1, "character": 11}


@pytest.mark.parametrize(
    ("line", "match_text", "column"),
    [
        (3, "greet", 21),  # "greeting" comes first on the line; the whole word wins
        (1, "greet", 5),
        (3, "greeting", 9),
        (1, "name)", 11),  # ")" is not a name character: only the start needs a boundary
    ],
)
def test_a_whole_word_occurrence_wins_over_one_inside_a_longer_name(
    repeated: Document, line: int, match_text: str, column: int
) -> None:
    resolved = _anchor(repeated, line=line, matchText=match_text)
    assert (resolved.column, resolved.confidence) == (column, "anchor")


def test_occurrences_inside_names_count_when_none_stands_alone(repeated: Document) -> None:
    # "gree" is never a whole word: all three occurrences are candidates.
    with pytest.raises(AmbiguousTarget) as caught:
        _anchor(repeated, line=2, matchText="gree")
    assert [c["column"] for c in caught.value.to_result()["candidates"]] == [1, 12, 25]
    assert _anchor(repeated, line=2, matchText="greeti").column == 1  # a unique substring
