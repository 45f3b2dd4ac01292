"""Trial finding C: a command-only code action on typescript-language-server ("Move to a new file").

The approval prompt said only ``code_actions: apply 0 edits in 0 files, then run 1 command(s) ...``: no
action, no file. After the accept the server had created ``src/Square.ts`` (it writes the empty file
itself, then sends ``workspace/applyEdit`` editing it), yet the receipt listed no resource operation and
the result said ``files: 0, edits: 0`` next to a summary of "5 edits in 3 files". Now the prompt names
the action (title, kind), its command (title, name) and the file, with singular/plural counts; the created
file is an observed resource operation (B6.23), and the result counts what the command's edits applied.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.edits.commit import disk_text
from kandev_lsp.intel.edits.coordinator import MutationCoordinator
from kandev_lsp.intel.edits.plan import plan_edit
from kandev_lsp.intel.edits.transactions import PendingMutation
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.dispatch import IntelContext
from stream_testkit import TAG_VARIABLE, RealServers
from ts_shapes import write_shapes


def test_the_question_names_the_action_its_command_and_file_in_singular_or_plural(tmp_path: Path) -> None:
    (tmp_path / "a.ts").write_text("let a = 1;\n")
    workspace = Workspace([tmp_path])
    file = workspace.resolve("a.ts")
    one = {
        "changes": {
            file.uri: [
                {
                    "range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 5}},
                    "newText": "b",
                }
            ]
        }
    }
    edit = PendingMutation("code_rename", plan_edit(one, workspace, disk_text), {}, {}, files=(file,))
    assert (
        MutationCoordinator._question("code_rename", edit) == "code_rename on a.ts: apply 1 edit in 1 file?"
    )
    command: dict[str, Any] = {"title": "Move to a new file", "command": "_typescript.applyRefactoring"}
    action = {"title": "Move to a new file", "kind": "refactor.move.newFile"}
    only = PendingMutation(
        "code_actions",
        plan_edit({}, workspace, disk_text),
        {},
        {},
        files=(file,),
        commands=(command,),
        result={"action": action},
        reasons=("runs 1 server command whose effects cannot be previewed",),
    )
    assert MutationCoordinator._question("code_actions", only) == (
        'code_actions "Move to a new file" (refactor.move.newFile) on a.ts: run 1 command: '
        '"Move to a new file" (_typescript.applyRefactoring), with no edit to preview '
        "(runs 1 server command whose effects cannot be previewed)?"
    )


async def _move_to_new_file(
    folder: Path, real_servers: RealServers, tag: str
) -> tuple[list[str], dict[str, Any]]:
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    asked: list[str] = []

    async def elicit(message: str, preview: Any) -> bool:
        asked.append(message)
        return True

    async with IntelService.open([folder], env=env) as service:
        ctx = IntelContext(deadline=90, elicit=elicit)
        listed = await service.dispatch(
            "code_actions", {"path": "src/rect.ts", "line": 13, "only": "refactor.move"}, ctx
        )
        assert listed["ok"], listed
        move = [a for a in listed["actions"] if a["title"] == "Move to a new file"]
        assert move and move[0]["hasCommand"] and not move[0]["hasEdit"], listed
        applied = await service.dispatch(
            "code_actions", {"path": "src/rect.ts", "line": 13, "apply": move[0]["actionId"]}, ctx
        )
        return asked, applied


@pytest.mark.real_server
@pytest.mark.network_registry
@pytest.mark.timeout(300)
def test_move_to_a_new_file_is_named_in_the_prompt_and_counted_in_the_receipt(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = tmp_path / "ts"
    write_shapes(folder)
    asked, applied = asyncio.run(_move_to_new_file(folder, real_servers, tag))
    assert (folder / "src" / "Square.ts").is_file()
    assert len(asked) == 1, asked
    assert asked[0].startswith(
        'code_actions "Move to a new file" (refactor.move.newFile) on src/rect.ts: run 1 command: '
        '"Move to a new file" ('
    ), asked
    assert "edits in" not in asked[0] and "command(s)" not in asked[0], asked
    assert applied["ok"] and applied["applied"], applied
    receipt = applied["receipt"]
    created = [op for op in receipt["resourceOperations"] if op["kind"] == "create"]
    assert created == [{"kind": "create", "path": "src/Square.ts", "exact": False, "observed": True}], receipt
    assert applied["edits"] == receipt["textEdits"] > 0, applied
    assert applied["files"] == 3 == len(receipt["touched"]), applied
    assert applied["summary"] == f"applied {applied['edits']} edits in 3 files", applied["summary"]
