"""The pure rules behind issue 20 items 4, 6, 8, 10 and 11, with plain values (the real-server checks are
in test_answers_real.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.intel.files.text import Document, PositionEncoding
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.reading.baselines import LAST, MAX_BASELINES, Baselines
from kandev_lsp.intel.reading.symbols import flatten_symbols
from kandev_lsp.intel.reading.targets import Target, base_anchors, member_of_class, resolve_target
from kandev_lsp.intel.surface.summaries import summarize
from kandev_lsp.language import LanguageSpec
from kandev_lsp.lsp.roots import find_project_root

UTF16 = PositionEncoding.UTF16


def _exists(*paths: str) -> Any:
    return lambda path: path in paths


def test_a_nested_project_is_covered_by_the_outer_one_unless_the_language_keeps_it_separate() -> None:
    """Item 4: click's examples/aliases/setup.py cut it off from click's sources."""
    files = _exists("/w/setup.py", "/w/examples/aliases/setup.py", "/w/go.mod", "/w/sub/go.mod")
    nested = "/w/examples/aliases/aliases.py"
    markers = ("pyproject.toml", "setup.py")
    assert find_project_root(nested, "/w", markers, files) == "/w/examples/aliases"  # the innermost
    assert find_project_root(nested, "/w", markers, files, covering=True) == "/w"
    assert find_project_root("/w/other/x.py", "/w/other", markers, files, covering=True) == "/w/other"
    assert find_project_root("/w/sub/main.go", "/w", ("go.work", "go.mod"), files) == "/w/sub"
    with pytest.raises(ValueError, match="nested_projects"):
        LanguageSpec("x", "X", "xls", nested_projects="merged")


def test_the_built_in_languages_say_what_a_nested_project_means() -> None:
    from kandev_lsp.host import PluginHost

    languages = PluginHost.load().languages()
    assert languages["go"].nested_projects == "separate"
    assert {languages[name].nested_projects for name in ("python", "typescript")} == {"covered"}


@pytest.mark.parametrize(
    ("result", "summary"),
    [
        (  # item 10: every file counted, and how many were not shown
            {"ok": True, "kind": "references", "files": [{}] * 5, "totalFound": 449, "shown": 100,
             "truncated": True, "totalFiles": 18},
            "449 references · 18 files (100 of 449 shown; 13 of 18 files not shown)",
        ),
        (  # item 4: an answer that withholds results says so
            {"ok": True, "kind": "definition", "files": [], "totalFound": 0, "omitted": {"outsideWorkspace": 1}},
            "no definitions · 1 definition outside the workspace withheld",
        ),
        (
            {"ok": True, "kind": "references", "files": [{}], "totalFound": 3,
             "omitted": {"outsideWorkspace": 2, "nonFileUri": 1}},
            "3 references · 1 file · 2 references outside the workspace, 1 reference not a file withheld",
        ),
        (  # item 8: a member found through the class's bases is named, as the answer is about it
            {"ok": True, "kind": "references", "files": [{}], "totalFound": 1,
             "target": {"symbol": "MultiCommand.invoke", "confidence": "inherited", "line": 1654}},
            "1 reference · 1 file · of MultiCommand.invoke (inherited)",
        ),
        (
            {"ok": True, "kind": "definition", "files": [{}], "totalFound": 1,
             "target": {"symbol": "Command.invoke", "confidence": "firstMatch"}},
            "1 definition · 1 file · of Command.invoke (the first of several matches)",
        ),
        (  # a search in tsserver's inferred project (no tsconfig.json) says what it covered
            {"ok": True, "kind": "references", "files": [], "totalFound": 0, "inferredProject": True,
             "notice": "no tsconfig.json or jsconfig.json applies to this file, ..."},
            "no references · inferred project: open files and their imports only",
        ),
        (  # item 11: a file the baseline knew nothing of is counted, and the summary says it was not compared
            {"ok": True, "status": "current", "counts": {"error": 5, "warning": 0},
             "delta": {"since": "b2", "counts": {"introduced": 4, "resolved": 0},
                       "withoutBaseline": ["src/n1.ts", "src/n2.ts", "src/n3.ts", "src/new.ts"]}},
            "5 errors, 0 warnings · since b2: 4 introduced, 0 resolved"
            " (4 files without a baseline: all counted as introduced)",
        ),
        (  # B6.13: a workspace read without activateWorkspace is what was published, never a clean bill
            {"ok": True, "status": "published_workspace", "counts": {"error": 0, "warning": 0},
             "coverage": {"kind": "partial", "filesWithDiagnostics": 1, "filesOpen": 1}},
            "0 errors, 0 warnings (partial: as published for 1 file; activateWorkspace checks every file)",
        ),
        (  # round 4: a list cut by limit says how much of it is shown, as the other tools' summaries do
            {"ok": True, "status": "current", "counts": {"error": 5, "warning": 0},
             "allCounts": {"error": 5, "warning": 0}, "problems": [{}] * 2, "totalFound": 5, "shown": 2,
             "truncated": True},
            "5 errors, 0 warnings (2 of 5 shown)",
        ),
        (  # round 4: severity "error" left 3 warnings out: never "0 warnings"
            {"ok": True, "status": "current", "counts": {"error": 1, "warning": 0},
             "allCounts": {"error": 1, "warning": 3}, "problems": [{}], "totalFound": 1, "shown": 1,
             "truncated": False},
            "1 error, 3 warnings (1 of 4 shown)",
        ),
        (  # round 4: an activated read that opened only activationLimit of the files says so
            {"ok": True, "status": "current", "counts": {"error": 0, "warning": 0},
             "coverage": {"kind": "partial", "filesWithDiagnostics": 50, "filesOpen": 50,
                          "eligibleFiles": 302, "ratio": 0.166, "activated": 50}},
            "0 errors, 0 warnings (partial: 50 of 302 files checked; a higher activationLimit (at most 200)"
            " checks more)",
        ),
        (  # at the most activationLimit allows, no higher limit to suggest
            {"ok": True, "status": "current", "counts": {"error": 0, "warning": 0},
             "coverage": {"kind": "partial", "filesWithDiagnostics": 200, "filesOpen": 200,
                          "eligibleFiles": 302, "ratio": 0.662, "activated": 200}},
            "0 errors, 0 warnings (partial: 200 of 302 files checked; the most one call opens; ask about"
            " the others by path or rootId)",
        ),
        (  # every eligible file opened: the whole workspace's word
            {"ok": True, "status": "current", "counts": {"error": 0, "warning": 0},
             "coverage": {"kind": "complete", "filesWithDiagnostics": 3, "filesOpen": 3,
                          "eligibleFiles": 3, "ratio": 1.0, "activated": 3}},
            "0 errors, 0 warnings",
        ),
        (  # items 1-2 and 11: a diagnostics summary says when it is not confirmed, and the delta
            {"ok": True, "status": "settling", "counts": {"error": 1, "warning": 0},
             "delta": {"since": "b1", "counts": {"introduced": 2, "resolved": 1}}},
            "1 error, 0 warnings (settling) · since b1: 2 introduced, 1 resolved",
        ),
    ],
)  # fmt: skip
def test_summaries(result: dict[str, Any], summary: str) -> None:
    tool = "code_diagnostics" if "counts" in result else "code_navigate"
    assert summarize(tool, result) == summary


SOURCE = (
    "class Base:\n"
    "    def invoke(self) -> None: ...\n"
    "class Group(Multi, metaclass=Meta):\n"
    "    def add(self) -> None: ...\n"
    "setup = make('Thing', (inst) => {\n"
    "  inst._zod.parse = (payload) => payload;\n"
    "})\n"
)


def _range(line: int, start: int, end_line: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": end_line, "character": end}}


def _symbol(
    name: str, kind: int, rng: dict[str, Any], sel: dict[str, Any], children: Any = ()
) -> dict[str, Any]:
    return {"name": name, "kind": kind, "range": rng, "selectionRange": sel, "children": list(children)}


@pytest.fixture
def document(tmp_path: Path) -> Document:
    (tmp_path / "m.py").write_text(SOURCE)
    return Document(Workspace([tmp_path]).resolve("m.py"), SOURCE, version=1)


TREE = [
    _symbol("Base", 5, _range(0, 0, 1, 31), _range(0, 6, 0, 10),
            [_symbol("invoke", 6, _range(1, 4, 1, 31), _range(1, 8, 1, 14))]),
    _symbol("Group", 5, _range(2, 0, 3, 28), _range(2, 6, 2, 11),
            [_symbol("add", 6, _range(3, 4, 3, 28), _range(3, 8, 3, 11))]),
    # tsserver's selection of an assigned arrow function starts at its "(" (issue 20 item 6)
    _symbol("setup", 13, _range(4, 0, 6, 2), _range(4, 0, 4, 5),
            [_symbol("parse", 12, _range(5, 2, 5, 39), _range(5, 20, 5, 39))]),
]  # fmt: skip


def test_a_candidate_id_resolves_to_the_name_even_when_the_selection_starts_after_it(
    document: Document,
) -> None:
    entries = flatten_symbols(TREE)
    resolved = resolve_target(Target("m.py", symbol="setup.parse@6"), document, entries, UTF16)
    assert (resolved.line, resolved.column) == (6, 13)
    assert document.line(5)[resolved.column - 1 :].startswith("parse")


def test_an_inherited_member_names_its_class_and_the_bases_to_follow(document: Document) -> None:
    """Item 8: ``Group.invoke`` is not in the document; the names after ``Group`` in its header are the
    bases a definition request follows (keywords and the keyword ``metaclass`` left out; its value is a
    class too, and has no such member)."""
    entries = flatten_symbols(TREE)
    found = member_of_class("Group.invoke", entries)
    assert found is not None and (found[0].name, found[1]) == ("Group", "invoke")
    assert member_of_class("Group.add@4", entries) is None  # an id is never a guess
    assert member_of_class("Nothing.invoke", entries) is None
    anchors = base_anchors(found[0], document, UTF16)
    assert [document.line(line)[index:].split(",")[0].split(")")[0] for line, index in anchors] == [
        "Multi",
        "Meta",
    ]


def test_baselines_are_kept_by_id_and_the_last_one_is_named() -> None:
    store = Baselines()
    first = store.record(1.0, {"a.py": [{"message": "x"}]})
    second = store.record(2.0, {})
    assert store.find(first.id) is first and store.find(LAST) is second
    assert store.find("b-unknown") is None
    for n in range(MAX_BASELINES):
        store.record(3.0 + n, {})
    assert store.find(first.id) is None  # bounded: the oldest went
