"""Fixes from the MCP user trial (read tools): pure parts, table-tested.

Each test names the trial finding it pins; the real-server counterparts are in
``test_trial_fixes_real.py``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.errors import AmbiguousTarget, PathIsFolder, SymbolNotFound
from kandev_lsp.intel.files.text import Document, PositionEncoding
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.reading.symbols import flatten_symbols
from kandev_lsp.intel.reading.targets import Target, match_symbols, plain_name, resolve_target
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.summaries import summarize

# -- 1. Go method names round-trip (B4.3) ------------------------------------------------------------------
GO_SOURCE = """\
package store

var ErrMissing = 1

type Store interface {
\tGet(key string) string
}

type MemStore struct {
\tdata map[string]string
}

func (m *MemStore) Get(key string) string {
\treturn m.data[key]
}

func (m MemStore) Len() int {
\treturn len(m.data)
}
"""


def _span(line: int, start: int, end_line: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": end_line, "character": end}}


def _go(name: str, kind: int, rng: dict[str, Any], sel: dict[str, Any], children: Any = ()) -> dict[str, Any]:
    return {"name": name, "kind": kind, "range": rng, "selectionRange": sel, "children": list(children)}


#: gopls' documentSymbol answer for GO_SOURCE: methods are top-level, named with their receiver.
GO_TREE = [
    _go("ErrMissing", 13, _span(2, 4, 2, 18), _span(2, 4, 2, 14)),
    _go(
        "Store",
        11,
        _span(4, 5, 6, 1),
        _span(4, 5, 4, 10),
        [_go("Get", 6, _span(5, 1, 5, 24), _span(5, 1, 5, 4))],
    ),
    _go("MemStore", 23, _span(8, 5, 10, 1), _span(8, 5, 8, 13)),
    _go("(*MemStore).Get", 6, _span(12, 0, 14, 1), _span(12, 19, 12, 22)),
    _go("(MemStore).Len", 6, _span(16, 0, 18, 1), _span(16, 18, 16, 21)),
]


@pytest.fixture
def go_document(tmp_path: Path) -> Document:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "store.go").write_text(GO_SOURCE)
    return Document(Workspace([tmp_path]).resolve("store/store.go"), GO_SOURCE, version=1)


def _go_resolve(document: Document, symbol: str) -> Any:
    target = Target.from_json({"path": "store/store.go", "symbol": symbol})
    return resolve_target(target, document, flatten_symbols(GO_TREE), PositionEncoding.UTF16)


@pytest.mark.parametrize(
    ("name", "plain"),
    [
        ("(*MemStore).Get", "MemStore.Get"),
        ("(MemStore).Len", "MemStore.Len"),
        ("(*Stack[T]).Push", "Stack.Push"),
        ("MemStore.Get", "MemStore.Get"),
        ("send(x)", "send(x)"),
    ],
)
def test_plain_name_drops_go_receiver_syntax(name: str, plain: str) -> None:
    assert plain_name(name) == plain


@pytest.mark.parametrize(
    ("symbol", "line"),
    [
        ("MemStore.Get", 13),  # what gopls' workspace/symbol (code_symbols query) shows
        ("(*MemStore).Get", 13),  # what its documentSymbol (code_symbols path) shows
        ("(MemStore).Get", 13),  # the other receiver form names the same method
        ("MemStore.Len", 17),
        ("(*MemStore).Len", 17),
        ("(*MemStore).Get@13", 13),  # a candidate id
        ("MemStore.Get@13", 13),
        ("store.ErrMissing", 3),  # workspace/symbol's package-qualified name
        ("store.MemStore.Get", 13),
    ],
)
def test_go_method_names_resolve_with_and_without_the_receiver(
    go_document: Document, symbol: str, line: int
) -> None:
    resolved = _go_resolve(go_document, symbol)
    assert resolved.line == line and resolved.confidence == "symbol"


def test_the_interface_method_stays_apart_from_the_implementation(go_document: Document) -> None:
    assert _go_resolve(go_document, "Store.Get").line == 6
    with pytest.raises(AmbiguousTarget):
        _go_resolve(go_document, "Get")
    entries = flatten_symbols(GO_TREE)
    assert [e.qualified_name for e in match_symbols(entries, "MemStore.Get")] == ["(*MemStore).Get"]


@pytest.mark.parametrize("symbol", ["Other.Get", "(*Other).Get", "pkg.ErrMissing", "MemStore.Put"])
def test_unknown_qualifiers_are_still_not_found(go_document: Document, symbol: str) -> None:
    # Only the file's own package/module qualifier is dropped: a wrong type never becomes "any Get".
    with pytest.raises(SymbolNotFound):
        _go_resolve(go_document, symbol)


# -- 3. hover summaries are a useful single line (B9.4) ----------------------------------------------------
#: pyright's hover text for packaging's SpecifierSet.contains (the trial's summary: "(method) def contains(").
PYRIGHT_CONTAINS = (
    "(method) def contains(\n    item: UnparsedVersion,\n    prereleases: bool | None = None,\n"
    "    installed: bool | None = None\n) -> bool\n\n"
    "Return whether or not the item is contained in this SpecifierSet."
)


@pytest.mark.parametrize(
    ("text", "summary"),
    [
        (
            PYRIGHT_CONTAINS,
            "(method) def contains(item: UnparsedVersion, prereleases: bool | None = None, "
            "installed: bool | None = None) -> bool",
        ),
        ("def f(\n    a: int,\n) -> None", "def f(a: int) -> None"),
        ("const big: Shape | undefined", "const big: Shape | undefined"),
        ("func (store.Store).Put(key string)\n\n[docs](https://x)", "func (store.Store).Put(key string)"),
        ("", "no hover information"),
    ],
)
def test_hover_summary_is_the_whole_signature_on_one_line(text: str, summary: str) -> None:
    assert summarize("code_hover", {"ok": True, "text": text}) == summary


def test_a_long_hover_summary_is_cut_with_an_ellipsis() -> None:
    text = "def f(\n" + "".join(f"    parameter_{n}: int,\n" for n in range(30)) + ") -> None"
    summary = summarize("code_hover", {"ok": True, "text": text})
    assert "\n" not in summary and summary.endswith("…") and len(summary) <= 160
    assert summary.startswith("def f(parameter_0: int, parameter_1: int,")


# -- 4. an unsupported request says what to ask instead (B8.10) --------------------------------------------
class _Server:
    name = "pyright-langserver"

    def __init__(self, *offered: str) -> None:
        self.offered = set(offered)

    def offers(self, capability: str) -> bool:
        return capability in self.offered


def test_unsupported_requests_point_at_what_works() -> None:
    from kandev_lsp.intel.reading.tools import _unsupported_hierarchy, _unsupported_navigation

    pyright: Any = _Server("definitionProvider", "referencesProvider")
    message = _unsupported_navigation(pyright, "textDocument/implementation", "implementation")
    assert message.startswith("the pyright-langserver server does not offer textDocument/implementation: ")
    assert "kind 'references'" in message
    subtypes = _unsupported_hierarchy(pyright, "textDocument/prepareTypeHierarchy", "subtypes")
    assert "kind 'references'" in subtypes and "'implementation'" not in subtypes
    with_implementation: Any = _Server("implementationProvider")
    assert "kind 'implementation'" in _unsupported_hierarchy(
        with_implementation, "textDocument/prepareTypeHierarchy", "subtypes"
    )
    supertypes = _unsupported_hierarchy(pyright, "textDocument/prepareTypeHierarchy", "supertypes")
    assert "kind 'definition'" in supertypes and "matchText" in supertypes


def test_a_declaration_answered_by_definitions_says_so_in_the_summary() -> None:
    result = {"ok": True, "kind": "declaration", "fallback": "definition", "totalFound": 1, "files": [{}]}
    assert summarize("code_navigate", result) == "1 definition · 1 file (no declaration provider)"


# -- 7. small ones ------------------------------------------------------------------------------------------
def test_the_code_actions_summary_counts_the_disabled_apart() -> None:
    actions: list[dict[str, Any]] = [{"title": f"fix {n}"} for n in range(3)]
    actions += [{"title": f"move {n}", "disabled": "not available here"} for n in range(14)]
    assert summarize("code_actions", {"ok": True, "actions": actions}) == (
        "17 code actions (3 available, 14 disabled)"
    )
    assert summarize("code_actions", {"ok": True, "actions": actions[:3]}) == "3 code actions"
    assert summarize("code_actions", {"ok": True, "actions": actions[3:4]}) == (
        "1 code action (0 available, 1 disabled)"
    )


def test_a_folder_path_is_an_error_naming_it(tmp_path: Path) -> None:
    """``path: "src"`` answered ok: true with "No language server handles files like 'src'"."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    workspace = Workspace([tmp_path])
    for path in ("src", "src/", str(tmp_path / "src"), "."):
        with pytest.raises(PathIsFolder, match="is a folder; name a file"):
            workspace.resolve(path)
    assert workspace.resolve("src/app.py").display == "src/app.py"
    assert workspace.resolve("src", must_exist=False).absolute == str(tmp_path / "src")
    (tmp_path / "other").mkdir()
    two = Workspace([tmp_path, tmp_path / "other"], ids=["one", "two"])
    with pytest.raises(PathIsFolder):
        two.resolve("src")  # found in one root of several


def test_read_tools_answer_a_folder_path_with_that_error(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    env = TaskEnvironment.from_agent({"HOME": str(tmp_path / "home"), "PATH": "/nonexistent"})

    async def calls() -> list[dict[str, Any]]:
        async with IntelService.open([tmp_path], env=env) as service:
            return [
                await service.dispatch("code_symbols", {"path": "src"}),
                await service.dispatch("code_hover", {"target": {"path": "src", "line": 1}}),
                await service.dispatch("code_diagnostics", {"path": "src"}),
            ]

    for result in asyncio.run(calls()):
        assert result["ok"] is False and "'src' is a folder; name a file" in result["error"], result


@pytest.mark.parametrize("tool", ["code_replace", "code_replace_batch"])
def test_replace_refuses_match_text_with_end_line(tool: str) -> None:
    """``matchText`` with ``endLine`` silently replaced the whole lines (MCP user trial): now refused."""
    from kandev_lsp.intel.errors import InvalidArguments
    from kandev_lsp.intel.surface.arguments import PARSERS

    item = {"target": {"path": "a.py", "line": 3, "matchText": "x = 1"}, "text": "y = 2", "endLine": 5}
    payload = item if tool == "code_replace" else {"edits": [item]}
    with pytest.raises(InvalidArguments, match="matchText` replaces that text on the line") as caught:
        PARSERS[tool](payload)
    assert "lines 3..5: give one of them" in caught.value.message
    del item["endLine"]
    assert PARSERS[tool](payload) is not None  # matchText alone is fine
