"""The mutation coordinator on a real pyright (B7.1-B7.5, B3.6-B3.7, B6.23): a rename parked as a
transaction then approved, a stale file at approval, expired and replayed ids, post-edit diagnostics,
an edit outside the workspace, elicitation, concurrent reads, and a command whose server edit comes
back through ``workspace/applyEdit``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from intel_projects import PYTHON, write
from kandev_lsp import TaskEnvironment
from kandev_lsp.host import PluginHost
from kandev_lsp.intel.edits.coordinator import MutationCoordinator, ProducedEdit
from kandev_lsp.intel.edits.transactions import TransactionStore
from kandev_lsp.intel.files.workspace import Workspace, WorkspaceFile
from kandev_lsp.intel.reading.tools import LspReadTools
from kandev_lsp.intel.runtime.executor import Deadline
from kandev_lsp.intel.runtime.pool import ServerPool
from kandev_lsp.intel.surface.dispatch import Dispatcher, IntelContext
from kandev_lsp.lifecycle import Lifecycle
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]

#: A loaded shared machine: cold servers get longer than the tools' 9 s default.
SLOW = IntelContext(deadline=90)
AUTO = IntelContext(deadline=90, auto_approve=True)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def _session(
    folder: Path, real_servers: RealServers, tag: str, store: TransactionStore | None = None
) -> AsyncIterator[tuple[Workspace, ServerPool, MutationCoordinator]]:
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    workspace = Workspace([folder])
    lifecycle = Lifecycle(PluginHost.load())
    pool = ServerPool(workspace, lifecycle, env)
    coordinator = MutationCoordinator(workspace, pool, transactions=store)
    try:
        yield workspace, pool, coordinator
    finally:
        await pool.aclose()
        await lifecycle.aclose()


def _rename(pool: ServerPool, file: WorkspaceFile, line: int, character: int, new_name: str) -> Any:
    """A producer asking pyright for ``textDocument/rename`` directly (what code_rename will do)."""

    async def produce(deadline: Deadline) -> ProducedEdit:
        server = await pool.server_for(file, deadline)
        await server.refresh()
        document = await server.sync(file)
        await server.wait_ready(deadline)
        edit = await server.request(
            "textDocument/rename",
            {
                "textDocument": {"uri": file.uri},
                "position": {"line": line, "character": character},
                "newName": new_name,
            },
            deadline.remaining(),
        )
        return ProducedEdit(edit, result={"newName": new_name}, bound={file.uri: document.version})

    return produce


def _edit(pool: ServerPool, file: WorkspaceFile, edit: Callable[[str], dict[str, Any]]) -> Any:
    """A producer handing over a fixed edit, after syncing the file like a tool does."""

    async def produce(deadline: Deadline) -> ProducedEdit:
        server = await pool.server_for(file, deadline)
        document = await server.sync(file)
        await server.wait_ready(deadline)
        return ProducedEdit(edit(file.uri), bound={file.uri: document.version})

    return produce


def _insert(uri: str, line: int, text: str) -> dict[str, Any]:
    at = {"line": line, "character": 0}
    return {"changes": {uri: [{"range": {"start": at, "end": at}, "newText": text}]}}


def _replace_line(uri: str, line: int, old: str, new: str) -> dict[str, Any]:
    span = {"start": {"line": line, "character": 0}, "end": {"line": line, "character": len(old)}}
    return {"changes": {uri: [{"range": span, "newText": new}]}}


async def _park_approve_and_diagnostics(folder: Path, real_servers: RealServers, tag: str) -> None:
    async with _session(folder, real_servers, tag) as (workspace, pool, coordinator):
        lib, app = workspace.resolve("lib.py"), workspace.resolve("app.py")
        before_lib = (folder / "lib.py").read_text()
        parked = await coordinator.mutate("code_rename", [lib], _rename(pool, lib, 10, 4, "salute"), SLOW)
        assert parked["ok"] and parked["needsApproval"], parked
        assert parked["newName"] == "salute"
        assert "+def salute(" in parked["preview"]["diff"] and "app.py" in parked["preview"]["diff"]
        assert (
            parked["receipt"]["outcome"] == "pending-approval" and parked["receipt"]["saved"] == "not-saved"
        )
        assert parked["receipt"]["touched"] == ["app.py", "lib.py"]
        assert (folder / "lib.py").read_text() == before_lib  # nothing written before the approval
        transaction_id = parked["transactionId"]

        applied = await coordinator.approve(transaction_id, True, SLOW)
        assert applied["ok"] and applied["applied"], applied
        receipt = applied["receipt"]
        assert receipt["outcome"] == "applied" and receipt["saved"] == "saved"
        assert receipt["textEdits"] == 5 and receipt["touched"] == ["app.py", "lib.py"]
        assert "def salute(" in (folder / "lib.py").read_text()
        assert (folder / "app.py").read_text().count("salute(") == 2
        # pyright got both new texts: had it kept the old lib.py, app.py's import would be an error now.
        diagnostics = receipt["diagnostics"]
        assert diagnostics["status"] == "current", diagnostics
        assert diagnostics["counts"] == {"introduced": 0, "resolved": 0, "persisting": 1}, diagnostics

        replay = await coordinator.approve(transaction_id, True, SLOW)
        assert not replay["ok"] and replay["transactionStatus"] == "used", replay
        assert "already applied" in replay["error"] and replay["receipt"]["outcome"] == "rejected"

        # A line inserted above the existing error shifts it: persisting, not introduced.
        shifted = await coordinator.mutate(
            "code_insert", [app], _edit(pool, app, lambda u: _insert(u, 0, "# top\n")), AUTO
        )
        assert shifted["ok"] and shifted["applied"], shifted
        assert shifted["receipt"]["diagnostics"]["counts"] == {
            "introduced": 0,
            "resolved": 0,
            "persisting": 1,
        }
        # Fixing the error resolves it; a new one is introduced, with where and what.
        old = '    value: int = salute("again")'
        fixed = await coordinator.mutate(
            "code_replace",
            [app],
            _edit(pool, app, lambda u: _replace_line(u, 7, old, '    value: str = salute("again")')),
            AUTO,
        )
        delta = fixed["receipt"]["diagnostics"]
        assert delta["counts"] == {"introduced": 0, "resolved": 1, "persisting": 0}, delta
        assert delta["resolved"][0]["path"] == "app.py" and delta["resolved"][0]["severity"] == "error"
        broken = await coordinator.mutate(
            "code_insert", [app], _edit(pool, app, lambda u: _insert(u, 8, '    count: int = "many"\n')), AUTO
        )
        delta = broken["receipt"]["diagnostics"]
        assert delta["counts"]["introduced"] == 1 and delta["introduced"][0]["line"] == 9, delta
        assert (folder / "app.py").read_text().splitlines()[8] == '    count: int = "many"'


def test_rename_parked_then_approved_with_post_edit_diagnostics(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = write(tmp_path / "py", PYTHON)
    asyncio.run(_park_approve_and_diagnostics(folder, real_servers, tag))


async def _refusals(folder: Path, real_servers: RealServers, tag: str) -> None:
    clock = Clock()
    store = TransactionStore(clock=clock)
    async with _session(folder, real_servers, tag, store) as (workspace, pool, coordinator):
        lib = workspace.resolve("lib.py")
        original = (folder / "lib.py").read_text()
        # A file edited on disk after the preview: a conflict at approval, nothing written.
        parked = await coordinator.mutate("code_rename", [lib], _rename(pool, lib, 10, 4, "salute"), SLOW)
        assert parked["needsApproval"], parked
        (folder / "lib.py").write_text(original + "\n# edited by someone else\n")
        conflict = await coordinator.approve(parked["transactionId"], True, SLOW)
        assert not conflict["ok"] and conflict["status"] == "conflict", conflict
        assert conflict["conflicts"] == ["lib.py"] and "changed since the preview" in conflict["error"]
        assert conflict["receipt"]["outcome"] == "conflict" and conflict["receipt"]["saved"] == "not-saved"
        assert "salute" not in (folder / "lib.py").read_text() + (folder / "app.py").read_text()
        again = await coordinator.approve(parked["transactionId"], True, SLOW)
        assert again["transactionStatus"] == "used" and "conflict" in again["error"]

        # An expired transaction applies nothing.
        parked = await coordinator.mutate("code_rename", [lib], _rename(pool, lib, 10, 4, "salute"), SLOW)
        clock.now += 301
        expired = await coordinator.approve(parked["transactionId"], True, SLOW)
        assert not expired["ok"] and expired["transactionStatus"] == "expired", expired
        assert "receipt" in expired and "salute" not in (folder / "lib.py").read_text()

        # Declining discards.
        parked = await coordinator.mutate("code_rename", [lib], _rename(pool, lib, 10, 4, "salute"), SLOW)
        declined = await coordinator.approve(parked["transactionId"], False, SLOW)
        assert declined["ok"] and declined["declined"] and declined["receipt"]["outcome"] == "declined"
        assert "salute" not in (folder / "lib.py").read_text()

        # An edit pointing outside the workspace is refused whole, with a receipt.
        outside = folder.parent / "outside.py"
        outside.write_text("x = 1\n")

        def escaping(uri: str) -> dict[str, Any]:
            edit = _insert(uri, 0, "# ok\n")
            edit["changes"][outside.as_uri()] = [
                {
                    "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                    "newText": "evil\n",
                }
            ]
            return edit

        refused = await coordinator.mutate("code_insert", [lib], _edit(pool, lib, escaping), AUTO)
        assert not refused["ok"] and "outside the workspace" in refused["error"], refused
        assert refused["receipt"]["outcome"] == "rejected"
        assert outside.read_text() == "x = 1\n" and not (folder / "lib.py").read_text().startswith("# ok")

        # autoApprove applies a plain text edit at once, without a transaction.
        auto = await coordinator.mutate("code_rename", [lib], _rename(pool, lib, 10, 4, "hello"), AUTO)
        assert auto["ok"] and auto["applied"] and "transactionId" not in auto, auto
        assert "def hello(" in (folder / "lib.py").read_text()

        # A module renamed (a resource operation) with its import updated: pyright is told the file moved
        # (didChangeWatchedFiles), so the new import resolves and nothing is introduced.
        app = workspace.resolve("app.py")
        first = (folder / "app.py").read_text().splitlines()[0]
        assert first == "from lib import Dog, hello", first
        zoo = (folder / "zoo.py").as_uri()

        def move(uri: str) -> dict[str, Any]:
            span = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": len(first)}}
            return {
                "documentChanges": [
                    {"kind": "rename", "oldUri": lib.uri, "newUri": zoo},
                    {
                        "textDocument": {"uri": app.uri, "version": None},
                        "edits": [{"range": span, "newText": "from zoo import Dog, hello"}],
                    },
                ]
            }

        parked = await coordinator.mutate("code_actions", [app], _edit(pool, app, move), AUTO)
        assert parked["needsApproval"], parked  # a resource operation is never auto-approved
        moved = await coordinator.approve(parked["transactionId"], True, SLOW)
        assert moved["ok"], moved
        assert moved["receipt"]["touched"] == ["app.py", "lib.py", "zoo.py"], moved["receipt"]
        delta = moved["receipt"]["diagnostics"]
        assert delta["counts"]["introduced"] == 0, delta
        assert not (folder / "lib.py").exists() and "def hello(" in (folder / "zoo.py").read_text()
        lib = workspace.resolve("zoo.py")

        # A server's workspace/applyEdit outside an approved command is refused.
        server = await pool.server_for(lib)
        answer = await coordinator.apply_server_edit(server, _insert(lib.uri, 0, "# sneaky\n"))
        assert answer["applied"] is False and "approved" in answer["failureReason"]
        assert "sneaky" not in (folder / "zoo.py").read_text()


def test_conflict_expiry_decline_and_outside_edits(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = write(tmp_path / "py", PYTHON)
    asyncio.run(_refusals(folder, real_servers, tag))


async def _elicit_and_commands(folder: Path, real_servers: RealServers, tag: str) -> None:
    async with _session(folder, real_servers, tag) as (workspace, pool, coordinator):
        lib, app = workspace.resolve("lib.py"), workspace.resolve("app.py")
        reads = Dispatcher(LspReadTools(pool))
        asked: list[tuple[str, dict[str, Any]]] = []
        release = asyncio.Event()

        async def slow_yes(message: str, view: Any) -> bool | None:
            asked.append((message, dict(view)))
            await release.wait()
            return True

        ctx = IntelContext(deadline=90, elicit=slow_yes)
        mutation = asyncio.ensure_future(
            coordinator.mutate("code_rename", [lib], _rename(pool, lib, 10, 4, "salute"), ctx)
        )
        while not asked:
            await asyncio.sleep(0.05)
        # B7.2: a read tool answers while the mutation waits for its approval.
        hover = await asyncio.wait_for(
            reads.dispatch("code_hover", {"target": {"path": "lib.py", "symbol": "greet"}}, SLOW), 60
        )
        assert hover["ok"] and "greet" in hover["text"], hover
        assert not mutation.done()
        release.set()
        result = await mutation
        assert result["ok"] and result["applied"] and "transactionId" not in result, result
        assert "2 files" in asked[0][0] and "+def salute(" in asked[0][1]["diff"]

        async def no(message: str, view: Any) -> bool | None:
            return False

        declined = await coordinator.mutate(
            "code_insert",
            [app],
            _edit(pool, app, lambda u: _insert(u, 0, "# no\n")),
            IntelContext(deadline=90, elicit=no),
        )
        assert declined["declined"] and not (folder / "app.py").read_text().startswith("# no")

        # A command whose edit comes back as the server's workspace/applyEdit (pyright's organize
        # imports): it needs explicit approval, then goes through the same applier and widens the receipt.
        (folder / "app.py").write_text("import sys\nimport os\n\nprint(os.sep, sys.argv)\n")
        command = {"title": "Organize Imports", "command": "pyright.organizeimports", "arguments": [app.uri]}

        async def organize(deadline: Deadline) -> ProducedEdit:
            server = await pool.server_for(app, deadline)
            await server.refresh()
            await server.sync(app)
            return ProducedEdit({}, commands=(command,), incomplete_diff=True)

        parked = await coordinator.mutate("code_actions", [app], organize, AUTO)
        assert parked["needsApproval"], parked  # autoApprove never covers a command (B7.4)
        assert any("command" in reason for reason in parked["approvalReasons"])
        done = await coordinator.approve(parked["transactionId"], True, SLOW)
        assert done["ok"], done
        assert (folder / "app.py").read_text().startswith("import os\nimport sys\n"), done
        outcome = done["receipt"]["commands"][0]
        assert outcome["status"] == "ok" and outcome["serverEdits"] >= 1, done["receipt"]
        assert done["receipt"]["touched"] == ["app.py"] and done["receipt"]["textEdits"] >= 1


def test_elicitation_concurrent_reads_and_a_command_edit(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = write(tmp_path / "py", PYTHON)
    asyncio.run(_elicit_and_commands(folder, real_servers, tag))
