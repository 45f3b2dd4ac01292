"""The six mutating tools' schemas, argument rules and routing (B2.2-B2.6, B4.6, B6.16-B6.29)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from kandev_lsp.intel.reading.targets import Target
from kandev_lsp.intel.surface.arguments import (
    ActionsArgs,
    FormatArgs,
    InsertArgs,
    RenameArgs,
    ReplaceArgs,
    ReplaceBatchArgs,
)
from kandev_lsp.intel.surface.dispatch import Dispatcher, IntelContext, UnwiredTools
from kandev_lsp.intel.surface.schemas import ALL_TOOLS, MUTATING_TOOLS, TARGET, TOOLS, tool_by_name
from kandev_lsp.intel.surface.validation import check_schema, validate

MUTATING = [
    "code_rename",
    "code_actions",
    "code_format",
    "code_insert",
    "code_replace",
    "code_replace_batch",
]

MINIMAL: dict[str, dict[str, Any]] = {
    "code_rename": {"target": {"path": "a.py", "symbol": "f"}, "newName": "g"},
    "code_actions": {"path": "a.py", "line": 3},
    "code_format": {"path": "a.py"},
    "code_insert": {"target": {"path": "a.py", "line": 1}, "position": "before", "text": "import os\n"},
    "code_replace": {"target": {"path": "a.py", "symbol": "f"}, "text": "def f(): ...\n"},
    "code_replace_batch": {"edits": [{"target": {"path": "a.py", "line": 2}, "text": "x = 1\n"}]},
}


class Recorder:
    """Mutation bodies that record their typed arguments (routing only; real tools are tested elsewhere)."""

    def __init__(self, result: dict[str, Any] | None = None) -> None:
        self.calls: list[Any] = []
        self.result = result or {"ok": True}

    async def _answer(self, args: Any) -> dict[str, Any]:
        self.calls.append(args)
        return dict(self.result)

    async def rename(self, args: RenameArgs, ctx: IntelContext) -> dict[str, Any]:
        return await self._answer(args)

    async def actions(self, args: ActionsArgs, ctx: IntelContext) -> dict[str, Any]:
        return await self._answer(args)

    async def format(self, args: FormatArgs, ctx: IntelContext) -> dict[str, Any]:
        return await self._answer(args)

    async def insert(self, args: InsertArgs, ctx: IntelContext) -> dict[str, Any]:
        return await self._answer(args)

    async def replace(self, args: ReplaceArgs, ctx: IntelContext) -> dict[str, Any]:
        return await self._answer(args)

    async def replace_batch(self, args: ReplaceBatchArgs, ctx: IntelContext) -> dict[str, Any]:
        return await self._answer(args)

    async def approve(
        self, tool: str, transaction_id: str, approve: bool, ctx: IntelContext
    ) -> dict[str, Any]:
        return await self._answer(("approve", tool, transaction_id, approve))


def call(dispatcher: Dispatcher, op: str, payload: Any, ctx: IntelContext | None = None) -> dict[str, Any]:
    return asyncio.run(dispatcher.dispatch(op, payload, ctx or IntelContext()))


def wired(recorder: Recorder | None = None) -> tuple[Dispatcher, Recorder]:
    recorder = recorder or Recorder()
    return Dispatcher(UnwiredTools(), mutations=recorder), recorder


def test_the_mutating_tools_are_in_the_catalogue_with_mutation_annotations() -> None:
    assert [tool.name for tool in MUTATING_TOOLS] == MUTATING
    assert ALL_TOOLS == TOOLS + MUTATING_TOOLS
    for tool in MUTATING_TOOLS:
        check_schema(tool.input_schema)
        assert validate(tool.input_schema, MINIMAL[tool.name]) == [], tool.name
        annotations = tool.mcp_definition()["annotations"]
        assert annotations["readOnlyHint"] is False
        assert "firstMatch" not in json.dumps(tool.input_schema)  # B4.6: never offered
        assert {"transactionId", "approve"} <= set(tool.input_schema["properties"])
        properties = tool.input_schema["properties"]
        batch = properties.get("edits", {}).get("items", {}).get("properties", {})
        target = properties.get("target") or batch.get("target")
        if target is not None:  # the same fields as a read's target (B4.1), firstMatch aside
            assert set(target["properties"]) == set(TARGET["properties"])
        assert tool_by_name(tool.op) is tool and tool_by_name(tool.runtime_type) is tool
    destructive = {
        tool.name for tool in MUTATING_TOOLS if tool.mcp_definition()["annotations"]["destructiveHint"]
    }
    assert destructive == {"code_rename", "code_actions", "code_replace", "code_replace_batch"}
    size = len(json.dumps([tool.mcp_definition() for tool in MUTATING_TOOLS]))
    assert size < 12_000, f"the mutating tools cost {size} characters of every prompt"


def test_without_mutation_tools_they_are_neither_offered_nor_callable() -> None:
    dispatcher = Dispatcher(UnwiredTools())
    assert [tool.name for tool in dispatcher.tools()] == [tool.name for tool in TOOLS]
    result = call(dispatcher, "code_rename", MINIMAL["code_rename"])
    assert result["ok"] is False and result["error"].startswith("no tool 'code_rename'")


def test_wired_mutations_are_offered_and_disableable() -> None:
    recorder = Recorder()
    dispatcher = Dispatcher(UnwiredTools(), mutations=recorder, disabled=["code_format"])
    names = [tool.name for tool in dispatcher.tools()]
    assert names == [tool.name for tool in TOOLS] + [n for n in MUTATING if n != "code_format"]
    result = call(dispatcher, "format", {"path": "a.py"})
    assert result["ok"] is False and "disabled" in result["error"] and recorder.calls == []


@pytest.mark.parametrize(
    ("op", "payload", "expected"),
    [
        ("rename", MINIMAL["code_rename"], RenameArgs(Target("a.py", symbol="f"), "g")),
        (
            "code_actions",
            {"path": "a.ts", "line": 1, "endLine": 4, "only": "source.organizeImports", "apply": "x1"},
            ActionsArgs("a.ts", None, 1, 4, "source.organizeImports", "x1"),
        ),
        ("lsp.actions", {"path": "a.ts", "line": 2}, ActionsArgs("a.ts", None, 2, 2)),
        (
            "format",
            {"path": "a.py", "rootId": "r", "range": {"startLine": 2, "endLine": 5}},
            FormatArgs("a.py", "r", (2, 5)),
        ),
        ("insert", MINIMAL["code_insert"], InsertArgs(Target("a.py", line=1), "before", "import os\n")),
        (
            "replace",
            {"target": {"path": "a.py", "line": 3}, "text": "y\n", "endLine": 5},
            ReplaceArgs(Target("a.py", line=3), "y\n", 5),
        ),
        (
            "replace",
            {"target": {"path": "a.py", "line": 3, "matchText": "old"}, "text": "new"},
            ReplaceArgs(Target("a.py", line=3, match_text="old"), "new"),
        ),
        (
            "replace_batch",
            {
                "edits": [
                    {"target": {"path": "a.py", "symbol": "f"}, "text": "1"},
                    {"target": {"path": "b.py", "line": 2}, "text": "2", "endLine": 3},
                ]
            },
            ReplaceBatchArgs(
                (ReplaceArgs(Target("a.py", symbol="f"), "1"), ReplaceArgs(Target("b.py", line=2), "2", 3))
            ),
        ),
    ],
)
def test_valid_mutation_payloads_reach_the_tool_typed(
    op: str, payload: dict[str, Any], expected: Any
) -> None:
    dispatcher, recorder = wired()
    result = call(dispatcher, op, payload)
    assert result["ok"] is True, result
    assert recorder.calls == [expected]


@pytest.mark.parametrize(
    ("tool", "payload", "where"),
    [
        ("code_rename", {**MINIMAL["code_rename"], "firstMatch": True}, "firstMatch"),
        ("code_insert", {**MINIMAL["code_insert"], "firstMatch": False}, "firstMatch"),
        (
            "code_replace",
            {"target": {"path": "a.py", "symbol": "f", "firstMatch": True}, "text": "x"},
            "target.firstMatch",
        ),
        (
            "code_replace_batch",
            {"edits": [{"target": {"path": "a.py", "symbol": "f"}, "text": "x", "firstMatch": True}]},
            "edits[0].firstMatch",
        ),
        (
            "code_replace_batch",
            {"edits": [{"target": {"path": "a.py", "symbol": "f", "firstMatch": True}, "text": "x"}]},
            "edits[0].target.firstMatch",
        ),
    ],
)
def test_mutations_refuse_first_match_saying_why(tool: str, payload: dict[str, Any], where: str) -> None:
    dispatcher, recorder = wired()
    result = call(dispatcher, tool, payload)
    assert result["ok"] is False
    assert f"`{where}` is for reads only: a change needs an exact target" in result["error"], result
    assert "candidate id" in result["error"]
    assert result["receipt"]["outcome"] == "rejected" and result["receipt"]["textEdits"] == 0
    assert recorder.calls == []


@pytest.mark.parametrize(
    ("tool", "payload", "message"),
    [
        (
            "code_replace",
            {"target": {"path": "a.py", "symbol": "f"}, "text": "x", "endLine": 4},
            "`endLine` makes a line range from target.line: drop target.symbol",
        ),
        (
            "code_replace",
            {"target": {"path": "a.py", "line": 5}, "text": "x", "endLine": 4},
            "`endLine` (4) is before `target.line` (5)",
        ),
        (
            "code_replace",
            {"target": {"path": "a.py", "line": 5, "column": 3}, "text": "x"},
            "`target.column` alone marks a position, not text to replace",
        ),
        (
            "code_replace",
            {"target": {"path": "a.py", "line": 5, "column": 3}, "text": "x", "endLine": 6},
            "a line range replaces whole lines",
        ),
        (
            "code_replace_batch",
            {
                "edits": [
                    {"target": {"path": "a.py", "line": 1}, "text": "x"},
                    {"target": {"path": "a.py", "line": 9}, "text": "y", "endLine": 2},
                ]
            },
            "`edits[1].endLine` (2) is before `edits[1].target.line` (9)",
        ),
        ("code_replace_batch", {"edits": []}, "`edits` needs at least 1 item, got 0"),
        (
            "code_replace_batch",
            {"edits": [{"target": {"path": "a.py"}, "text": "x"}]},
            "target needs `symbol`",
        ),
        ("code_replace_batch", {"edits": [{"text": "x"}]}, "missing `edits[0].target`"),
        ("code_actions", {"path": "a.py", "line": 5, "endLine": 2}, "`endLine` (2) is before `line` (5)"),
        (
            "code_format",
            {"path": "a.py", "range": {"startLine": 5, "endLine": 2}},
            "`range.endLine` (2) is before `range.startLine` (5)",
        ),
        ("code_rename", {"target": {"path": "a.py", "symbol": "f"}, "newName": " g"}, "surrounding blanks"),
        (
            "code_insert",
            {"target": {"path": "a.py", "line": 1}, "position": "inside", "text": "x"},
            "must be one of before, after, start, end",
        ),
        (
            "code_insert",
            {"target": {"path": "a.py", "line": 1}, "position": "before", "text": ""},
            "`text` must not be empty",
        ),
    ],
)
def test_mutation_argument_rules(tool: str, payload: dict[str, Any], message: str) -> None:
    dispatcher, recorder = wired()
    result = call(dispatcher, tool, payload)
    assert result["ok"] is False and message in result["error"], result
    assert result["receipt"]["outcome"] == "rejected"
    assert recorder.calls == []


def test_a_transaction_id_routes_to_approve_without_the_tool_schema() -> None:
    dispatcher, recorder = wired()
    result = call(dispatcher, "code_rename", {"transactionId": "t1", "approve": True})
    assert result["ok"] is True
    declined = call(dispatcher, "code_format", {"transactionId": "t2", "approve": False})
    assert declined["ok"] is True
    from_context = call(dispatcher, "code_insert", {"approve": True}, IntelContext(transaction_id="t3"))
    assert from_context["ok"] is True
    assert recorder.calls == [
        ("approve", "code_rename", "t1", True),
        ("approve", "code_format", "t2", False),
        ("approve", "code_insert", "t3", True),
    ]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"transactionId": "t1"}, "send `approve`: true to apply"),
        ({"transactionId": "t1", "approve": "yes"}, "send `approve`: true to apply"),
        ({"transactionId": "", "approve": True}, "`transactionId` must be the non-empty string"),
        ({"approve": True}, "send it with the `transactionId` it returned"),
        (
            {"transactionId": "t1", "approve": True, "newName": "h"},
            "newName differs from the call that previewed transaction 't1' (no such call in this session)",
        ),
    ],
)
def test_a_malformed_second_step_says_what_to_send(payload: dict[str, Any], message: str) -> None:
    dispatcher, recorder = wired()
    result = call(dispatcher, "code_rename", payload)
    assert result["ok"] is False and message in result["error"], result
    assert recorder.calls == []


def test_a_second_step_may_repeat_the_previewing_calls_arguments_but_not_change_them() -> None:
    """A client that enforces the tool's schema sends its required arguments with the approval too; they
    must be the previewed call's, or the model would believe it approved a different edit."""
    parked = {"ok": True, "needsApproval": True, "transactionId": "t9", "preview": {}}
    dispatcher, recorder = wired(Recorder(parked))
    first = {"target": {"path": "a.py", "symbol": "f"}, "newName": "g"}
    assert call(dispatcher, "code_rename", first)["transactionId"] == "t9"
    changed = call(
        dispatcher, "code_rename", {**first, "newName": "h", "transactionId": "t9", "approve": True}
    )
    assert changed["ok"] is False and "newName differs from the call that previewed" in changed["error"]
    elsewhere = call(dispatcher, "code_format", {"path": "a.py", "transactionId": "t9", "approve": True})
    assert elsewhere["ok"] is False and "(it was previewed by code_rename)" in elsewhere["error"]
    assert len(recorder.calls) == 1  # neither reached approve
    recorder.result = {"ok": True, "outcome": "applied"}
    same = call(dispatcher, "code_rename", {**first, "transactionId": "t9", "approve": True})
    subset = {"newName": "g", "transactionId": "t9", "approve": True}
    assert same["ok"] is True and recorder.calls[-1] == ("approve", "code_rename", "t9", True)
    again = call(dispatcher, "code_rename", subset)  # the id is used up: the dispatcher forgot its call
    assert again["ok"] is False and "no such call in this session" in again["error"]


def test_auto_approve_all_reaches_the_host_but_never_the_model() -> None:
    dispatcher, _ = wired(Recorder({"ok": True, "autoApproveAll": True, "edits": 2, "files": 1}))
    outcome = asyncio.run(dispatcher.dispatch_for_host("code_format", {"path": "a.py"}, IntelContext()))
    assert outcome.auto_approve_all is True
    assert "autoApproveAll" not in outcome.result
    plain = call(dispatcher, "code_format", {"path": "a.py"})
    assert "autoApproveAll" not in plain and plain["summary"] == "applied 2 edits in 1 file"


@pytest.mark.parametrize(
    ("tool", "result", "summary"),
    [
        (
            "code_rename",
            {"ok": True, "newName": "total", "files": 3, "edits": 5},
            "renamed → total · 3 files",
        ),
        (
            "code_rename",
            {"ok": True, "needsApproval": True, "transactionId": "t", "preview": {"files": 2, "edits": 4}},
            "needs approval: 4 edits in 2 files",
        ),
        ("code_format", {"ok": True, "changed": False}, "no changes"),
        ("code_actions", {"ok": True, "actions": [{}, {}, {}]}, "3 code actions"),
        (
            "code_replace",
            {"ok": True, "status": "conflict", "message": "a.py changed on disk"},
            "conflict: a.py changed on disk",
        ),
    ],
)
def test_mutation_summaries(tool: str, result: dict[str, Any], summary: str) -> None:
    dispatcher, _ = wired(Recorder(result))
    payload = {"code_rename": MINIMAL["code_rename"], "code_format": {"path": "a.py"}}.get(
        tool, MINIMAL[tool]
    )
    assert call(dispatcher, tool, payload)["summary"] == summary


def test_code_intel_helpers_send_the_payloads_a_client_would() -> None:
    from kandev_lsp.intel.api import CodeIntel

    dispatcher, recorder = wired()
    intel = CodeIntel(dispatcher)
    f = Target("a.py", symbol="f")

    async def calls() -> list[dict[str, Any]]:
        return [
            await intel.rename(f, "g"),
            await intel.actions("a.ts", 2, end_line=3, only="quickfix", apply="Fix it"),
            await intel.format("a.py", lines=(1, 4)),
            await intel.insert(Target("a.py", line=1), "after", "x\n"),
            await intel.replace(Target("a.py", line=2), "y\n", end_line=3),
            await intel.replace_batch([(f, "z", None), (Target("b.py", line=1), "w", 2)]),
            await intel.approve("code_rename", "t9", False),
        ]

    assert all(result["ok"] for result in asyncio.run(calls()))
    assert recorder.calls == [
        RenameArgs(f, "g"),
        ActionsArgs("a.ts", None, 2, 3, "quickfix", "Fix it"),
        FormatArgs("a.py", None, (1, 4)),
        InsertArgs(Target("a.py", line=1), "after", "x\n"),
        ReplaceArgs(Target("a.py", line=2), "y\n", 3),
        ReplaceBatchArgs((ReplaceArgs(f, "z"), ReplaceArgs(Target("b.py", line=1), "w", 2))),
        ("approve", "code_rename", "t9", False),
    ]


def test_a_transaction_answers_only_to_the_tool_that_previewed_it() -> None:
    from types import SimpleNamespace

    from kandev_lsp.intel.edits.mutations import MutatingTools
    from kandev_lsp.intel.edits.plan import EditPlan
    from kandev_lsp.intel.edits.transactions import PendingMutation, TransactionStore

    store = TransactionStore()
    transaction_id = store.put(
        PendingMutation(tool="code_rename", plan=EditPlan((), (), {}), digests={}, bound={})
    )
    approved: list[str] = []

    async def approve(tid: str, yes: bool, ctx: IntelContext) -> dict[str, Any]:
        approved.append(tid)
        return {"ok": True, "applied": True}

    coordinator = SimpleNamespace(transactions=store, approve=approve)
    tools = MutatingTools(SimpleNamespace(pool=None, workspace=None), coordinator)  # type: ignore[arg-type]
    dispatcher = Dispatcher(UnwiredTools(), mutations=tools)
    wrong = call(dispatcher, "code_format", {"transactionId": transaction_id, "approve": True})
    assert not wrong["ok"] and "is a pending code_rename change, not a code_format one" in wrong["error"]
    assert approved == [] and store.peek(transaction_id) is not None  # still pending
    right = call(dispatcher, "code_rename", {"transactionId": transaction_id, "approve": True})
    assert right["ok"] and approved == [transaction_id]
