"""The mutation coordinator without a language server (files no language owns), and the runtime's pure
helpers it uses: receipts on every outcome, the lock, approval rules, write failures (fault injection),
didSave and file-operation rules."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from coordinating import coordinator_for, fixed
from kandev_lsp.intel.edits import coordinator as coordinator_module
from kandev_lsp.intel.edits.commit import DiskFileSystem
from kandev_lsp.intel.edits.coordinator import ProducedEdit
from kandev_lsp.intel.edits.transactions import TransactionStore
from kandev_lsp.intel.runtime.executor import Deadline
from kandev_lsp.intel.runtime.pool import save_options
from kandev_lsp.intel.runtime.watchers import file_operation_wanted
from kandev_lsp.intel.surface.dispatch import IntelContext
from kandev_lsp.lsp.errors import RequestTimeout, ResponseError
from kandev_lsp.lsp.positions import PositionEncoding

AUTO = IntelContext(auto_approve=True)


def _insert(uri: str, text: str, line: int = 0) -> dict[str, Any]:
    at = {"line": line, "character": 0}
    return {"range": {"start": at, "end": at}, "newText": text}


def _notes(tmp_path: Path) -> Path:
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "a.txt").write_text("alpha\n")
    (folder / "b.txt").write_text("beta\n")
    return folder


def test_auto_approve_applies_a_text_edit_with_a_receipt(tmp_path: Path) -> None:
    folder = _notes(tmp_path)

    async def run() -> dict[str, Any]:
        async with coordinator_for(folder) as (workspace, coordinator):
            a, b = workspace.resolve("a.txt"), workspace.resolve("b.txt")
            edit = {"changes": {a.uri: [_insert(a.uri, "1 ")], b.uri: [_insert(b.uri, "2 ")]}}
            return await coordinator.mutate("code_insert", [a], fixed(edit, result={"where": "start"}), AUTO)

    result = asyncio.run(run())
    assert result["ok"] and result["applied"] and result["where"] == "start", result
    assert (folder / "a.txt").read_text() == "1 alpha\n" and (folder / "b.txt").read_text() == "2 beta\n"
    receipt = result["receipt"]
    assert receipt["outcome"] == "applied" and receipt["saved"] == "saved" and receipt["textEdits"] == 2
    assert receipt["touched"] == ["a.txt", "b.txt"]
    assert receipt["diagnostics"]["status"] == "not-collected"  # no server owns .txt files


def test_commits_are_anchored_at_every_workspace_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _notes(tmp_path)
    seen: list[object] = []
    real_commit = coordinator_module.commit

    def recording(plan: Any, **kw: Any) -> Any:
        seen.append(kw.get("roots"))
        return real_commit(plan, **kw)

    monkeypatch.setattr(coordinator_module, "commit", recording)

    async def run() -> dict[str, Any]:
        async with coordinator_for(folder) as (workspace, coordinator):
            a = workspace.resolve("a.txt")
            return await coordinator.mutate(
                "code_insert", [a], fixed({"changes": {a.uri: [_insert(a.uri, "1 ")]}}), AUTO
            )

    assert asyncio.run(run())["ok"]
    assert seen == [[str(folder.resolve())]]


def test_without_auto_approve_or_elicit_the_mutation_is_parked(tmp_path: Path) -> None:
    folder = _notes(tmp_path)

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with coordinator_for(folder) as (workspace, coordinator):
            a = workspace.resolve("a.txt")
            parked = await coordinator.mutate(
                "code_insert", [a], fixed({"changes": {a.uri: [_insert(a.uri, "x")]}}), IntelContext()
            )
            assert (folder / "a.txt").read_text() == "alpha\n"
            return parked, await coordinator.approve(parked["transactionId"], True, IntelContext())

    parked, applied = asyncio.run(run())
    assert parked["needsApproval"] and parked["receipt"]["outcome"] == "pending-approval", parked
    assert "+xalpha" in parked["preview"]["diff"] and "transactionId" in parked["next"]
    assert applied["ok"] and applied["transactionId"] == parked["transactionId"]
    assert (folder / "a.txt").read_text() == "xalpha\n"


def test_resource_operations_are_never_auto_approved(tmp_path: Path) -> None:
    folder = _notes(tmp_path)

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with coordinator_for(folder) as (workspace, coordinator):
            a = workspace.resolve("a.txt")
            new = (folder / "c.txt").as_uri()
            edit = {"documentChanges": [{"kind": "rename", "oldUri": a.uri, "newUri": new}]}
            parked = await coordinator.mutate("code_actions", [a], fixed(edit), AUTO)
            return parked, await coordinator.approve(parked["transactionId"], True, AUTO)

    parked, applied = asyncio.run(run())
    assert parked["needsApproval"] and parked["approvalReasons"], parked
    assert applied["ok"], applied
    assert not (folder / "a.txt").exists() and (folder / "c.txt").read_text() == "alpha\n"
    assert applied["receipt"]["resourceOperations"][0]["kind"] == "rename"
    assert applied["receipt"]["touched"] == ["a.txt", "c.txt"]


def test_a_malformed_edit_is_rejected_with_a_receipt(tmp_path: Path) -> None:
    folder = _notes(tmp_path)

    async def run() -> dict[str, Any]:
        async with coordinator_for(folder) as (workspace, coordinator):
            a = workspace.resolve("a.txt")
            overlapping = {
                "changes": {
                    a.uri: [
                        {
                            "range": {
                                "start": {"line": 0, "character": 0},
                                "end": {"line": 0, "character": 3},
                            },
                            "newText": "x",
                        },
                        {
                            "range": {
                                "start": {"line": 0, "character": 2},
                                "end": {"line": 0, "character": 4},
                            },
                            "newText": "y",
                        },
                    ]
                }
            }
            return await coordinator.mutate("code_replace_batch", [a], fixed(overlapping), AUTO)

    result = asyncio.run(run())
    assert not result["ok"] and result["status"] == "rejected", result
    assert result["receipt"]["outcome"] == "rejected" and result["receipt"]["touched"] == ["a.txt"]
    assert (folder / "a.txt").read_text() == "alpha\n"


def test_an_empty_edit_changes_nothing_and_needs_no_approval(tmp_path: Path) -> None:
    folder = _notes(tmp_path)

    async def run() -> dict[str, Any]:
        async with coordinator_for(folder) as (workspace, coordinator):
            a = workspace.resolve("a.txt")
            return await coordinator.mutate("code_format", [a], fixed({}), IntelContext())

    result = asyncio.run(run())
    assert result["ok"] and result["changed"] is False, result
    # nothing to count, approve or write: the small receipt, as a rejection's
    assert result["receipt"] == {"outcome": "unchanged", "textEdits": 0, "saved": "not-saved"}
    assert "needsApproval" not in result and (folder / "a.txt").read_text() == "alpha\n"


class _FailingDisk(DiskFileSystem):
    """``replace`` fails on call ``fail_on`` (a full disk), and on every later call when ``sticky``."""

    def __init__(self, fail_on: int, sticky: bool) -> None:
        super().__init__()
        self.calls = 0
        self.fail_on = fail_on
        self.sticky = sticky

    def replace(self, source: str, target: str) -> None:
        self.calls += 1
        if self.calls == self.fail_on or (self.sticky and self.calls > self.fail_on):
            raise OSError(28, "No space left on device")
        super().replace(source, target)


@pytest.mark.parametrize(
    ("sticky", "status", "saved"), [(False, "failed", "not-saved"), (True, "uncertain", "uncertain")]
)
def test_a_write_failure_is_reported_with_its_save_state(
    tmp_path: Path, sticky: bool, status: str, saved: str
) -> None:
    folder = _notes(tmp_path)

    async def run() -> dict[str, Any]:
        async with coordinator_for(folder, fs=_FailingDisk(2, sticky)) as (workspace, coordinator):
            a, b = workspace.resolve("a.txt"), workspace.resolve("b.txt")
            edit = {"changes": {a.uri: [_insert(a.uri, "1 ")], b.uri: [_insert(b.uri, "2 ")]}}
            return await coordinator.mutate("code_insert", [a], fixed(edit), AUTO)

    result = asyncio.run(run())
    assert not result["ok"] and result["status"] == status, result
    assert result["receipt"]["outcome"] == status and result["receipt"]["saved"] == saved
    assert result["receipt"]["textEdits"] == 2 and result["receipt"]["touched"] == ["a.txt", "b.txt"]
    if status == "failed":  # rolled back: every file as it was
        assert (folder / "a.txt").read_text() == "alpha\n" and (folder / "b.txt").read_text() == "beta\n"
    else:  # the restore failed too: the message says to check the files
        assert "check" in result["error"].lower()


def test_mutations_queue_behind_each_other(tmp_path: Path) -> None:
    folder = _notes(tmp_path)
    order: list[str] = []

    async def run() -> None:
        async with coordinator_for(folder) as (workspace, coordinator):
            a = workspace.resolve("a.txt")
            gate = asyncio.Event()

            async def first(deadline: Deadline) -> ProducedEdit:
                order.append("first starts")
                await gate.wait()
                order.append("first ends")
                return ProducedEdit({"changes": {a.uri: [_insert(a.uri, "1")]}})

            async def second(deadline: Deadline) -> ProducedEdit:
                order.append("second starts")
                # made against the text the first mutation wrote
                assert (folder / "a.txt").read_text() == "1alpha\n"
                return ProducedEdit({"changes": {a.uri: [_insert(a.uri, "2")]}})

            one = asyncio.ensure_future(coordinator.mutate("code_insert", [a], first, AUTO))
            two = asyncio.ensure_future(coordinator.mutate("code_insert", [a], second, AUTO))
            await asyncio.sleep(0.1)
            assert order == ["first starts"]
            gate.set()
            results = await asyncio.gather(one, two)
            assert all(r["ok"] for r in results), results

    asyncio.run(run())
    assert order == ["first starts", "first ends", "second starts"]
    assert (folder / "a.txt").read_text() == "21alpha\n"


def test_save_options_read_text_document_sync() -> None:
    assert save_options({"textDocumentSync": 2}) == (False, False)
    assert save_options({"textDocumentSync": {"change": 2}}) == (False, False)
    assert save_options({"textDocumentSync": {"save": True}}) == (True, False)
    assert save_options({"textDocumentSync": {"save": {"includeText": True}}}) == (True, True)
    assert save_options({"textDocumentSync": {"save": {}}}) == (True, False)


def test_file_operations_are_sent_only_where_the_filters_match() -> None:
    options = {"filters": [{"scheme": "file", "pattern": {"glob": "**/*.{ts,js}", "matches": "file"}}]}
    assert file_operation_wanted(options, "/w/src/a.ts", False)
    assert file_operation_wanted(options, "/w/b.js", False)
    assert not file_operation_wanted(options, "/w/a.py", False)
    assert not file_operation_wanted(options, "/w/src.ts", True)  # a folder, the filter wants files
    folded = {"filters": [{"pattern": {"glob": "**/*.PY", "options": {"ignoreCase": True}}}]}
    assert file_operation_wanted(folded, "/w/a.py", False)
    assert not file_operation_wanted(
        {"filters": [{"scheme": "untitled", "pattern": {"glob": "**"}}]}, "/w/a", False
    )
    assert not file_operation_wanted(None, "/w/a.ts", False)


class _CommandServer:
    """Fault injection: a server whose ``workspace/executeCommand`` fails (a real one rarely does)."""

    encoding = PositionEncoding.UTF16

    def __init__(
        self, error: Exception | None, project_root: str = "/nonexistent", effect: Any = None
    ) -> None:
        self.error = error
        self.project_root = project_root
        self.effect = effect
        self.asked: list[tuple[str, Any]] = []

    async def request(self, method: str, params: Any, timeout: float) -> Any:
        self.asked.append((method, params))
        if self.effect is not None:
            self.effect()
        if self.error is not None:
            raise self.error
        return None


@pytest.mark.parametrize(
    ("error", "ok", "status", "outcome"),
    [
        (RequestTimeout("workspace/executeCommand", 5.0), False, "uncertain", "uncertain"),
        (ResponseError("workspace/executeCommand", -32603, "boom"), True, None, "applied"),
    ],
)
def test_a_command_timeout_is_uncertain_and_a_failure_is_kept(
    tmp_path: Path, error: Exception, ok: bool, status: str | None, outcome: str
) -> None:
    folder = _notes(tmp_path)
    server = _CommandServer(error)

    async def run() -> dict[str, Any]:
        async with coordinator_for(folder) as (workspace, coordinator):
            a = workspace.resolve("a.txt")

            async def fake_server(files: Any, deadline: Any) -> Any:
                return server

            coordinator._server_of = fake_server  # type: ignore[method-assign]
            command = {"title": "Fix all", "command": "fix.all", "arguments": [1]}
            edit = {"changes": {a.uri: [_insert(a.uri, "x")]}}
            parked = await coordinator.mutate(
                "code_actions", [a], fixed(edit, commands=(command,), incomplete_diff=True), AUTO
            )
            assert parked["needsApproval"], parked  # a command is never auto-approved (B6.22, B7.4)
            return await coordinator.approve(parked["transactionId"], True, AUTO)

    result = asyncio.run(run())
    assert server.asked == [("workspace/executeCommand", {"command": "fix.all", "arguments": [1]})]
    assert result["ok"] is ok and result.get("status") == status, result
    receipt = result["receipt"]
    assert receipt["outcome"] == outcome and receipt["textEdits"] == 1 and receipt["saved"] == "saved"
    assert receipt["commands"][0]["command"] == "Fix all"
    assert receipt["commands"][0]["status"] == ("timeout" if status else "error")
    assert (folder / "a.txt").read_text() == "xalpha\n"  # the edit part was applied either way
    if ok:
        assert "boom" in result["notice"]
    else:
        assert "timed out" in result["error"]


def test_an_elicitation_that_fails_or_is_cancelled_parks_the_mutation(tmp_path: Path) -> None:
    folder = _notes(tmp_path)

    async def broken(message: str, preview: Any) -> bool | None:
        raise ConnectionError("the client went away")

    async def cancelled(message: str, preview: Any) -> bool | None:
        return None

    async def run() -> list[dict[str, Any]]:
        async with coordinator_for(folder) as (workspace, coordinator):
            a = workspace.resolve("a.txt")
            edit = {"changes": {a.uri: [_insert(a.uri, "x")]}}
            return [
                await coordinator.mutate("code_insert", [a], fixed(edit), IntelContext(elicit=ask))
                for ask in (broken, cancelled)
            ]

    for result in asyncio.run(run()):
        assert result["ok"] and result["needsApproval"] and result["transactionId"], result
    assert (folder / "a.txt").read_text() == "alpha\n"


def test_files_a_command_writes_by_itself_widen_the_receipt(tmp_path: Path) -> None:
    """B6.23: a command that creates, changes and deletes files without workspace/applyEdit."""
    folder = _notes(tmp_path)
    (folder / "old.txt").write_text("old\n")

    def effect() -> None:
        (folder / "made.txt").write_text("new file\n")
        (folder / "b.txt").write_text("beta, rewritten by the command\n")
        (folder / "old.txt").unlink()

    server = _CommandServer(None, str(folder), effect)

    async def run() -> dict[str, Any]:
        async with coordinator_for(folder) as (workspace, coordinator):
            a = workspace.resolve("a.txt")

            async def fake_server(files: Any, deadline: Any) -> Any:
                return server

            coordinator._server_of = fake_server  # type: ignore[method-assign]
            calls: list[list[str]] = []

            async def fake_diagnostics(files: Any, deadline: Any, ctx: Any, **kw: Any) -> Any:
                """Diagnostics source stand-in: one error per file, and a new one in b.txt after."""
                paths = sorted(f.display for f in files)
                calls.append(paths)
                error = {"severity": 1, "message": "bad", "line": 1}
                after = len(calls) > 1
                return {
                    p: (
                        [error, {**error, "message": "worse"}] if after and p == "b.txt" else [error],
                        "current",
                    )
                    for p in paths
                }

            coordinator._diagnostics = fake_diagnostics  # type: ignore[method-assign]
            command = {"title": "Generate", "command": "gen"}
            edit = {"changes": {a.uri: [_insert(a.uri, "x")]}}
            parked = await coordinator.mutate(
                "code_actions", [a], fixed(edit, commands=(command,), incomplete_diff=True), AUTO
            )
            return await coordinator.approve(parked["transactionId"], True, AUTO)

    result = asyncio.run(run())
    assert result["ok"], result
    receipt = result["receipt"]
    assert receipt["touched"] == ["a.txt", "b.txt", "made.txt", "old.txt"], receipt
    observed = [op for op in receipt["resourceOperations"] if op.get("observed")]
    assert observed == [
        {"kind": "create", "path": "made.txt", "exact": False, "observed": True},
        {"kind": "delete", "path": "old.txt", "exact": False, "observed": True},
    ]
    assert receipt["commands"][0]["status"] == "ok" and receipt["commands"][0]["opaque"] is True
    # Diagnostics: a.txt had a baseline (persisting), made.txt was created (introduced), b.txt was changed
    # by the command without a baseline: not compared, never all "introduced".
    delta = receipt["diagnostics"]
    assert delta["counts"] == {"introduced": 1, "resolved": 0, "persisting": 1}, delta
    assert delta["introduced"][0]["path"] == "made.txt"
    assert delta["uncompared"] == ["b.txt", "old.txt"]


class _SlowDisk(DiskFileSystem):
    """Each ``replace`` takes a while (a slow disk), and says when the first one started."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()

    def replace(self, source: str, target: str) -> None:
        self.started.set()
        time.sleep(0.2)
        super().replace(source, target)


def test_a_cancelled_call_still_finishes_its_commit_before_the_next_mutation(tmp_path: Path) -> None:
    folder = _notes(tmp_path)
    disk = _SlowDisk()
    seen: list[tuple[str, str]] = []

    async def run() -> None:
        async with coordinator_for(folder, fs=disk) as (workspace, coordinator):
            a, b = workspace.resolve("a.txt"), workspace.resolve("b.txt")
            edit = {"changes": {a.uri: [_insert(a.uri, "1 ")], b.uri: [_insert(b.uri, "2 ")]}}
            first = asyncio.ensure_future(coordinator.mutate("code_insert", [a], fixed(edit), AUTO))
            while not disk.started.is_set():
                await asyncio.sleep(0.01)
            first.cancel()

            async def look(deadline: Deadline) -> ProducedEdit:
                seen.append(((folder / "a.txt").read_text(), (folder / "b.txt").read_text()))
                return ProducedEdit({})

            second = await coordinator.mutate("code_format", [a], look, AUTO)
            assert second["ok"], second
            with pytest.raises(asyncio.CancelledError):
                await first

    asyncio.run(run())
    assert seen == [("1 alpha\n", "2 beta\n")]  # the whole first commit, never half of it


def test_an_unanswered_question_is_parked_after_the_approval_window(tmp_path: Path) -> None:
    folder = _notes(tmp_path)

    async def never(message: str, preview: Any) -> bool | None:
        await asyncio.Event().wait()
        return True

    async def run() -> dict[str, Any]:
        store = TransactionStore(ttl=0.3)
        async with coordinator_for(folder, transactions=store) as (workspace, coordinator):
            a = workspace.resolve("a.txt")
            edit = {"changes": {a.uri: [_insert(a.uri, "x")]}}
            return await asyncio.wait_for(
                coordinator.mutate("code_insert", [a], fixed(edit), IntelContext(elicit=never)), 10
            )

    result = asyncio.run(run())
    assert result["needsApproval"] and result["transactionId"], result
    assert (folder / "a.txt").read_text() == "alpha\n"
