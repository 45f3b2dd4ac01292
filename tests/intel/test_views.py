"""code_symbols outlines and workspace symbols, inlay hints, diagnostics problems (B6.1-B6.2, B6.11-B6.12,
B6.30-B6.31): server answers in, what the model reads out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.intel.files.text import Document, PositionEncoding
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.reading.hints import inlay_hints, request_range
from kandev_lsp.intel.reading.outline import document_outline, workspace_symbols
from kandev_lsp.intel.reading.problems import count_by_severity, file_problems, problems_view

UTF16 = PositionEncoding.UTF16


def _range(line: int, start: int, end_line: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": end_line, "character": end}}


def _symbol(
    name: str, kind: int, line: int, end: int, children: list[Any] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "range": _range(line, 0, end, 1),
        "selectionRange": _range(line, 6, line, 6 + len(name)),
        "children": children or [],
        **extra,
    }


TREE = [
    _symbol(
        "Parser", 5, 0, 20, [_symbol("parse", 6, 2, 10), _symbol("reset", 6, 12, 19, detail="() -> None")]
    ),
    _symbol("main", 12, 22, 30),
]


def test_outline_keeps_the_nesting() -> None:
    assert document_outline(TREE) == {
        "symbols": [
            {
                "name": "Parser",
                "kind": "class",
                "line": 1,
                "endLine": 21,
                "children": [
                    {"name": "parse", "kind": "method", "line": 3, "endLine": 11},
                    {"name": "reset", "kind": "method", "line": 13, "endLine": 20, "detail": "() -> None"},
                ],
            },
            {"name": "main", "kind": "function", "line": 23, "endLine": 31},
        ],
        "totalFound": 4,
        "shown": 4,
        "truncated": False,
    }


def test_outline_limit_keeps_the_top_of_the_file() -> None:
    result = document_outline(TREE, limit=2)
    assert result["symbols"] == [
        {
            "name": "Parser",
            "kind": "class",
            "line": 1,
            "endLine": 21,
            "children": [{"name": "parse", "kind": "method", "line": 3, "endLine": 11}],
        }
    ]
    assert (result["shown"], result["totalFound"], result["truncated"]) == (2, 4, True)


def test_outline_query_filters_flat_with_qualified_names() -> None:
    result = document_outline(TREE, query="PARS")
    assert [s["qualifiedName"] for s in result["symbols"]] == ["Parser", "Parser.parse", "Parser.reset"]
    assert result["symbols"][1]["container"] == "Parser"


def test_outline_of_symbol_information_is_flat() -> None:
    answer = [
        {"name": "Parser", "kind": 5, "location": {"uri": "file:///w/a.py", "range": _range(0, 0, 20, 1)}},
        {
            "name": "parse",
            "kind": 6,
            "containerName": "Parser",
            "location": {"uri": "file:///w/a.py", "range": _range(2, 4, 10, 1)},
        },
    ]
    assert document_outline(answer)["symbols"] == [
        {"name": "Parser", "kind": "class", "line": 1, "endLine": 21},
        {"name": "parse", "kind": "method", "line": 3, "endLine": 11, "container": "Parser"},
    ]


def test_long_details_are_cut() -> None:
    result = document_outline([_symbol("f", 12, 0, 1, detail="x" * 500)])
    assert len(result["symbols"][0]["detail"]) == 120


def test_workspace_symbols_ranked_and_kept_inside_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.ts").write_text("x\n")
    workspace = Workspace([tmp_path])
    uri = (tmp_path / "src" / "a.ts").as_uri()

    def info(name: str, where: str = uri, container: str | None = None) -> dict[str, Any]:
        item: dict[str, Any] = {
            "name": name,
            "kind": 12,
            "location": {"uri": where, "range": _range(3, 0, 5, 1)},
        }
        if container:
            item["containerName"] = container
        return item

    answer = [
        info("fetchModelsLater"),
        info("prefetch"),
        info("fetch", "file:///usr/lib/node_modules/typescript/lib/lib.dom.d.ts"),
        info("fetch", container="Client"),
    ]
    result = workspace_symbols(answer, workspace, "fetch", limit=2)
    assert result == {
        "symbols": [
            {
                "name": "fetch",
                "kind": "function",
                "line": 4,
                "endLine": 6,
                "container": "Client",
                "path": "src/a.ts",
            },
            {"name": "fetchModelsLater", "kind": "function", "line": 4, "endLine": 6, "path": "src/a.ts"},
        ],
        "totalFound": 3,
        "shown": 2,
        "truncated": True,
        "omitted": {"outsideWorkspace": 1},
    }


def test_workspace_symbols_of_two_servers_over_one_file_are_listed_once(tmp_path: Path) -> None:
    """A workspace with no root marker at its top and a nested pyproject.toml has two pyright servers, the
    outer one covering the nested project too: code_symbols {query: "F"} answered "3 symbols" with
    app/src/lib.py's f twice (a round-4 trial). The same symbol (file, name, kind, position) counts once."""
    (tmp_path / "lib.py").write_text("def f(x):\n    return x\n\ndef g():\n    pass\n")
    workspace = Workspace([tmp_path])
    uri = (tmp_path / "lib.py").as_uri()

    def info(name: str, line: int) -> dict[str, Any]:
        return {"name": name, "kind": 12, "location": {"uri": uri, "range": _range(line, 4, line, 5)}}

    outer, inner = [info("f", 0), info("g", 3)], [info("f", 0)]
    result = workspace_symbols([*outer, *inner], workspace, "f")
    assert [(s["name"], s["line"]) for s in result["symbols"]] == [("f", 1), ("g", 4)], result
    assert (result["totalFound"], result["shown"], result["truncated"]) == (2, 2, False)
    moved = workspace_symbols([*outer, info("f", 3)], workspace, "f")  # another f, elsewhere: both
    assert moved["totalFound"] == 3, moved


@pytest.fixture
def document(tmp_path: Path) -> Document:
    text = 'const 😀 = f(1, "a");\nlet y = 2\n'
    (tmp_path / "h.ts").write_text(text)
    return Document(Workspace([tmp_path]).resolve("h.ts"), text, version=2)


def test_request_range_covers_the_document_or_the_lines(document: Document) -> None:
    assert request_range(document, UTF16) == _range(0, 0, 2, 0)
    assert request_range(document, UTF16, (1, 1)) == _range(0, 0, 0, 21)  # UTF-16: the emoji is two units
    assert request_range(document, PositionEncoding.UTF32, (1, 1)) == _range(0, 0, 0, 20)
    assert request_range(document, UTF16, (2, 99)) == _range(1, 0, 2, 0)


def test_inlay_hints_keep_labels_kinds_tooltips_padding_and_edits(document: Document) -> None:
    answer = [
        {
            "position": {"line": 0, "character": 15},
            "label": [
                {"value": "b: "},
                {"value": "string", "location": {"uri": "file:///x", "range": _range(0, 0, 0, 1)}},
            ],
            "kind": 2,
            "paddingRight": True,
            "tooltip": {"kind": "markdown", "value": "```ts\n(parameter) b: string\n```"},
        },
        {
            "position": {"line": 0, "character": 8},
            "label": ": number",
            "kind": 1,
            "textEdits": [{"range": _range(0, 8, 0, 8), "newText": ": number"}],
            "paddingLeft": False,
        },
        {"position": {"line": 1}, "label": "bad"},
        {"position": {"line": 1, "character": 5}, "label": [{"value": 3}]},
    ]
    assert inlay_hints(answer, document, UTF16) == {
        "hints": [
            {
                "line": 1,
                "column": 8,
                "label": ": number",
                "kind": "type",
                "textEdits": [{"line": 1, "column": 8, "endLine": 1, "endColumn": 8, "newText": ": number"}],
            },
            {
                "line": 1,
                "column": 15,
                "label": "b: string",
                "kind": "parameter",
                "tooltip": "(parameter) b: string",
                "paddingRight": True,
            },
        ],
        "totalFound": 2,
        "shown": 2,
        "truncated": False,
    }
    assert inlay_hints(answer, document, UTF16, limit=1)["truncated"] is True
    assert inlay_hints(None, document, UTF16)["hints"] == []


def test_diagnostics_become_problems_with_character_columns(document: Document) -> None:
    diagnostics = [
        {
            "range": _range(0, 9, 0, 13),
            "severity": 1,
            "message": "Cannot find name 'f'.",
            "source": "ts",
            "code": 2304,
        },
        {"range": _range(1, 4, 2, 0), "severity": 2, "message": "  unused  ", "code": "no-unused"},
        {"range": _range(1, 0, 1, 1), "message": "no severity"},
        {"range": _range(1, 0, 1, 1), "severity": 4, "message": "x" * 2000},
        {"severity": 3, "message": "no range"},
        {"range": _range(0, 0, 0, 1), "severity": 1},
    ]
    problems = file_problems(document.file, diagnostics, document, UTF16)
    assert problems[0] == {
        "path": "h.ts", "line": 1, "column": 9, "endColumn": 13, "severity": "error",
        "message": "Cannot find name 'f'.", "source": "ts", "code": 2304,
    }  # fmt: skip
    assert problems[1] == {
        "path": "h.ts", "line": 2, "column": 5, "endLine": 3, "endColumn": 1, "severity": "warning",
        "message": "unused", "code": "no-unused",
    }  # fmt: skip
    assert problems[2]["severity"] == "error"
    assert len(problems[3]["message"]) == 1000
    assert (problems[4]["line"], problems[4]["severity"]) == (1, "info")
    assert len(problems) == 5
    without_text = file_problems(document.file, diagnostics[:1], None, UTF16)
    assert (without_text[0]["line"], without_text[0]["column"]) == (1, 10)  # as the server counted


def test_problems_view_counts_filters_sorts_and_caps() -> None:
    def problem(path: str, line: int, severity: str) -> dict[str, Any]:
        return {"path": path, "line": line, "column": 1, "severity": severity, "message": "m"}

    problems = [
        problem("b.ts", 1, "warning"),
        problem("a.ts", 9, "error"),
        problem("a.ts", 2, "hint"),
        problem("a.ts", 3, "error"),
    ]
    view = problems_view(problems, severity="warning", limit=2)
    assert view["counts"] == {"error": 2, "warning": 1, "info": 0, "hint": 0}
    assert view["allCounts"] == {"error": 2, "warning": 1, "info": 0, "hint": 1}
    assert [(p["path"], p["line"]) for p in view["problems"]] == [("a.ts", 3), ("a.ts", 9)]
    assert (view["totalFound"], view["shown"], view["truncated"]) == (3, 2, True)
    assert problems_view(problems)["totalFound"] == 4
    assert count_by_severity([]) == {"error": 0, "warning": 0, "info": 0, "hint": 0}
