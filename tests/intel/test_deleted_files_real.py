"""A file deleted on disk between two calls has no diagnostics left in a workspace read (real pyright).

Before the fix: an agent that read one file's diagnostics (one error), deleted the file and asked
``code_diagnostics {}`` got "1 error, 0 warnings" for the file that no longer exists, with its problem
listed (state ``stale``), until pyright published again for the closed file after a later call. The pool
closed the deleted document before the read but kept the server's last publication for it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from intel_projects import write
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.dispatch import IntelContext
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]

#: A loaded shared machine: a call may wait this long for the server's word.
SLOW = IntelContext(deadline=60)

PYTHON = {
    "pyproject.toml": '[project]\nname = "gone"\nversion = "0"\n',
    "keep.py": "kept: int = 'one'\n",
    "doomed.py": "lost: int = 'two'\n",
}


async def _deleted(folder: Path, real_servers: RealServers, tag: str) -> dict[str, Any]:
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    async with IntelService.open([folder], env=env) as service:
        for path in ("keep.py", "doomed.py"):
            read = await service.dispatch("code_diagnostics", {"path": path}, SLOW)
            assert (read["status"], read["counts"]["error"]) == ("current", 1), read
        (folder / "doomed.py").unlink()
        return await service.dispatch("code_diagnostics", {}, SLOW)


def test_a_deleted_file_has_no_diagnostics_left_in_a_workspace_read(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = write(tmp_path / "py", PYTHON).resolve()
    result = asyncio.run(_deleted(folder, real_servers, tag))
    assert result["ok"], result
    assert sorted({p["path"] for p in result["problems"]}) == ["keep.py"], result
    assert [row["path"] for row in result["documents"] if row["path"] == "doomed.py"] == [], result
    assert result["summary"].startswith("1 error, 0 warnings"), result


async def _swapped(folder: Path, outside: Path, real_servers: RealServers, tag: str) -> list[dict[str, Any]]:
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    async with IntelService.open([folder], env=env) as service:
        opened = await service.dispatch("code_symbols", {"path": "use.py"}, SLOW)
        assert [s["name"] for s in opened["symbols"]] == ["visible"], opened
        use = folder / "use.py"
        use.unlink()
        use.symlink_to(outside / "secret.py")
        during = await service.dispatch("code_diagnostics", {}, SLOW)  # the re-sync before it
        use.unlink()  # the link goes: nothing at the path, whose lexical place is inside the workspace
        after = await service.dispatch("code_symbols", {"query": "hidden"}, SLOW)
        return [during, after]


def test_an_open_file_swapped_for_a_link_out_of_the_workspace_is_never_read_through_it(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    """B8.11. Before the fix: the re-sync before the next call read the open use.py through the link and
    sent the outside file's text to pyright as use.py's (didChange), so once the link was gone
    code_symbols {query: "hidden"} listed the outside file's function as use.py's (a round-4 trial; the
    path itself was refused, the query was not)."""
    folder = write(
        tmp_path / "py", {"pyproject.toml": PYTHON["pyproject.toml"], "use.py": "def visible():\n    pass\n"}
    )
    outside = write(tmp_path / "outside", {"secret.py": "def hidden():\n    pass\n\nleaked: int = 'x'\n"})
    during, after = asyncio.run(_swapped(folder.resolve(), outside.resolve(), real_servers, tag))
    assert during["ok"] and during["problems"] == [], during
    assert after["ok"] and after["symbols"] == [], after


async def _named_in_latin1(folder: Path, real_servers: RealServers, tag: str) -> list[dict[str, Any]]:
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    async with IntelService.open([folder], env=env) as service:
        first = await service.dispatch("code_diagnostics", {"path": "keep.py"}, SLOW)
        assert first["counts"]["error"] == 1, first
        (folder / os.fsdecode(b"caf\xe9.py")).write_text("y = 1\n")  # appears in the watched tree
        after = await service.dispatch("code_diagnostics", {"path": "keep.py"}, SLOW)
        symbols = await service.dispatch("code_symbols", {"query": "y"}, SLOW)
        return [after, symbols]


def test_a_file_named_in_bytes_that_are_not_utf8_ends_no_call(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    """Before the fix: once a file whose name is not UTF-8 appeared in the project tree, the next call
    (any tool) failed with UnicodeEncodeError: the re-sync made the file's URI to announce it."""
    folder = write(
        tmp_path / "py", {"pyproject.toml": PYTHON["pyproject.toml"], "keep.py": PYTHON["keep.py"]}
    )
    after, symbols = asyncio.run(_named_in_latin1(folder.resolve(), real_servers, tag))
    assert after["ok"] and after["counts"]["error"] == 1, after
    assert symbols["ok"], symbols
