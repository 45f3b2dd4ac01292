"""A file the agent creates next to files a server answered about reaches that server before the next query
(didChangeWatchedFiles, as the server registered for it): real pyright. A user trial created a module that
imports and calls a function; the next references call missed it until the workspace was re-activated."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from intel_projects import PYTHON, write
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.dispatch import IntelContext
from kandev_lsp.intel.service import IntelService
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]

SLOW = IntelContext(deadline=90)
REFERENCES = {"target": {"path": "lib.py", "symbol": "greet"}, "kind": "references"}


def _paths(result: dict[str, Any]) -> set[str]:
    return {group["path"] for group in result["files"]}


async def _created_then_asked(
    folder: Path, real_servers: RealServers, tag: str
) -> tuple[set[str], set[str], set[str]]:
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    async with IntelService.open([folder], env=env) as service:
        before = await service.dispatch("code_navigate", REFERENCES, SLOW)
        assert before["ok"], before
        # the agent writes a new module with plain file tools, next to files the answer pointed at
        (folder / "late.py").write_text(
            "from lib import greet\n\n\ndef late() -> str:\n    return greet('x')\n"
        )
        after = await service.dispatch("code_navigate", REFERENCES, SLOW)
        assert after["ok"], after
        (folder / "late.py").unlink()
        gone = await service.dispatch("code_navigate", REFERENCES, SLOW)
        assert gone["ok"], gone
        return _paths(before), _paths(after), _paths(gone)


def test_a_created_module_is_in_the_next_answer_and_a_deleted_one_leaves_it(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = write(tmp_path / "py", PYTHON)
    before, after, gone = asyncio.run(_created_then_asked(folder, real_servers, tag))
    assert "late.py" not in before
    assert after == before | {"late.py"}, after
    assert gone == before, gone
