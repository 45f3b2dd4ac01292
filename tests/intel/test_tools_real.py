"""The six read tools wired to real servers (pyright, typescript-language-server) through the pool."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from intel_projects import PYTHON, TYPESCRIPT, write
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.dispatch import IntelContext
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]

#: A loaded shared machine: cold servers get longer than the tools' 9 s default.
SLOW = IntelContext(deadline=90)


def _service(folders: list[Path], real_servers: RealServers, tag: str, **kw: Any) -> IntelService:
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    return IntelService.open(folders, env=env, **kw)


def _lines(result: dict[str, Any]) -> list[tuple[str, int]]:
    return [(group["path"], loc["line"]) for group in result["files"] for loc in group["locations"]]


async def _python_checks(folder: Path, real_servers: RealServers, tag: str) -> None:
    async with _service([folder], real_servers, tag) as service:
        call = service.dispatch
        outline = await call("code_symbols", {"path": "lib.py"}, SLOW)
        assert outline["ok"], outline
        names = [s["name"] for s in outline["symbols"]]
        assert names[:2] == ["Animal", "Dog"] and "greet" in names, outline
        refs = await call(
            "code_navigate", {"target": {"path": "lib.py", "symbol": "greet"}, "kind": "references"}, SLOW
        )
        assert refs["ok"], refs
        assert set(_lines(refs)) == {
            ("lib.py", 11),
            ("lib.py", 17),
            ("app.py", 1),
            ("app.py", 5),
            ("app.py", 7),
        }
        assert refs["summary"] == "5 references · 2 files", refs["summary"]
        assert "notice" not in refs and "searchedProject" not in refs  # the one project is the workspace
        assert refs["provider"]["status"] == "ok"
        definition = await call(
            "code_navigate",
            {
                "target": {"path": "app.py", "line": 5, "matchText": "greet"},
                "kind": "definition",
                "includeBody": True,
            },
            SLOW,
        )
        assert _lines(definition) == [("lib.py", 11)], definition
        body = definition["files"][0]["locations"][0]["body"]
        assert body.startswith("def greet(") and "return" in body, body
        ambiguous = await call("code_hover", {"target": {"path": "lib.py", "symbol": "speak"}}, SLOW)
        assert not ambiguous["ok"] and ambiguous["ambiguous"] and len(ambiguous["candidates"]) == 2
        hover = await call("code_hover", {"target": {"path": "lib.py", "symbol": "Dog.speak"}}, SLOW)
        assert hover["ok"] and "speak" in hover["text"] and "str" in hover["text"], hover
        in_call = await call(
            "code_hover", {"target": {"path": "app.py", "line": 5, "matchText": '"world"'}}, SLOW
        )
        assert in_call["ok"] and in_call.get("activeParameter", "").startswith("name"), in_call
        callers = await call(
            "code_hierarchy",
            {"target": {"path": "lib.py", "symbol": "greet"}, "kind": "callers", "depth": 2},
            SLOW,
        )
        assert callers["ok"], callers
        assert {item["name"] for item in callers["items"]} == {"helper", "main"}, callers
        assert all(item["callSites"] for item in callers["items"])
        diagnostics = await call("code_diagnostics", {"path": "app.py"}, SLOW)
        assert diagnostics["ok"] and diagnostics["status"] == "current", diagnostics
        assert diagnostics["counts"]["error"] == 1 and diagnostics["problems"][0]["line"] == 7, diagnostics
        workspace = await call("code_symbols", {"query": "greet"}, SLOW)
        assert workspace["ok"] and workspace["symbols"][0]["name"] == "greet", workspace
        assert workspace["symbols"][0]["path"] == "lib.py"
        # The agent edits a file with plain file tools: the next query sees the new text.
        app = folder / "app.py"
        app.write_text(
            app.read_text().replace('    value: int = greet("again")\n', "    value: str = greet('again')\n")
        )
        fixed = await call("code_diagnostics", {"path": "app.py"}, SLOW)
        assert fixed["ok"] and fixed["counts"]["error"] == 0, fixed
        lib = folder / "lib.py"
        lib.write_text("\n\n" + lib.read_text())  # greet moves down two lines
        moved = await call(
            "code_navigate",
            {"target": {"path": "app.py", "line": 5, "matchText": "greet"}, "kind": "definition"},
            SLOW,
        )
        assert _lines(moved) == [("lib.py", 13)], moved
        # Path escapes fail closed.
        outside = await call("code_symbols", {"path": "../outside.py"}, SLOW)
        assert not outside["ok"] and "leaves the workspace" in outside["error"]
        (folder / "link.py").symlink_to(folder.parent / "secret.py")
        (folder.parent / "secret.py").write_text("x = 1\n")
        linked = await call("code_symbols", {"path": "link.py"}, SLOW)
        assert not linked["ok"] and "symbolic link" in linked["error"], linked
        hints = await call("code_inlay_hints", {"path": "app.py"}, SLOW)
        assert hints["ok"], hints


def test_python_tools_on_pyright(tmp_path: Path, real_servers: RealServers, tag: str) -> None:
    folder = write(tmp_path / "py", PYTHON)
    asyncio.run(_python_checks(folder, real_servers, tag))


async def _typescript_checks(folder: Path, real_servers: RealServers, tag: str) -> None:
    async with _service([folder], real_servers, tag) as service:
        call = service.dispatch
        # The first query of a cold server gives the complete answer (no syntax-only tsserver).
        refs = await call(
            "code_navigate", {"target": {"path": "src/lib.ts", "symbol": "greet"}, "kind": "references"}, SLOW
        )
        assert refs["ok"], refs
        assert {path for path, _ in _lines(refs)} == {"src/lib.ts", "src/app.ts"}, refs
        assert len(_lines(refs)) == 4, refs
        outline = await call("code_symbols", {"path": "src/lib.ts"}, SLOW)
        assert [s["name"] for s in outline["symbols"]] == ["Shape", "Square", "greet"], outline
        implementations = await call(
            "code_navigate",
            {"target": {"path": "src/lib.ts", "symbol": "Shape"}, "kind": "implementation"},
            SLOW,
        )
        assert _lines(implementations) == [("src/lib.ts", 5)], implementations
        hover = await call(
            "code_hover", {"target": {"path": "src/app.ts", "line": 5, "matchText": "area"}}, SLOW
        )
        assert hover["ok"] and "area(): number" in hover["text"], hover
        callees = await call(
            "code_hierarchy", {"target": {"path": "src/app.ts", "symbol": "main"}, "kind": "callees"}, SLOW
        )
        assert callees["ok"] and {"greet", "area"} <= {i["name"] for i in callees["items"]}, callees
        diagnostics = await call("code_diagnostics", {"path": "src/app.ts"}, SLOW)
        assert diagnostics["ok"] and diagnostics["counts"]["error"] == 1, diagnostics
        assert diagnostics["problems"][0]["line"] == 6 and diagnostics["status"] == "current", diagnostics
        hints = await call("code_inlay_hints", {"path": "src/app.ts"}, SLOW)
        assert hints["ok"] and hints["totalFound"] > 0, hints
        assert any(h["label"].startswith("name") for h in hints["hints"]), hints
        everything = await call("code_diagnostics", {"activateWorkspace": True}, SLOW)
        assert everything["ok"] and everything["coverage"]["eligibleFiles"] == 2, everything
        assert everything["coverage"]["activated"] == 2 and everything["counts"]["error"] == 1, everything


def test_typescript_tools_on_typescript_language_server(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = write(tmp_path / "ts", TYPESCRIPT)
    asyncio.run(_typescript_checks(folder, real_servers, tag))


async def _multi_root_checks(first: Path, second: Path, real_servers: RealServers, tag: str) -> None:
    async with _service([first, second], real_servers, tag, root_ids=["one", "two"]) as service:
        call = service.dispatch
        ambiguous = await call("code_symbols", {"path": "lib.py"}, SLOW)
        assert not ambiguous["ok"] and ambiguous["ambiguous"], ambiguous
        assert {c["rootId"] for c in ambiguous["candidates"]} == {"one", "two"}
        two = await call("code_symbols", {"path": "lib.py", "rootId": "two"}, SLOW)
        assert two["ok"] and two["path"] == "two/lib.py", two
        assert [s["name"] for s in two["symbols"]] == ["only_in_two"], two
        refs = await call(
            "code_navigate", {"target": {"path": "one/lib.py", "symbol": "greet"}, "kind": "references"}, SLOW
        )
        assert refs["ok"] and {p for p, _ in _lines(refs)} == {"one/lib.py", "one/app.py"}, refs
        # One server per project root: the answer says which project it covers (B8.6).
        assert refs["searchedProject"] == "one" and "other roots (two)" in refs["notice"], refs
        # Server answers outside every root are omitted and counted, never shown (B8.11).
        builtin = await call(
            "code_navigate",
            {"target": {"path": "one/app.py", "line": 5, "matchText": "print"}, "kind": "definition"},
            SLOW,
        )
        assert builtin["ok"] and builtin["files"] == [] and builtin["totalFound"] == 0, builtin
        assert builtin["omitted"]["outsideWorkspace"] >= 1, builtin  # typeshed's print (and its overloads)
        assert len(service.pool.servers) == 2  # one pyright per project root


def test_multi_root_with_a_duplicate_relative_path(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    first = write(tmp_path / "one", PYTHON)
    second = write(
        tmp_path / "two",
        {"pyproject.toml": PYTHON["pyproject.toml"], "lib.py": "def only_in_two() -> int:\n    return 2\n"},
    )
    asyncio.run(_multi_root_checks(first, second, real_servers, tag))


async def _missing_checks(folder: Path, tag: str) -> None:
    home = folder.parent / "empty-home"
    home.mkdir()
    env = TaskEnvironment.from_agent({"HOME": str(home), "PATH": "/usr/bin:/bin", TAG_VARIABLE: tag})
    async with IntelService.open([folder], env=env) as service:
        refs = await service.dispatch(
            "code_navigate", {"target": {"path": "src/lib.ts", "line": 12}, "kind": "references"}
        )
        assert refs["ok"] and refs["totalFound"] == 0, refs
        assert "kandev-lsp install typescript" in refs["notice"], refs
        assert refs["summary"].startswith("No typescript language server is installed")
        hover = await service.dispatch("code_hover", {"target": {"path": "src/lib.ts", "line": 12}})
        assert not hover["ok"] and "kandev-lsp install typescript" in hover["error"], hover
        other = await service.dispatch("code_symbols", {"path": "tsconfig.json"})
        assert other["ok"] and "No language server handles files like 'tsconfig.json'" in other["notice"]


def test_a_missing_server_gives_an_actionable_notice(tmp_path: Path, tag: str) -> None:
    folder = write(tmp_path / "ts", TYPESCRIPT)
    asyncio.run(_missing_checks(folder, tag))


async def _deadline_checks(folder: Path, real_servers: RealServers, tag: str) -> None:
    async with _service([folder], real_servers, tag) as service:
        # a workspace query starts the servers it needs within the call's deadline too
        query = await service.dispatch("code_symbols", {"query": "greet"}, IntelContext(deadline=0.001))
        assert not query["ok"] and query["status"] == "unavailable", query
    async with _service([folder], real_servers, tag) as service:
        payload = {"target": {"path": "lib.py", "symbol": "greet"}, "kind": "references"}
        early = await service.dispatch("code_navigate", payload, IntelContext(deadline=0.001))
        assert not early["ok"] and early["status"] == "unavailable", early
        assert "still starting" in early["error"] and early["starting"] is True, early
        # The start went on in the background: the next call gets the complete answer.
        later = await service.dispatch("code_navigate", payload, SLOW)
        assert later["ok"] and later["totalFound"] == 5, later
        assert len(service.pool.servers) == 1


def test_a_cold_start_past_the_deadline_is_unavailable_not_incomplete(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = write(tmp_path / "py", PYTHON)
    asyncio.run(_deadline_checks(folder, real_servers, tag))


async def _pool_bounds(first: Path, second: Path, real_servers: RealServers, tag: str) -> None:
    async with _service([first, second], real_servers, tag, max_servers=1, idle_timeout=1.0) as service:
        pool = service.pool
        one = await service.dispatch("code_symbols", {"path": "one/lib.py"}, SLOW)
        assert one["ok"] and [s.project_root for s in pool.servers] == [str(first)], one
        two = await service.dispatch("code_symbols", {"path": "two/lib.py"}, SLOW)
        assert two["ok"] and [s.project_root for s in pool.servers] == [str(second)], two  # LRU evicted
        stopped = pool.servers[0].process
        async with asyncio.timeout(30):
            while pool.servers or not stopped.stopped:  # idle: shut down, the process tree stopped
                await asyncio.sleep(0.2)


def test_the_pool_is_bounded_and_stops_idle_servers(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    first = write(tmp_path / "one", PYTHON).resolve()
    second = write(tmp_path / "two", PYTHON).resolve()
    asyncio.run(_pool_bounds(first, second, real_servers, tag))


async def _cold_first_answer(folder: Path, real_servers: RealServers, tag: str) -> tuple[int, int, int]:
    payload = {"target": {"path": "lib.ts", "symbol": "greet"}, "kind": "references", "limit": 500}
    async with _service([folder], real_servers, tag) as service:
        cold = await service.dispatch("code_navigate", payload, SLOW)
        assert cold["ok"], cold
        await asyncio.sleep(3.0)  # idle: whatever the server still loads has loaded
        idle = await service.dispatch("code_navigate", payload, SLOW)
        return cold["totalFound"], len(cold["files"]), idle["totalFound"]


def test_the_first_answer_after_a_cold_start_is_the_complete_one(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    """41 files reference greet. Measured with both guards off (no readiness wait, tsserver's syntax
    server on): the first answer is 1 reference in 1 file. Either guard alone gives 121 in 41."""
    folder = tmp_path / "ts"
    files = {
        "tsconfig.json": '{"compilerOptions": {"strict": true, "target": "es2020"}}\n',
        "lib.ts": "export function greet(name: string): string {\n  return name;\n}\n",
    }
    for n in range(40):
        files[f"mod{n}.ts"] = (
            f'import {{ greet }} from "./lib";\nexport const v{n} = greet("{n}") + greet("x");\n'
        )
    write(folder, files)
    total, file_count, idle_total = asyncio.run(_cold_first_answer(folder, real_servers, tag))
    assert (total, file_count) == (1 + 40 * 3, 41) and idle_total == total


GO = {
    "go.mod": "module example.com/demo\n\ngo 1.19\n",
    "lib.go": 'package main\n\n// Greet says hello.\nfunc greet(name string) string {\n\treturn "hello " + name\n}\n',
    "main.go": 'package main\n\nfunc main() {\n\tvar n int = greet("a")\n\tprintln(n, greet("b"))\n}\n',
}


async def _go_checks(folder: Path, tag: str) -> None:
    home = folder.parent / "home"
    home.mkdir()
    env = TaskEnvironment.from_agent({"HOME": str(home), "PATH": "/usr/bin:/bin", TAG_VARIABLE: tag})
    async with IntelService.open([folder], env=env) as service:
        call = service.dispatch
        refs = await call(
            "code_navigate", {"target": {"path": "lib.go", "symbol": "greet"}, "kind": "references"}, SLOW
        )
        assert refs["ok"] and refs["summary"] == "3 references · 2 files", refs
        hover = await call(
            "code_hover", {"target": {"path": "main.go", "line": 5, "matchText": "greet"}}, SLOW
        )
        assert hover["ok"] and "func greet(name string) string" in hover["text"], hover
        outline = await call("code_symbols", {"path": "lib.go"}, SLOW)
        assert [s["name"] for s in outline["symbols"]] == ["greet"], outline
        diagnostics = await call("code_diagnostics", {"path": "main.go"}, SLOW)
        assert diagnostics["ok"] and diagnostics["counts"]["error"] >= 1, diagnostics
        assert diagnostics["problems"][0]["line"] == 4, diagnostics


@pytest.mark.skipif(not os.access("/usr/bin/gopls", os.X_OK), reason="Debian's gopls is not installed")
def test_go_tools_on_debian_gopls(tmp_path: Path, tag: str) -> None:
    asyncio.run(_go_checks(write(tmp_path / "go", GO), tag))


async def _watched_checks(
    folder: Path, real_servers: RealServers, tag: str
) -> tuple[bool, list[Any], list[Any]]:
    payload = {"target": {"path": "app.py", "line": 5, "matchText": "greet"}, "kind": "definition"}
    async with _service([folder], real_servers, tag) as service:
        before = await service.dispatch("code_navigate", payload, SLOW)
        server = service.pool.servers[0]
        lib = service.workspace.resolve("lib.py")
        assert lib.uri in server.seen and lib.uri not in server.documents  # seen in an answer, never opened
        (folder / "lib.py").write_text("# a comment\n\n\n" + PYTHON["lib.py"])
        after = await service.dispatch("code_navigate", payload, SLOW)
        watched = bool(server.client.endpoint.registrations.for_method("workspace/didChangeWatchedFiles"))
        return watched, _lines(before), _lines(after)


def test_a_file_seen_in_an_answer_and_edited_on_disk_is_announced(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = write(tmp_path / "py", PYTHON)
    watched, before, after = asyncio.run(_watched_checks(folder, real_servers, tag))
    assert watched  # pyright registers for workspace/didChangeWatchedFiles
    assert before == [("lib.py", 11)] and after == [("lib.py", 14)], (before, after)


async def _restart_checks(folder: Path, real_servers: RealServers, tag: str) -> None:
    import signal

    payload = {"target": {"path": "lib.py", "symbol": "greet"}, "kind": "references"}
    async with _service([folder], real_servers, tag) as service:
        first = await service.dispatch("code_navigate", payload, SLOW)
        assert first["ok"], first
        crashed = service.pool.servers[0]
        os.killpg(crashed.process.pid, signal.SIGKILL)  # the server dies between two calls
        async with asyncio.timeout(30):
            await crashed.client.wait_closed()
        again = await service.dispatch("code_navigate", payload, SLOW)
        assert again["ok"] and again["totalFound"] == first["totalFound"], again
        assert service.pool.servers[0] is not crashed  # a new server, documents opened afresh
        await crashed.process.stop(grace=1)


def test_a_server_that_died_is_restarted_by_the_next_call(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    asyncio.run(_restart_checks(write(tmp_path / "py", PYTHON), real_servers, tag))
