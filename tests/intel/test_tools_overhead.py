"""What a tool call costs beyond its server request (issue 9 overhead goal), on real pyright: requests a
repeated call no longer makes, and the re-sync rules (B8.12) that still make them when the file changed."""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from intel_projects import PYTHON, write
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.runtime.pool import ManagedServer
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.dispatch import IntelContext
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]

SLOW = IntelContext(deadline=90)
SYMBOLS = "textDocument/documentSymbol"
CALLERS = {"target": {"path": "lib.py", "symbol": "greet"}, "kind": "callers"}
MODULES = 12


def _service(folder: Path, real_servers: RealServers, tag: str) -> IntelService:
    """The tools' service on ``folder`` (``async with`` it), with the suite's pyright and this test's tag."""
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    return IntelService.open([folder], env=env)


def _project_with_callers(folder: Path) -> Path:
    """The Python project plus ``MODULES`` modules that each import ``greet`` and call it twice."""
    files = dict(PYTHON)
    for n in range(MODULES):
        files[f"mod{n}.py"] = (
            f"from lib import greet\n\n\ndef use{n}(x: str) -> str:\n"
            "    first = greet(x)\n    return first + greet(x, True)\n"
        )
    return write(folder, files)


def _count_requests(server: ManagedServer) -> Counter[str]:
    """Count the requests the tools send to ``server`` from now on, by method."""
    sent: Counter[str] = Counter()
    request = server.request

    async def counted(method: str, params: Any, timeout: float) -> Any:
        sent[method] += 1
        return await request(method, params, timeout)

    server.request = counted  # type: ignore[method-assign]
    return sent


async def _symbol_tree_checks(folder: Path, real_servers: RealServers, tag: str) -> None:
    async with _service(folder, real_servers, tag) as service:
        first = await service.dispatch("code_hierarchy", CALLERS, SLOW)
        assert first["ok"] and first["target"]["line"] == 11, first
        sent = _count_requests(service.pool.servers[0])
        again = [await service.dispatch("code_hierarchy", CALLERS, SLOW) for _ in range(3)]
        assert [a["items"] for a in again] == [first["items"]] * 3
        outline = await service.dispatch("code_symbols", {"path": "lib.py"}, SLOW)
        assert "greet" in [s["name"] for s in outline["symbols"]], outline
        # The unchanged document's symbols were asked once, by the first call, for all five calls.
        assert sent[SYMBOLS] == 0 and sent["textDocument/prepareCallHierarchy"] == 3, sent
        # Touched without a change (same text): still the same document, nothing asked.
        lib = folder / "lib.py"
        lib.write_text(lib.read_text())
        await service.dispatch("code_hierarchy", CALLERS, SLOW)
        assert sent[SYMBOLS] == 0, sent
        # The agent edits the file on disk: re-synced, and its symbols are asked again (once).
        lib.write_text("\n\n" + lib.read_text())
        moved = [await service.dispatch("code_hierarchy", CALLERS, SLOW) for _ in range(2)]
        assert [m["target"]["line"] for m in moved] == [13, 13], moved
        assert sent[SYMBOLS] == 1, sent
        # A symbol target in another file has its own tree.
        main = await service.dispatch(
            "code_navigate", {"target": {"path": "app.py", "symbol": "main"}, "kind": "definition"}, SLOW
        )
        assert main["ok"], main
        assert sent[SYMBOLS] == 2, sent


def test_a_documents_symbols_are_asked_once_per_text(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    asyncio.run(_symbol_tree_checks(write(tmp_path / "py", PYTHON), real_servers, tag))


async def _stat_checks(
    folder: Path, real_servers: RealServers, tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kandev_lsp.intel.runtime import pool as runtime

    references = {"target": {"path": "lib.py", "line": 11, "matchText": "greet"}, "kind": "references"}
    stats: list[str] = []
    stamp = runtime._stamp

    def counted(path: str) -> tuple[int, int] | None:
        stats.append(path)
        return stamp(path)

    async with _service(folder, real_servers, tag) as service:
        first = await service.dispatch("code_navigate", references, SLOW)
        assert first["totalFound"] == 5 + 3 * MODULES, first  # an import and two calls each
        await service.dispatch("code_navigate", references, SLOW)  # the seen files are now watched
        await service.dispatch("code_navigate", references, SLOW)  # and vouched for by the watch
        monkeypatch.setattr(runtime, "_stamp", counted)
        watch = service.pool.servers[0].disk_watch
        asked: list[str] = []
        unchanged = watch.unchanged

        def counted_unchanged(path: str, root: str) -> bool:
            asked.append(path)
            return unchanged(path, root)

        monkeypatch.setattr(watch, "unchanged", counted_unchanged)
        for _ in range(3):
            again = await service.dispatch("code_navigate", references, SLOW)
            assert again["files"] == first["files"]
        # Before: one stat per open document and per file seen in an answer (2 + MODULES + 1) per call.
        assert len(stats) <= 3, f"{len(stats)} stats in 3 warm calls"
        # And the re-sync no longer even asks the watch about each of them (O(changed files)).
        assert len(asked) <= 3, f"the watch was asked about {len(asked)} files in 3 warm calls"
        # The agent edits a seen file with plain file tools: announced before the next query, which
        # answers about the new text (greet's calls two lines further down).
        edited = folder / "mod3.py"
        edited.write_text("\n\n" + edited.read_text())
        stats.clear()
        moved = await service.dispatch("code_navigate", references, SLOW)
        assert any(p.endswith("mod3.py") for p in stats), stats  # the one changed file
        lines = {(g["path"], loc["line"]) for g in moved["files"] for loc in g["locations"]}
        assert ("mod3.py", 7) in lines and ("mod3.py", 5) not in lines, moved


def test_a_warm_call_stats_only_the_files_that_changed(
    tmp_path: Path, real_servers: RealServers, tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _project_with_callers(tmp_path / "py")
    asyncio.run(_stat_checks(folder, real_servers, tag, monkeypatch))


async def _caller_file_checks(
    folder: Path, real_servers: RealServers, tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module_stats: list[str] = []
    stat = os.stat

    def counted(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if os.path.basename(str(path)).startswith("mod"):
            module_stats.append(str(path))
        return stat(path, *args, **kwargs)

    async with _service(folder, real_servers, tag) as service:
        first = await service.dispatch("code_hierarchy", CALLERS, SLOW)
        assert first["ok"] and len(first["items"]) == 2 + MODULES, first  # helper, main, use0..use11
        await service.dispatch("code_hierarchy", CALLERS, SLOW)  # the callers' files are now watched
        monkeypatch.setattr(os, "stat", counted)
        for _ in range(3):
            again = await service.dispatch("code_hierarchy", CALLERS, SLOW)
            assert again["items"] == first["items"]
        # Before: one stat per caller's file per call, to read its text for the call sites.
        assert module_stats == [], module_stats
        # A caller's file edited on disk is announced before the next query (B8.12): its call sites move.
        edited = folder / "mod3.py"
        edited.write_text("\n\n" + edited.read_text())
        moved = await service.dispatch("code_hierarchy", CALLERS, SLOW)
        sites = {i["name"]: [s["line"] for s in i["callSites"]] for i in moved["items"]}
        assert sites["use3"] == [7, 8] and sites["use4"] == [5, 6], sites


def test_a_callers_files_are_watched_like_an_answers_files(
    tmp_path: Path, real_servers: RealServers, tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _project_with_callers(tmp_path / "py")
    asyncio.run(_caller_file_checks(folder, real_servers, tag, monkeypatch))


async def _target_memo_checks(folder: Path, outside: Path, real_servers: RealServers, tag: str) -> None:
    definition = {"target": {"path": "mod0.py", "line": 5, "matchText": "greet"}, "kind": "definition"}
    async with _service(folder, real_servers, tag) as service:
        first = await service.dispatch("code_navigate", definition, SLOW)
        assert first["ok"] and first["files"][0]["path"] == "lib.py", first
        for _ in range(2):  # the document is watched, then checked while watched
            await service.dispatch("code_navigate", definition, SLOW)
        checks: list[str] = []
        resolve = service.workspace.resolve

        def counted(path: str, *args: Any, **kwargs: Any) -> Any:
            checks.append(path)
            return resolve(path, *args, **kwargs)

        service.workspace.resolve = counted  # type: ignore[method-assign]
        for _ in range(3):
            again = await service.dispatch("code_navigate", definition, SLOW)
            assert again["files"] == first["files"]
        # Before: a realpath, exists and isdir check, and the project root's markers, per call.
        assert checks == [], checks
        # The target swapped for a link out of the workspace: checked in full, and refused (B8.11).
        target = folder / "mod0.py"
        target.unlink()
        target.symlink_to(outside)
        refused = await service.dispatch("code_navigate", definition, SLOW)
        assert checks == ["mod0.py"] and not refused["ok"], refused
        assert "outside the workspace" in refused["error"], refused


def test_a_repeated_target_is_checked_again_only_when_its_path_changed(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = _project_with_callers(tmp_path / "py")
    outside = tmp_path / "secret.py"
    outside.write_text((folder / "mod0.py").read_text())
    asyncio.run(_target_memo_checks(folder, outside, real_servers, tag))


async def _hover_cancel_checks(folder: Path, real_servers: RealServers, tag: str) -> None:
    hover = {"target": {"path": "mod0.py", "line": 6, "matchText": "x"}}  # in greet(x, True): both asked
    async with _service(folder, real_servers, tag) as service:
        first = await service.dispatch("code_hover", hover, SLOW)
        assert first["ok"], first
        server = service.pool.servers[0]
        started: list[str] = []
        cancelled: list[str] = []
        both = asyncio.Event()

        async def hanging(method: str, params: Any, timeout: float) -> Any:  # fault injection
            started.append(method)
            if len(started) == 2:
                both.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(method)
                raise

        server.request = hanging  # type: ignore[method-assign]
        call = asyncio.ensure_future(service.dispatch("code_hover", hover, SLOW))
        await asyncio.wait_for(both.wait(), 30)
        assert sorted(started) == ["textDocument/hover", "textDocument/signatureHelp"], started
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.sleep(0)  # the signature help task's cancellation runs
        assert sorted(cancelled) == sorted(started), cancelled


def test_a_cancelled_hover_cancels_its_parallel_signature_help(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    """Hover asks signature help in a task of its own (issue 9): cancelling the call cancels both reads,
    as gather did; nothing is left asking the server."""
    asyncio.run(_hover_cancel_checks(_project_with_callers(tmp_path / "py"), real_servers, tag))
