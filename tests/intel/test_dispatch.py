"""dispatch(op, payload, ctx) (B2): the six read tools' schemas, validation messages, routing, summaries."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kandev_lsp.intel.errors import AmbiguousTarget
from kandev_lsp.intel.reading.targets import Target
from kandev_lsp.intel.surface.arguments import (
    DiagnosticsArgs,
    HierarchyArgs,
    HoverArgs,
    InlayHintsArgs,
    NavigateArgs,
    SymbolsArgs,
)
from kandev_lsp.intel.surface.dispatch import Dispatcher, IntelContext, UnwiredTools
from kandev_lsp.intel.surface.schemas import TOOLS, tool_by_name
from kandev_lsp.intel.surface.summaries import summarize
from kandev_lsp.intel.surface.validation import check_schema, compile_check, validate

TOOL_NAMES = [
    "code_symbols",
    "code_navigate",
    "code_hierarchy",
    "code_hover",
    "code_diagnostics",
    "code_inlay_hints",
]

MINIMAL: dict[str, dict[str, Any]] = {
    "code_symbols": {"path": "a.py"},
    "code_navigate": {"target": {"path": "a.py", "symbol": "f"}, "kind": "definition"},
    "code_hierarchy": {"target": {"path": "a.py", "symbol": "f"}, "kind": "callers"},
    "code_hover": {"target": {"path": "a.py", "line": 1}},
    "code_diagnostics": {},
    "code_inlay_hints": {"path": "a.py"},
}


class Recorder:
    """ReadTools that records the typed arguments and answers a canned result."""

    def __init__(self, result: dict[str, Any] | None = None, error: Exception | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.result = result if result is not None else {"ok": True}
        self.error = error

    async def _answer(self, op: str, args: Any) -> dict[str, Any]:
        self.calls.append((op, args))
        if self.error is not None:
            raise self.error
        return self.result

    async def symbols(self, args: SymbolsArgs, ctx: IntelContext) -> dict[str, Any]:
        return await self._answer("symbols", args)

    async def navigate(self, args: NavigateArgs, ctx: IntelContext) -> dict[str, Any]:
        return await self._answer("navigate", args)

    async def hierarchy(self, args: HierarchyArgs, ctx: IntelContext) -> dict[str, Any]:
        return await self._answer("hierarchy", args)

    async def hover(self, args: HoverArgs, ctx: IntelContext) -> dict[str, Any]:
        return await self._answer("hover", args)

    async def diagnostics(self, args: DiagnosticsArgs, ctx: IntelContext) -> dict[str, Any]:
        return await self._answer("diagnostics", args)

    async def inlay_hints(self, args: InlayHintsArgs, ctx: IntelContext) -> dict[str, Any]:
        return await self._answer("inlay_hints", args)


def call(dispatcher: Dispatcher, op: str, payload: Any) -> dict[str, Any]:
    return asyncio.run(dispatcher.dispatch(op, payload, IntelContext()))


def test_the_catalogue_has_the_six_read_tools_with_mcp_definitions() -> None:
    assert [tool.name for tool in TOOLS] == TOOL_NAMES
    for tool in TOOLS:
        check_schema(tool.input_schema)  # every keyword used is one the validator enforces
        definition = tool.mcp_definition()
        assert set(definition) == {"name", "title", "description", "inputSchema", "annotations"}
        assert definition["inputSchema"]["type"] == "object"
        assert definition["annotations"]["readOnlyHint"] is True
        assert definition["annotations"]["destructiveHint"] is False
        assert tool.runtime_type == f"lsp.{tool.op}"
        json.dumps(definition)  # plain JSON data
    size = len(json.dumps([tool.mcp_definition() for tool in TOOLS]))
    assert size < 12_000, f"the tool list costs {size} characters of every prompt"


def test_check_schema_refuses_keywords_it_would_ignore() -> None:
    with pytest.raises(ValueError, match="'pattern' is not enforced"):
        check_schema({"type": "object", "properties": {"x": {"type": "string", "pattern": "^a"}}})
    with pytest.raises(ValueError, match="additionalProperties must be false"):
        check_schema({"type": "object", "additionalProperties": True})
    with pytest.raises(ValueError, match="type 'null' is not supported"):
        check_schema({"type": "null"})


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("code_navigate", "code_navigate"),
        ("navigate", "code_navigate"),
        ("lsp.inlay_hints", "code_inlay_hints"),
        ("x", None),
    ],
)
def test_tool_lookup(name: str, expected: str | None) -> None:
    tool = tool_by_name(name)
    assert (tool.name if tool else None) == expected


@pytest.mark.parametrize(
    ("tool", "payload", "problems"),
    [
        (
            "code_navigate",
            {"kind": "references"},
            [
                "missing `target`: What to point at: a symbol by name (preferred), or a line with matchText or column"
            ],
        ),
        (
            "code_navigate",
            {"target": {"path": "a.ts", "line": "12"}, "kind": "refs"},
            [
                '`target.line` must be an integer, got a string "12" (write 12 without quotes)',
                '`kind` must be one of definition, typeDefinition, declaration, implementation, references; got "refs"',
            ],
        ),
        (
            "code_navigate",
            {"target": {"path": "a.ts", "symbl": "x"}, "kind": "definition", "limt": 5},
            [
                "unknown argument `target.symbl` (did you mean 'symbol'?); allowed here: path, rootId, symbol, kind, line, column, matchText",
                "unknown argument `limt` (did you mean 'limit'?); allowed here: target, kind, includeBody, limit, context, firstMatch",
            ],
        ),
        (
            "code_navigate",
            {"target": {"path": "", "line": 0}, "kind": "definition", "limit": 501, "context": 9},
            [
                "`target.path` must not be empty",
                "`target.line` must be at least 1, got 0",
                "`limit` must be between 1 and 500, got 501",
                "`context` must be between 0 and 3, got 9",
            ],
        ),
        (
            "code_hierarchy",
            {"target": {"path": "a.ts", "line": 1}, "kind": "callers", "depth": 5},
            ["`depth` must be between 1 and 4, got 5"],
        ),
        (
            "code_hover",
            {"target": {"path": "a.ts", "line": 1}, "firstMatch": "true"},
            ['`firstMatch` must be true or false, got a string "true" (write true without quotes)'],
        ),
        ("code_hover", {"target": "a.ts:12"}, ['`target` must be an object, got a string "a.ts:12"']),
        (
            "code_diagnostics",
            {"severity": "fatal"},
            ['`severity` must be one of error, warning, info, hint; got "fatal"'],
        ),
        ("code_inlay_hints", {"path": "a.py", "range": {"startLine": 3}}, ["missing `range.endLine`"]),
        ("code_symbols", {"path": "a.py", "limit": True}, ["`limit` must be an integer, got a boolean true"]),
        # rules between fields, checked after the schema
        (
            "code_symbols",
            {},
            ["give `path` (a file's outline), `query` (a name to search the workspace for), or both"],
        ),
        (
            "code_symbols",
            {"query": "x", "rootId": "a"},
            ["`rootId` chooses the root of `path`: give path too"],
        ),
        (
            "code_navigate",
            {"target": {"path": "a.ts"}, "kind": "definition"},
            [
                "target needs `symbol` (a name such as 'Parser.parse') or `line` (1-based, with `matchText` or `column` to point inside it)"
            ],
        ),
        (
            "code_inlay_hints",
            {"path": "a.py", "range": {"startLine": 9, "endLine": 3}},
            ["`range.endLine` (3) is before `range.startLine` (9)"],
        ),
        (
            "code_diagnostics",
            {"activationLimit": 5},
            ["`activationLimit` bounds activateWorkspace: set activateWorkspace to true, or drop it"],
        ),
    ],
)
def test_invalid_arguments_say_what_to_fix(tool: str, payload: dict[str, Any], problems: list[str]) -> None:
    recorder = Recorder()
    result = call(Dispatcher(recorder), tool, payload)
    assert result["ok"] is False
    assert result["problems"] == problems
    assert result["error"].startswith(f"invalid arguments for {tool}: ")
    assert recorder.calls == []  # nothing reaches a tool body


def test_a_non_object_payload_is_refused() -> None:
    result = call(Dispatcher(Recorder()), "code_hover", ["a.ts"])
    assert result["problems"] == ["the arguments must be an object, got list"]


@pytest.mark.parametrize(
    ("op", "payload", "expected"),
    [
        ("symbols", {"path": "src/a.ts"}, ("symbols", SymbolsArgs("src/a.ts", None, None, 100))),
        ("code_symbols", {"query": "fetch", "limit": 20}, ("symbols", SymbolsArgs(None, None, "fetch", 20))),
        (
            "lsp.navigate",
            {
                "target": {"path": "a.ts", "symbol": "f", "kind": "function"},
                "kind": "references",
                "context": 2,
            },
            ("navigate", NavigateArgs(Target("a.ts", symbol="f", kind="function"), "references", context=2)),
        ),
        (
            "code_navigate",
            {
                "target": {"path": "a.ts", "line": 3, "matchText": "x"},
                "kind": "definition",
                "includeBody": True,
                "limit": 2.0,
            },
            (
                "navigate",
                NavigateArgs(
                    Target("a.ts", line=3, match_text="x"), "definition", include_body=True, limit=2
                ),
            ),
        ),
        (
            "code_hierarchy",
            {
                "target": {"path": "a.ts", "rootId": "web", "line": 3, "column": 4},
                "kind": "callers",
                "depth": 3,
                "firstMatch": True,
            },
            (
                "hierarchy",
                HierarchyArgs(
                    Target("a.ts", root_id="web", line=3, column=4), "callers", 3, first_match=True
                ),
            ),
        ),
        (
            "code_hover",
            {"target": {"path": "a.ts", "symbol": "A.b"}},
            ("hover", HoverArgs(Target("a.ts", symbol="A.b"))),
        ),
        ("code_diagnostics", {}, ("diagnostics", DiagnosticsArgs(None, None, None))),
        (
            "code_diagnostics",
            {"rootId": "web", "severity": "warning", "activateWorkspace": True, "activationLimit": 10},
            ("diagnostics", DiagnosticsArgs(None, "web", "warning", 100, True, 10)),
        ),
        ("code_inlay_hints", {"path": "a.py"}, ("inlay_hints", InlayHintsArgs("a.py", None, None))),
        (
            "code_inlay_hints",
            {"path": "a.py", "range": {"startLine": 2, "endLine": 2}, "limit": 7},
            ("inlay_hints", InlayHintsArgs("a.py", None, (2, 2), 7)),
        ),
    ],
)
def test_valid_payloads_reach_the_tool_as_typed_arguments(
    op: str, payload: dict[str, Any], expected: Any
) -> None:
    recorder = Recorder()
    result = call(Dispatcher(recorder), op, payload)
    assert result["ok"] is True
    assert recorder.calls == [expected]


def test_every_tool_schema_accepts_its_documented_minimal_call() -> None:
    for tool in TOOLS:
        assert validate(tool.input_schema, MINIMAL[tool.name]) == []


def test_unwired_tools_fail_clearly_after_validating() -> None:
    dispatcher = Dispatcher(UnwiredTools())
    result = call(
        dispatcher, "code_navigate", {"target": {"path": "a.ts", "symbol": "f"}, "kind": "references"}
    )
    assert result["ok"] is False
    assert result["error"].startswith("code_navigate is not connected to a language server")
    assert result["summary"].startswith("error: code_navigate is not connected")
    for tool in TOOLS:
        answer = call(dispatcher, tool.name, MINIMAL[tool.name])
        assert answer["error"].startswith(f"{tool.name} is not connected"), answer


def test_intel_errors_from_a_tool_become_results() -> None:
    error = AmbiguousTarget("2 symbols match 'send'", [{"id": "A.send@5"}, {"id": "send@12"}])
    result = call(
        Dispatcher(Recorder(error=error)), "code_hover", {"target": {"path": "a.py", "symbol": "send"}}
    )
    assert result == {
        "ok": False,
        "error": "2 symbols match 'send'",
        "ambiguous": True,
        "candidates": [{"id": "A.send@5"}, {"id": "send@12"}],
        "summary": "ambiguous: 2 candidates, name one",
    }


def test_unexpected_exceptions_are_not_hidden() -> None:
    with pytest.raises(ZeroDivisionError):
        call(Dispatcher(Recorder(error=ZeroDivisionError())), "code_diagnostics", {})


def test_disabled_tools_are_neither_listed_nor_callable() -> None:
    recorder = Recorder()
    dispatcher = Dispatcher(recorder, disabled=["code_inlay_hints", "code_hierarchy"])
    assert [tool.name for tool in dispatcher.tools()] == [
        "code_symbols",
        "code_navigate",
        "code_hover",
        "code_diagnostics",
    ]
    result = call(dispatcher, "inlay_hints", {"path": "a.py"})
    assert (
        result["ok"] is False
        and "is disabled (the lsp_disabled_tools setting or --disable-tool)" in result["error"]
    )
    assert recorder.calls == []
    with pytest.raises(ValueError, match="unknown tools \\['code_frobnicate'\\]"):
        Dispatcher(recorder, disabled=["code_frobnicate"])


def test_unknown_ops_list_the_tools() -> None:
    result = call(Dispatcher(Recorder()), "rename", {})
    assert result["error"] == (
        "no tool 'rename'; the tools are: code_symbols, code_navigate, code_hierarchy, code_hover, "
        "code_diagnostics, code_inlay_hints"
    )


def test_results_get_ok_and_a_summary_and_lose_auto_approve_all() -> None:
    recorder = Recorder(
        {
            "kind": "references",
            "files": [{"path": "a"}, {"path": "b"}],
            "totalFound": 12,
            "autoApproveAll": True,
        }
    )
    result = call(
        Dispatcher(recorder), "code_navigate", {"target": {"path": "a.ts", "line": 1}, "kind": "references"}
    )
    assert result["ok"] is True and "autoApproveAll" not in result
    assert result["summary"] == "12 references · 2 files"


@pytest.mark.parametrize(
    ("tool", "result", "summary"),
    [
        (
            "code_navigate",
            {"ok": True, "kind": "references", "files": [{}] * 4, "totalFound": 12},
            "12 references · 4 files",
        ),
        (
            "code_navigate",
            {"ok": True, "kind": "definition", "files": [{}], "totalFound": 1},
            "1 definition · 1 file",
        ),
        (
            "code_navigate",
            {
                "ok": True,
                "kind": "typeDefinition",
                "files": [{}] * 3,
                "totalFound": 449,
                "shown": 100,
                "truncated": True,
            },
            "449 type definitions · 3 files (100 of 449 shown)",
        ),
        (
            "code_navigate",
            {"ok": True, "kind": "implementation", "files": [], "totalFound": 0},
            "no implementations",
        ),
        (
            "code_navigate",
            {
                "ok": True,
                "kind": "references",
                "files": [],
                "totalFound": 0,
                "notice": "No Go server: install gopls\nmore",
            },
            "No Go server: install gopls",
        ),
        ("code_hierarchy", {"ok": True, "kind": "callers", "items": [{}, {}]}, "2 callers"),
        ("code_hierarchy", {"ok": True, "kind": "subtypes", "items": []}, "no subtypes"),
        ("code_symbols", {"ok": True, "symbols": [{}] * 3}, "3 symbols"),
        (
            "code_symbols",
            {"ok": True, "symbols": [{}] * 3, "totalFound": 9, "shown": 3, "truncated": True},
            "9 symbols (3 of 9 shown)",
        ),
        ("code_hover", {"ok": True, "text": "\nfunction f(): void\n\nDocs"}, "function f(): void"),
        ("code_hover", {"ok": True, "text": "x" * 300}, "x" * 159 + "…"),
        ("code_diagnostics", {"ok": True, "counts": {"error": 2, "warning": 1}}, "2 errors, 1 warning"),
        (
            "code_diagnostics",
            {"ok": True, "counts": {"error": 0, "warning": 0, "info": 1, "hint": 3}},
            "0 errors, 0 warnings, 1 info, 3 hints",
        ),
        (  # no server answered: why, never "0 errors, 0 warnings" (a user trial)
            "code_diagnostics",
            {
                "ok": True,
                "status": "no_server",
                "counts": {"error": 0, "warning": 0},
                "notice": "No python language server is installed, so ...\nmore",
            },
            "No python language server is installed, so ...",
        ),
        (
            "code_diagnostics",
            {"ok": True, "counts": {"error": 1, "warning": 0}, "notChecked": [{"language": "typescript"}]},
            "1 error, 0 warnings · not checked: typescript (no server)",
        ),
        (
            "code_symbols",
            {"ok": True, "symbols": [{}] * 3, "notSearched": [{"language": "go"}, {"language": "rust"}]},
            "3 symbols · not searched: go, rust",
        ),
        (
            "code_rename",
            {
                "ok": True,
                "applied": True,
                "newName": "salute",
                "files": 2,
                "receipt": {"diagnostics": {"status": "no_server", "notChecked": [{"path": "a.ts"}]}},
            },
            "renamed → salute · 2 files · 1 touched file not checked (no server answered)",
        ),
        ("code_inlay_hints", {"ok": True, "hints": [{}] * 5}, "5 inlay hints"),
        ("code_inlay_hints", {"ok": True, "hints": []}, "no inlay hints"),
        (
            "code_hover",
            {"ok": False, "error": "symbol 'x' not found in a.py\nmore"},
            "error: symbol 'x' not found in a.py",
        ),
    ],
)
def test_summaries(tool: str, result: dict[str, Any], summary: str) -> None:
    assert summarize(tool, result) == summary


def test_typed_helpers_send_the_payloads_a_client_would() -> None:
    from kandev_lsp.intel.api import CodeIntel

    recorder = Recorder()
    api = CodeIntel(Dispatcher(recorder))
    target = Target("a.ts", root_id="web", symbol="Parser.parse", kind="method")

    async def main() -> list[dict[str, Any]]:
        return [
            await api.symbols("a.ts", limit=5),
            await api.navigate(target, "references", include_body=True, context=2, first_match=True),
            await api.hierarchy(Target("a.ts", line=3, match_text="x"), "callers", depth=2),
            await api.hover(Target("a.ts", line=3, column=4)),
            await api.diagnostics(
                root_id="web", severity="error", activate_workspace=True, activation_limit=9
            ),
            await api.inlay_hints("a.py", lines=(2, 4), limit=7),
            await api.navigate(Target("a.ts"), "definition"),  # no symbol, no line: refused by dispatch
        ]

    results = asyncio.run(main())
    assert [r["ok"] for r in results] == [True] * 6 + [False]
    assert recorder.calls == [
        ("symbols", SymbolsArgs("a.ts", None, None, 5)),
        ("navigate", NavigateArgs(target, "references", True, 100, 2, True)),
        ("hierarchy", HierarchyArgs(Target("a.ts", line=3, match_text="x"), "callers", 2)),
        ("hover", HoverArgs(Target("a.ts", line=3, column=4))),
        ("diagnostics", DiagnosticsArgs(None, "web", "error", 100, True, 9)),
        ("inlay_hints", InlayHintsArgs("a.py", None, (2, 4), 7)),
    ]
    assert target.to_json() == {"path": "a.ts", "rootId": "web", "symbol": "Parser.parse", "kind": "method"}


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 600) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=5,
)


def _near_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid for ``schema`` at most nodes, each node now and then anything at all or carrying an
    unknown key: payloads with one or two problems, where a shortcut of the check would show."""
    kind = schema.get("type")
    base: st.SearchStrategy[Any]
    if "enum" in schema:
        base = st.sampled_from(schema["enum"])
    elif kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        fields = st.fixed_dictionaries(
            {key: _near_schema(sub) for key, sub in properties.items() if key in required},
            optional={key: _near_schema(sub) for key, sub in properties.items() if key not in required},
        )
        extra = st.dictionaries(st.sampled_from(["extra", "targte"]), st.integers(0, 3), max_size=1)
        base = st.builds(lambda known, more: {**known, **more}, fields, st.just({}) | extra)
    elif kind == "array":
        items = _near_schema(schema["items"]) if "items" in schema else _JSON
        base = st.lists(items, min_size=max(0, schema.get("minItems", 0) - 1), max_size=4)
    elif kind in ("integer", "number"):
        base = st.integers(schema.get("minimum", -5) - 1, min(schema.get("maximum", 600), 600) + 1)
    elif kind == "string":
        base = st.text(max_size=3)
    elif kind == "boolean":
        base = st.booleans()
    else:
        base = _JSON
    return st.one_of(base, base, base, base, _JSON)


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_the_compiled_check_accepts_exactly_what_validate_accepts(data: st.DataObject) -> None:
    """The dispatcher's fast check (issue 9) must agree with the validator on every payload."""
    schema = tool_by_name(data.draw(st.sampled_from(TOOL_NAMES))).input_schema  # type: ignore[union-attr]
    payload = data.draw(_near_schema(schema))
    assert compile_check(schema)(payload) == (validate(schema, payload) == [])
