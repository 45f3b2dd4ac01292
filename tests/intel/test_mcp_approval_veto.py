"""A dismissed approval prompt is no approval (B2.4, B7.4): through ``kandev-lsp mcp`` and a real MCP client
(the SDK's stdio client, with an elicitation callback playing the person) on real pyright.

When the client declared elicitation, an edit parked because the person dismissed the prompt (cancel) or
the prompt failed is applied only on the person's accept: the model's ``{transactionId, approve: true}``
asks them again with the same question, their decline writes nothing, another dismissal leaves the edit
parked. (Before, that second step applied the edit without asking: the person was asked once, and the
model overruled the dismissal.) The headless two-step flow of clients without elicitation is covered by
tests/intel/test_mcp_mutations.py.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from intel_projects import write
from mcp import ClientSession
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters, stdio_client
from stream_testkit import TAG_VARIABLE, RealServers

KANDEV_LSP = str(Path(sys.executable).parent / "kandev-lsp")

PROJECT = {
    "pyproject.toml": '[project]\nname = "demo"\nversion = "0"\n',
    "lib.py": 'def greet(name: str) -> str:\n    return "hello " + name\n',
}
ORIGINAL = PROJECT["lib.py"]

#: What the person does with each prompt, in order: an ``ElicitResult`` or a failed prompt (``ErrorData``).
Person = Callable[[], types.ElicitResult | types.ErrorData]


def _cancel() -> types.ElicitResult:
    return types.ElicitResult(action="cancel")


def _decline() -> types.ElicitResult:
    return types.ElicitResult(action="decline")


def _accept() -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"approveAll": False})


def _crash() -> types.ErrorData:
    return types.ErrorData(code=types.INTERNAL_ERROR, message="the prompt window crashed")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write(tmp_path / "py", PROJECT)


@contextlib.asynccontextmanager
async def _session(
    folder: Path, real_servers: RealServers, tag: str, answers: list[Person], asked: list[str]
) -> AsyncIterator[ClientSession]:
    """``kandev-lsp mcp`` on ``folder`` with a client that declares elicitation; its person answers from
    ``answers`` in order and every question asked lands in ``asked``."""

    async def person(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert isinstance(params, types.ElicitRequestFormParams)
        asked.append(params.message)
        if len(asked) > len(answers):
            return types.ElicitResult(action="decline")  # an unplanned question: never an approval
        return answers[len(asked) - 1]()

    env = {**os.environ, **real_servers.overrides(), TAG_VARIABLE: tag}
    env["KANDEV_LSP_SETTINGS"] = str(folder.parent / "no-settings.json")
    params = StdioServerParameters(
        command=KANDEV_LSP, args=["mcp", "--workspace", str(folder), "--deadline", "90"], env=env
    )
    async with (
        stdio_client(params) as (read, write_stream),
        ClientSession(read, write_stream, elicitation_callback=person) as session,
    ):
        await session.initialize()
        yield session


def _replace(new: str) -> dict[str, Any]:
    return {"target": {"path": "lib.py", "line": 2, "matchText": '"hello "'}, "text": f'"{new} "'}


async def _scenario(folder: Path, real_servers: RealServers, tag: str) -> dict[str, Any]:
    """Two parked edits, each approved by the model after the person's prompt was dismissed:

    1. cancel -> parked; model approves -> asked again -> decline; the model's replay -> refused.
    2. a failed prompt -> parked; model approves -> asked again -> cancel (still parked); model approves
       once more -> asked again -> accept.
    """
    answers: list[Person] = [_cancel, _decline, _crash, _cancel, _accept]
    asked: list[str] = []
    out: dict[str, Any] = {"asked": asked, "steps": []}

    def step(name: str, result: types.CallToolResult) -> None:
        out["steps"].append((name, result, len(asked), (folder / "lib.py").read_text()))

    async with _session(folder, real_servers, tag, answers, asked) as session:
        parked = await session.call_tool("code_replace", _replace("hi"))
        step("cancelled", parked)
        first = (parked.structured_content or {}).get("transactionId")
        approve_first = {"transactionId": first, "approve": True}
        step("model approves 1", await session.call_tool("code_replace", approve_first))
        step("replay 1", await session.call_tool("code_replace", approve_first))

        parked = await session.call_tool("code_replace", _replace("hey"))
        step("prompt failed", parked)
        second = (parked.structured_content or {}).get("transactionId")
        approve_second = {"transactionId": second, "approve": True}
        step("model approves 2", await session.call_tool("code_replace", approve_second))
        step("model approves 2 again", await session.call_tool("code_replace", approve_second))
    out["ids"] = (first, second)
    return out


@pytest.mark.real_server
@pytest.mark.network_registry
@pytest.mark.timeout(300)
def test_only_the_person_approves_when_the_client_can_ask(
    project: Path, real_servers: RealServers, tag: str
) -> None:
    out = anyio.run(_scenario, project, real_servers, tag)
    steps = {name: (result, asked, disk) for name, result, asked, disk in out["steps"]}
    asked: list[str] = out["asked"]
    first, second = out["ids"]

    # 1. the person dismissed the prompt: parked, nothing written
    result, count, disk = steps["cancelled"]
    parked = result.structured_content or {}
    assert parked.get("needsApproval") is True and isinstance(first, str), result
    assert count == 1 and disk == ORIGINAL

    # the model's approve: true is only a request: the person is asked again, the same question
    result, count, disk = steps["model approves 1"]
    assert count == 2, "the model's approval of a dismissed edit must ask the person again"
    assert asked[1] == asked[0] and '+    return "hi " + name' in asked[1]
    declined = result.structured_content or {}
    assert declined.get("declined") is True and declined["receipt"]["outcome"] == "declined", result
    assert disk == ORIGINAL  # declined: nothing written

    # the declined transaction is spent: a replay asks nobody and writes nothing
    result, count, disk = steps["replay 1"]
    assert result.is_error and (result.structured_content or {}).get("transactionStatus") == "used", result
    assert count == 2 and disk == ORIGINAL

    # 2. a failed prompt parks too; the model's approval asks again, a dismissal keeps it parked
    result, count, disk = steps["prompt failed"]
    assert (result.structured_content or {}).get("needsApproval") is True, result
    assert count == 3 and disk == ORIGINAL
    result, count, disk = steps["model approves 2"]
    still = result.structured_content or {}
    assert count == 4 and asked[3] == asked[2]
    assert still.get("needsApproval") is True and still.get("transactionId") == second, result
    assert "dismissed" in still.get("notice", "") and still["receipt"]["outcome"] == "pending-approval"
    assert disk == ORIGINAL  # dismissed again: still nothing written

    # accepted at last: written
    result, count, disk = steps["model approves 2 again"]
    assert not result.is_error, result
    assert count == 5 and (result.structured_content or {})["receipt"]["outcome"] == "applied"
    assert disk == 'def greet(name: str) -> str:\n    return "hey " + name\n'

    # and the model is told who approves: the next step asks the person, it does not apply by itself
    assert "ask them again" in parked["next"] and "asks them again" in steps["cancelled"][0].content[-1].text


def test_a_checked_transaction_stays_pending_until_taken() -> None:
    """The approval step checks an id before asking the person: checking spends nothing, a dismissed
    question leaves the id approvable, and expiry is as strict as for :meth:`TransactionStore.take`."""
    from kandev_lsp.intel.edits.plan import EditPlan
    from kandev_lsp.intel.edits.transactions import PendingMutation, TransactionError, TransactionStore

    now = [0.0]
    store = TransactionStore(ttl=300, clock=lambda: now[0])
    pending = PendingMutation(tool="code_replace", plan=EditPlan((), (), {}), digests={}, bound={})
    first, second = store.put(pending), store.put(pending)
    now[0] = 100.0
    assert store.check(first) is pending and store.check(first) is pending  # not spent
    assert store.remaining(first) == 200.0
    assert store.take(first) is pending
    with pytest.raises(TransactionError) as used:
        store.check(first)
    assert used.value.reason == "used" and store.remaining(first) == 0.0
    now[0] = 301.0
    with pytest.raises(TransactionError) as expired:
        store.check(second)
    assert expired.value.reason == "expired"
    with pytest.raises(TransactionError) as again:
        store.take(second)
    assert again.value.reason == "expired"
