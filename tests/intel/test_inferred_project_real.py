"""A TypeScript or JavaScript folder without a tsconfig.json (an npm package as published, a script
folder) is served: real typescript-language-server. A user trial on zod 4.6.7's package (it ships a
package.json and no tsconfig) and on a two-file folder got ``unavailable`` ("waiting for the server's
first work-done progress to end; no progress reported") on every call, for as long as it asked: tsserver
reports a project's load only for a configured project, so the server never said it was ready. Its
first diagnostics say so instead (they come from the semantic server, once its project is loaded).
Such an inferred project holds only the open files and what they import, so a search for uses says
that it covered no more (references 92 in 2 files, then 114 in 3 once another file was open, on zod)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.dispatch import IntelContext
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]

FILES = {
    "package.json": '{"name": "inferred", "version": "1.0.0"}\n',
    "lib.ts": "export function inc(n: number): number {\n  return n + 1;\n}\n",
    "use.ts": 'import { inc } from "./lib";\n\nexport const two: string = inc(1);\n',
}


async def _asked(
    folder: Path, real_servers: RealServers, tag: str
) -> tuple[dict[str, Any], dict[str, Any], float]:
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    async with IntelService.open([folder], env=env) as service:
        started = time.monotonic()
        diagnostics: dict[str, Any] = {}
        while time.monotonic() - started < 60:  # each call's deadline is short: ask again, as agents do
            asked = IntelContext(deadline=9)
            diagnostics = await service.dispatch("code_diagnostics", {"path": "use.ts"}, asked)
            if diagnostics.get("status") != "unavailable":
                break
        elapsed = time.monotonic() - started
        references = await service.dispatch(
            "code_navigate",
            {"target": {"path": "lib.ts", "symbol": "inc"}, "kind": "references"},
            IntelContext(deadline=30),
        )
        return diagnostics, references, elapsed


def test_a_folder_without_a_tsconfig_is_served(tmp_path: Path, real_servers: RealServers, tag: str) -> None:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    diagnostics, references, elapsed = asyncio.run(_asked(tmp_path, real_servers, tag))
    assert diagnostics["ok"], diagnostics
    assert diagnostics["status"] == "current", diagnostics
    errors = [(p["line"], p["code"]) for p in diagnostics["problems"] if p["severity"] == "error"]
    assert errors == [(3, 2322)], diagnostics
    assert elapsed < 30, elapsed  # ready with the project's load, not after a readiness timeout
    assert references["ok"], references
    assert {group["path"] for group in references["files"]} == {"lib.ts", "use.ts"}, references
    assert references["inferredProject"] is True, references
    assert "add a tsconfig.json" in references["notice"], references
    assert references["summary"].endswith("· inferred project: open files and their imports only"), references


def test_a_search_that_skips_a_language_keeps_the_inferred_projects_advice(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    """``code_symbols`` with a query, in a folder with no tsconfig.json and a Rust file no server here
    answers for: the answer names the language not searched *and* keeps the advice to add a
    tsconfig.json (the "not searched" notice used to replace it, leaving ``inferredProject`` unexplained)."""
    for name, text in {**FILES, "main.rs": "fn main() {}\n"}.items():
        (tmp_path / name).write_text(text)

    async def asked() -> dict[str, Any]:
        env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
        async with IntelService.open([tmp_path], env=env) as service:
            started = time.monotonic()
            while time.monotonic() - started < 60:  # until the project is loaded, as the test above
                diagnostics = await service.dispatch(
                    "code_diagnostics", {"path": "use.ts"}, IntelContext(deadline=9)
                )
                if diagnostics.get("status") != "unavailable":
                    break
            return await service.dispatch("code_symbols", {"query": "inc"}, IntelContext(deadline=30))

    symbols = asyncio.run(asked())
    assert symbols["ok"] and symbols["inferredProject"] is True, symbols
    assert [entry["language"] for entry in symbols["notSearched"]] == ["rust"], symbols
    assert "add a tsconfig.json" in symbols["notice"] and "not searched: rust" in symbols["notice"], symbols
