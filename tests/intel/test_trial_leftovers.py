"""Leftovers of the user trial: a repeated ``matchText`` on a line, a rename's new name, and the receipt
of a refused mutation (B §3, B4.5-B4.7, B6.16, B7.5).

The pure rules first (names, compact rejections, summaries, the dispatcher), then the same findings
end to end on pyright and typescript-language-server. Each test fails without its fix, except the ones
that say they guard a legitimate name against a rule that is too strict.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from intel_projects import write
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.edits.receipts import receipt
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.dispatch import Dispatcher, IntelContext, UnwiredTools
from kandev_lsp.intel.surface.names import MAX_NAME_LENGTH, new_name_problems
from kandev_lsp.intel.surface.rejections import compact_rejection, rejected_receipt
from kandev_lsp.intel.surface.summaries import summarize
from stream_testkit import TAG_VARIABLE, RealServers

#: What a refusal before any change carries instead of a receipt of zeros.
SMALL_RECEIPT = {"outcome": "rejected", "textEdits": 0, "saved": "not-saved"}


# -- the new name of a rename (item 2) -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "is empty"),
        ("1bad name", "contains whitespace"),
        ("1bad name", "starts with a digit"),
        ("1bad", "starts with a digit"),
        ("٣x", "starts with a digit"),  # an Arabic-Indic digit is a digit too
        ("bad\nname", "line break"),
        ("bad\tname", "control character (U+0009)"),
        ("bad\u2028name", "U+2028"),
        (" padded", "surrounding blanks"),
        ("two words", "contains whitespace"),
        ("f(x)", "contains '(', ')'"),
        ("a;b", "contains ';'"),
        ("x = 1", "contains '='"),
        ("List<T>", "contains '<', '>'"),
        ("a`b", "contains '`'"),
        ("`a`b`", "backtick inside a backticked name"),
        ("`two\nlines`", "line break"),
        ("x" * (MAX_NAME_LENGTH + 1), f"at most {MAX_NAME_LENGTH}"),
    ],
)
def test_a_new_name_no_identifier_could_be_is_refused_saying_why(name: str, problem: str) -> None:
    problems = new_name_problems(name)
    assert any(problem in text for text in problems), problems


@pytest.mark.parametrize(
    "name",
    [
        "salute",
        "_private",
        "__dunder__",
        "snake_case2",
        "café",  # Python 3 and JS/TS unicode identifiers
        "größe",
        "名前",
        "$el",  # TS/JS
        "$",
        "_$_",
        "#secret",  # a JS private name (tsserver renames it with its #)
        "zero\u200djoiner",  # ZWJ is an ECMAScript identifier part
        "r#type",  # a Rust raw identifier
        "'b",  # a Rust lifetime
        "`a name with spaces`",  # Kotlin backticked name
        "`is valid`",
        "example.com/kv/storage",  # dots and slashes are left for the server
        "x" * MAX_NAME_LENGTH,
    ],
)
def test_legitimate_names_of_the_supported_languages_pass(name: str) -> None:
    # Guards the rule against being too strict: it must never refuse a name a server would take.
    assert new_name_problems(name) == []


class _Recorder:
    """Mutation bodies that only record that they were called."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def _called(self, name: str) -> dict[str, Any]:
        self.calls.append(name)
        return {"ok": True}

    async def rename(self, args: Any, ctx: IntelContext) -> dict[str, Any]:
        return await self._called("rename")

    async def actions(self, args: Any, ctx: IntelContext) -> dict[str, Any]:
        return await self._called("actions")

    async def format(self, args: Any, ctx: IntelContext) -> dict[str, Any]:
        return await self._called("format")

    async def insert(self, args: Any, ctx: IntelContext) -> dict[str, Any]:
        return await self._called("insert")

    async def replace(self, args: Any, ctx: IntelContext) -> dict[str, Any]:
        return await self._called("replace")

    async def replace_batch(self, args: Any, ctx: IntelContext) -> dict[str, Any]:
        return await self._called("replace_batch")

    async def approve(
        self, tool: str, transaction_id: str, approve: bool, ctx: IntelContext
    ) -> dict[str, Any]:
        return await self._called("approve")


def test_the_dispatcher_refuses_a_bad_new_name_before_the_tool_runs_with_a_small_receipt() -> None:
    recorder = _Recorder()
    dispatcher = Dispatcher(UnwiredTools(), mutations=recorder)
    payload = {"target": {"path": "a.py", "symbol": "f"}, "newName": "1bad name"}
    result = asyncio.run(dispatcher.dispatch("code_rename", payload, IntelContext()))
    assert result["ok"] is False and recorder.calls == []
    assert "contains whitespace" in result["error"] and "starts with a digit" in result["error"]
    assert result["receipt"] == SMALL_RECEIPT


# -- the receipt of a refusal (item 3) -----------------------------------------------------------------
def test_a_rejection_that_planned_nothing_gets_the_small_receipt() -> None:
    full = {"ok": False, "error": "x", "receipt": receipt(outcome="rejected", touched=["a.py"])}
    assert len(str(full["receipt"])) > 3 * len(str(rejected_receipt()))
    assert compact_rejection(full)["receipt"] == SMALL_RECEIPT


@pytest.mark.parametrize(
    "kept",
    [
        receipt(outcome="rejected", text_edits=2),  # something was planned: the full receipt says what
        receipt(outcome="rejected", commands=[{"command": "x", "status": "not-run"}]),
        receipt(outcome="conflict"),
        receipt(outcome="declined"),
        receipt(outcome="applied", saved="saved"),
    ],
)
def test_other_receipts_are_kept_whole(kept: dict[str, Any]) -> None:
    assert compact_rejection({"ok": False, "receipt": dict(kept)})["receipt"] == kept


def test_an_ambiguous_anchor_summary_asks_for_a_column() -> None:
    result = {
        "ok": False,
        "ambiguous": True,
        "candidates": [{"line": 5, "column": 12}, {"line": 5, "column": 25}],
    }
    assert (
        summarize("code_navigate", result)
        == "ambiguous: matchText occurs 2 times on line 5, add target.column"
    )
    symbols = {"ok": False, "ambiguous": True, "candidates": [{"id": "a@1"}, {"id": "a@3"}]}
    assert summarize("code_navigate", symbols) == "ambiguous: 2 candidates, name one"


# -- end to end on the real servers ----------------------------------------------------------------------
SLOW = IntelContext(deadline=90)
APPLY = IntelContext(deadline=90, auto_approve=True)

PYTHON = {
    "pyproject.toml": '[project]\nname = "leftovers"\nversion = "0"\n',
    "greet.py": 'def greet(name: str) -> str:\n    return name\n\n\ngreeting = greet("a") + greet("b")\n',
}
TYPESCRIPT = {
    "tsconfig.json": '{"compilerOptions": {"strict": true, "target": "es2020"}, "include": ["src"]}\n',
    "src/values.ts": "export const value = 1;\nexport const doubled = value + value;\n",
}


def _service(folder: Path, real_servers: RealServers, tag: str) -> IntelService:
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    return IntelService.open([folder], env=env)


async def _python_session(folder: Path, real_servers: RealServers, tag: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    anchor = {"path": "greet.py", "line": 5, "matchText": "greet"}
    async with _service(folder, real_servers, tag) as service:
        call = service.dispatch
        out["ambiguous"] = await call("code_navigate", {"target": anchor, "kind": "definition"}, SLOW)
        column = out["ambiguous"].get("candidates", [{}, {}])[1].get("column", 25)
        out["column"] = await call(
            "code_navigate", {"target": {**anchor, "column": column}, "kind": "definition"}, SLOW
        )
        out["first"] = await call(
            "code_navigate", {"target": anchor, "kind": "definition", "firstMatch": True}, SLOW
        )
        out["rename_ambiguous"] = await call("code_rename", {"target": anchor, "newName": "salute"}, APPLY)
        symbol = {"path": "greet.py", "symbol": "greet"}
        out["bad_name"] = await call("code_rename", {"target": symbol, "newName": "1bad name"}, APPLY)
        out["unknown_transaction"] = await call(
            "code_rename", {"transactionId": "t" * 32, "approve": True}, APPLY
        )
        out["text_after_refusals"] = (folder / "greet.py").read_text()
        out["unicode"] = await call("code_rename", {"target": symbol, "newName": "grüße"}, APPLY)
    return out


@pytest.mark.real_server
@pytest.mark.timeout(300)
def test_repeated_anchor_bad_name_and_small_receipts_on_pyright(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = write(tmp_path / "py", PYTHON)
    before = (folder / "greet.py").read_text()
    out = asyncio.run(_python_session(folder, real_servers, tag))

    # 1: "greet" twice on line 5 (and once inside "greeting"): candidates, not the first silently.
    ambiguous = out["ambiguous"]
    assert ambiguous["ok"] is False and ambiguous["ambiguous"] is True, ambiguous
    assert [(c["line"], c["column"]) for c in ambiguous["candidates"]] == [(5, 12), (5, 25)]
    assert ambiguous["summary"] == "ambiguous: matchText occurs 2 times on line 5, add target.column"
    retried = out["column"]
    assert retried["ok"], retried
    assert retried["target"]["column"] == 25 and retried["target"]["confidence"] == "anchor"
    assert [loc["line"] for g in retried["files"] for loc in g["locations"]] == [1]
    first = out["first"]
    assert first["ok"] and first["target"]["column"] == 12 and first["target"]["confidence"] == "firstMatch"

    # 1 + 3: a mutation never takes the first; its refusal carries the small receipt.
    refused = out["rename_ambiguous"]
    assert refused["ok"] is False and refused["ambiguous"] is True, refused
    assert refused["receipt"] == SMALL_RECEIPT

    # 2 + 3: the bad name never reaches pyright (which would write it); nothing changed.
    bad = out["bad_name"]
    assert bad["ok"] is False and "starts with a digit" in bad["error"], bad
    assert bad["receipt"] == SMALL_RECEIPT
    assert out["text_after_refusals"] == before

    # 3: the second step of a transaction that does not exist: refused by the coordinator, small receipt.
    unknown = out["unknown_transaction"]
    assert unknown["ok"] is False and unknown["receipt"] == SMALL_RECEIPT, unknown

    # 2: a unicode identifier is a name: renamed everywhere.
    renamed = out["unicode"]
    assert renamed["ok"] and renamed.get("applied"), renamed
    assert (folder / "greet.py").read_text().count("grüße(") == 3


async def _typescript_rename(folder: Path, real_servers: RealServers, tag: str) -> dict[str, Any]:
    async with _service(folder, real_servers, tag) as service:
        return await service.dispatch(
            "code_rename",
            {"target": {"path": "src/values.ts", "symbol": "value"}, "newName": "$value"},
            APPLY,
        )


@pytest.mark.real_server
@pytest.mark.timeout(300)
def test_a_dollar_name_renames_on_typescript(tmp_path: Path, real_servers: RealServers, tag: str) -> None:
    # Guards the name rule against refusing a TS/JS identifier with `$`.
    folder = write(tmp_path / "ts", TYPESCRIPT)
    result = asyncio.run(_typescript_rename(folder, real_servers, tag))
    assert result["ok"] and result.get("applied"), result
    assert (folder / "src/values.ts").read_text().endswith("doubled = $value + $value;\n")
