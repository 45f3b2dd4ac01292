"""A file the agent creates next to files a server answered about reaches that server before the next query
(it is opened; didChangeWatchedFiles too where the server registered for it): real pyright and
typescript-language-server. A user trial created a module that imports and calls a function; the next
references call missed it until the workspace was re-activated (pyright), or for about 2 s (tsserver)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from intel_projects import PYTHON, TYPESCRIPT, write
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.dispatch import IntelContext
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]

SLOW = IntelContext(deadline=90)
#: language -> (project, the file with greet, the new module's path and text)
CASES = {
    "python": (
        PYTHON,
        "lib.py",
        "late.py",
        "from lib import greet\n\n\ndef late() -> str:\n    return greet('x')\n",
    ),
    "typescript": (
        TYPESCRIPT,
        "src/lib.ts",
        "src/late.ts",
        'import { greet } from "./lib";\n\nexport function late(): string {\n  return greet("x");\n}\n',
    ),
}


def _paths(result: dict[str, Any]) -> set[str]:
    return {group["path"] for group in result["files"]}


async def _created_then_asked(
    folder: Path, language: str, real_servers: RealServers, tag: str
) -> tuple[set[str], set[str], set[str]]:
    _, lib, late, text = CASES[language]
    references = {"target": {"path": lib, "symbol": "greet"}, "kind": "references"}
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    async with IntelService.open([folder], env=env) as service:
        before = await service.dispatch("code_navigate", references, SLOW)
        assert before["ok"], before
        # the agent writes a new module with plain file tools, next to files the answer pointed at
        (folder / late).write_text(text)
        after = await service.dispatch("code_navigate", references, SLOW)
        assert after["ok"], after
        (folder / late).unlink()
        gone = await service.dispatch("code_navigate", references, SLOW)
        assert gone["ok"], gone
        return _paths(before), _paths(after), _paths(gone)


@pytest.mark.parametrize("language", sorted(CASES))
def test_a_created_module_is_in_the_next_answer_and_a_deleted_one_leaves_it(
    tmp_path: Path, real_servers: RealServers, tag: str, language: str
) -> None:
    project, _, late, _ = CASES[language]
    folder = write(tmp_path / language, project)
    before, after, gone = asyncio.run(_created_then_asked(folder, language, real_servers, tag))
    assert late not in before
    assert after == before | {late}, after
    assert gone == before, gone
