"""Trial finding B: post-edit diagnostics on typescript-language-server settle fast and say how they did.

typescript-language-server publishes diagnostics without a version, and never publishes an empty set
again (``FileDiagnostics.update`` returns early when a kind was empty and stays empty). An edit that left
a clean file clean was followed by no publication at all: the receipt waited PUBLISH_WAIT (5 s) for one
and ended ``stale``: every TypeScript approval took ~5 s. Then a file whose last publication was empty
and that got none since counted as ``quiet`` after a second of silence. Now (issue 20 item 2) the
post-edit diagnostics are asked of the TypeScript server itself (typescript-language-server's
``typescript.tsserverRequest``): the clean file is ``current`` at once, and an edit that does introduce an
error still reports it.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.reading.tools import PUBLISH_WAIT
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.dispatch import IntelContext
from stream_testkit import TAG_VARIABLE, RealServers
from ts_shapes import write_shapes

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]


async def _edits(folder: Path, real_servers: RealServers, tag: str) -> list[tuple[dict[str, Any], float]]:
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    ctx = IntelContext(deadline=90, auto_approve=True)
    results: list[tuple[dict[str, Any], float]] = []
    async with IntelService.open([folder], env=env) as service:
        warm = await service.dispatch("code_diagnostics", {"path": "src/registry.ts"}, ctx)
        assert warm["ok"] and warm["counts"]["error"] == 0, warm
        calls: list[tuple[str, dict[str, Any]]] = [
            ("code_rename", {"target": {"path": "src/rect.ts", "symbol": "Rect"}, "newName": "Box"}),
            (
                "code_insert",
                {
                    "target": {"path": "src/registry.ts", "symbol": "shapes"},
                    "position": "after",
                    "text": '\nexport const bad: number = "three";\n',
                },
            ),
        ]
        for tool, args in calls:
            started = time.monotonic()
            results.append((await service.dispatch(tool, args, ctx), time.monotonic() - started))
    return results


def test_an_unchanged_clean_file_is_current_at_once_and_a_new_error_too(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = tmp_path / "ts"
    write_shapes(folder)
    (renamed, rename_took), (inserted, _) = asyncio.run(_edits(folder, real_servers, tag))
    assert renamed["ok"] and renamed["applied"], renamed
    diagnostics = renamed["receipt"]["diagnostics"]
    # Before trial B: "stale" after waiting PUBLISH_WAIT (5 s) for a publication that never came; before
    # issue 20: "quiet" after a second of silence.
    assert diagnostics["status"] == "current", diagnostics
    assert diagnostics["counts"]["introduced"] == 0, diagnostics
    assert rename_took < PUBLISH_WAIT, rename_took
    # An edit that breaks a clean file is published (empty -> one error): seen, and current.
    assert inserted["ok"] and inserted["applied"], inserted
    after = inserted["receipt"]["diagnostics"]
    assert after["status"] == "current", after
    assert [e["path"] for e in after["introduced"]] == ["src/registry.ts"], after
    assert "not assignable" in after["introduced"][0]["message"], after
