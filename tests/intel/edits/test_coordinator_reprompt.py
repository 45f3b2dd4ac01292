"""The approval step of a parked mutation when the host can ask its user (security finding 2; B2.4-B2.6,
B7.4), on the coordinator without a language server (files no language owns): the model's
``approve: true`` asks the person again and only their accept applies; "approve all" covers a parked
previewable edit but never a file operation; a dismissed, failed or unanswered re-prompt leaves the edit
parked, and ``approve: false`` discards without asking. The same over a real MCP client and pyright is in
tests/intel/test_mcp_approval_veto.py."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coordinating import coordinator_for, fixed
from kandev_lsp.intel.edits.transactions import TransactionStore
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.surface.dispatch import IntelContext


class Person:
    """Answers each question from ``answers`` in order (True, False, None, or an exception to raise,
    or ``"never"``), recording the questions."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    async def __call__(self, message: str, preview: Any) -> bool | None:
        self.asked.append(message)
        answer = self.answers.pop(0)
        if answer == "never":
            await asyncio.Event().wait()
        if isinstance(answer, BaseException):
            raise answer
        assert answer is None or isinstance(answer, bool)
        return answer


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "w"
    folder.mkdir(parents=True)
    (folder / "a.txt").write_text("alpha\n")
    return folder


def _insert(text: str) -> dict[str, Any]:
    at = {"line": 0, "character": 0}
    return {"range": {"start": at, "end": at}, "newText": text}


async def _park_then_approve(
    folder: Path,
    edit_of: Callable[[Workspace], dict[str, Any]],
    first: Person,
    *steps: tuple[bool, IntelContext],
) -> list[dict[str, Any]]:
    """Park a mutation (the person's first answer), then send the model's ``approve`` values in turn."""
    async with coordinator_for(folder, transactions=TransactionStore(ttl=5)) as (workspace, coordinator):
        a = workspace.resolve("a.txt")
        parked = await coordinator.mutate(
            "code_actions", [a], fixed(edit_of(workspace)), IntelContext(elicit=first)
        )
        results = [parked]
        for approve, ctx in steps:
            results.append(
                await asyncio.wait_for(coordinator.approve(parked["transactionId"], approve, ctx), 10)
            )
        return results


def _text_edit(workspace: Workspace) -> dict[str, Any]:
    return {"changes": {workspace.resolve("a.txt").uri: [_insert("x")]}}


def _file_rename(workspace: Workspace) -> dict[str, Any]:
    a = workspace.resolve("a.txt")
    new = a.uri.rsplit("/", 1)[0] + "/c.txt"
    return {"documentChanges": [{"kind": "rename", "oldUri": a.uri, "newUri": new}]}


def test_the_model_approval_asks_again_and_a_decline_writes_nothing(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    person = Person(None, False)
    parked, declined = asyncio.run(
        _park_then_approve(folder, _text_edit, person, (True, IntelContext(elicit=person)))
    )
    assert parked["needsApproval"] and "ask them again" in parked["next"], parked
    assert person.asked[1] == person.asked[0]  # the same question, from the parked preview
    assert declined["declined"] and declined["receipt"]["outcome"] == "declined", declined
    assert (folder / "a.txt").read_text() == "alpha\n"


def test_a_dismissed_failed_or_unanswered_reprompt_leaves_it_parked(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    person = Person(None, None, ConnectionError("the client went away"), True)
    results = asyncio.run(
        _park_then_approve(
            folder, _text_edit, person, *((True, IntelContext(elicit=person)) for _ in range(3))
        )
    )
    parked, cancelled, failed, accepted = results
    for still in (cancelled, failed):
        assert still["needsApproval"] and still["transactionId"] == parked["transactionId"], still
        assert "dismissed" in still["notice"] and still["receipt"]["outcome"] == "pending-approval"
    assert len(person.asked) == 4
    assert accepted["applied"] and accepted["receipt"]["outcome"] == "applied", accepted
    assert (folder / "a.txt").read_text() == "xalpha\n"


def test_an_unanswered_reprompt_applies_nothing(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    person = Person(None, "never")

    async def run() -> list[dict[str, Any]]:
        async with coordinator_for(folder, transactions=TransactionStore(ttl=0.5)) as (
            workspace,
            coordinator,
        ):
            a = workspace.resolve("a.txt")
            ctx = IntelContext(elicit=person)
            parked = await coordinator.mutate("code_insert", [a], fixed(_text_edit(workspace)), ctx)
            again = await asyncio.wait_for(coordinator.approve(parked["transactionId"], True, ctx), 10)
            return [parked, again]

    parked, again = asyncio.run(run())
    assert again["transactionId"] == parked["transactionId"]
    assert again["needsApproval"] and "dismissed" in again["notice"], again  # asked for what was left
    assert (folder / "a.txt").read_text() == "alpha\n"


def test_approve_false_discards_without_asking(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    person = Person(None)
    _, discarded = asyncio.run(
        _park_then_approve(folder, _text_edit, person, (False, IntelContext(elicit=person)))
    )
    assert discarded["declined"] and len(person.asked) == 1, discarded
    assert (folder / "a.txt").read_text() == "alpha\n"


def test_approve_all_covers_a_parked_text_edit_but_never_a_file_operation(tmp_path: Path) -> None:
    # the person dismissed the prompt, then chose "approve all" for the session: a parked previewable
    # edit applies as a fresh one would, without asking
    folder = _folder(tmp_path)
    person = Person(None)
    _, applied = asyncio.run(
        _park_then_approve(folder, _text_edit, person, (True, IntelContext(elicit=person, auto_approve=True)))
    )
    assert applied["applied"] and len(person.asked) == 1, applied
    assert (folder / "a.txt").read_text() == "xalpha\n"

    # a file rename is asked again whatever the session says, and a decline keeps the file
    other = _folder(tmp_path / "other")
    person = Person(None, False)
    _, declined = asyncio.run(
        _park_then_approve(
            other, _file_rename, person, (True, IntelContext(elicit=person, auto_approve=True))
        )
    )
    assert declined["declined"] and len(person.asked) == 2, declined
    assert (other / "a.txt").exists() and not (other / "c.txt").exists()
