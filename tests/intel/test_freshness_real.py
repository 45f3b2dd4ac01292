"""Diagnostics after the agent's own plain file writes, and the whole tree watched (issue 20 items 1-3),
on real pyright and typescript-language-server.

Before the fix: a caller's diagnostics stayed ``current`` with the old errors after a parameter was added
to the function it calls (pyright republishes it with its unchanged version number only once it checked
it again); an error appended to an open TypeScript file answered ``current`` with the errors of the old
text (typescript-language-server publishes without versions); and a call added to a file no tool had
opened never reached pyright, so references missed it.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from intel_projects import write
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.reading import freshness
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.dispatch import IntelContext
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]

#: A loaded shared machine: a call may wait this long for the server's word.
SLOW = IntelContext(deadline=60)

PYTHON = {
    "pyproject.toml": '[project]\nname = "fresh"\nversion = "0"\n',
    "utils.py": "def make_str(value: object) -> str:\n    return str(value)\n",
    "core.py": (
        "from utils import make_str\n\n\n"
        "def name(x: int) -> str:\n    return make_str(x)\n\n\n"
        "def label(x: int) -> str:\n    return make_str(x) + '!'\n"
    ),
    "helpers.py": "def unrelated() -> int:\n    return 1\n",
}

TYPESCRIPT = {
    "tsconfig.json": '{"compilerOptions": {"strict": true, "target": "es2020"}, "include": ["src"]}\n',
    "src/app.ts": 'export const first: number = "one";\n',
    "src/other.ts": "export const other: string = 2;\n",
}


def _service(folder: Path, real_servers: RealServers, tag: str) -> IntelService:
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    return IntelService.open([folder], env=env)


def _errors(result: dict[str, Any]) -> list[int]:
    assert result["ok"], result
    return sorted(p["line"] for p in result["problems"] if p["severity"] == "error")


async def _python(folder: Path, real_servers: RealServers, tag: str) -> None:
    async with _service(folder, real_servers, tag) as service:

        async def diagnostics(path: str) -> dict[str, Any]:
            return await service.dispatch("code_diagnostics", {"path": path}, SLOW)

        before = await diagnostics("core.py")
        assert (before["status"], _errors(before)) == ("current", []), before
        assert _errors(await diagnostics("utils.py")) == []
        utils = folder / "utils.py"
        original = utils.read_text()
        utils.write_text(original.replace("(value: object)", "(value: object, extra: int)"))
        # Asked at once: core.py itself did not change, but what it calls did. Before the fix: "current"
        # with no errors (its old publication), for as long as one asked.
        after = await diagnostics("core.py")
        assert (after["status"], _errors(after)) == ("current", [5, 9]), after
        utils.write_text(original)
        restored = await diagnostics("core.py")
        assert (restored["status"], _errors(restored)) == ("current", []), restored

        # Item 3: a call added by a plain write to a file no tool has opened reaches the server.
        target = {"target": {"path": "utils.py", "symbol": "make_str"}, "kind": "references"}
        refs = await service.dispatch("code_navigate", target, SLOW)
        assert [f["path"] for f in refs["files"]] == ["core.py", "utils.py"], refs
        helpers = folder / "helpers.py"
        helpers.write_text(helpers.read_text() + "\n\ndef extra() -> str:\n    return make_str(3)\n")
        helpers.write_text("from utils import make_str\n" + helpers.read_text())
        refs = await service.dispatch("code_navigate", target, SLOW)
        assert [f["path"] for f in refs["files"]] == ["core.py", "helpers.py", "utils.py"], refs
        assert refs["totalFound"] == 6, refs


def test_pyright_diagnostics_of_a_caller_and_references_after_plain_writes(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = write(tmp_path / "py", PYTHON).resolve()
    asyncio.run(_python(folder, real_servers, tag))


async def _typescript(folder: Path, real_servers: RealServers, tag: str) -> None:
    async with _service(folder, real_servers, tag) as service:

        async def diagnostics(path: str) -> dict[str, Any]:
            return await service.dispatch("code_diagnostics", {"path": path}, SLOW)

        first = await diagnostics("src/app.ts")
        assert (first["status"], _errors(first)) == ("current", [1]), first
        app = folder / "src" / "app.ts"
        app.write_text(app.read_text() + 'export const second: number = "two";\n')
        # Asked at once. Before the fix: "current" with the one old error.
        second = await diagnostics("src/app.ts")
        assert (second["status"], _errors(second)) == ("current", [1, 2]), second
        # A file opened by this call: its error, never an early empty "current".
        opened = await diagnostics("src/other.ts")
        assert (opened["status"], _errors(opened)) == ("current", [1]), opened


def test_typescript_diagnostics_after_a_plain_write_and_of_a_fresh_file(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = write(tmp_path / "ts", TYPESCRIPT).resolve()
    asyncio.run(_typescript(folder, real_servers, tag))


def _slow_functions(groups: int) -> list[str]:
    """``groups`` functions pyright takes long to check (inferred comprehension types), as lines."""
    lines: list[str] = []
    for i in range(groups):
        lines += [
            f"def f{i}(x: int, y: list[dict[str, int]]) -> list[int]:",
            f"    z = {{k: [v * {i} for v in range(x)] for k, v in enumerate(y)}}",
            "    return sorted(len(v) for v in z.values())",
            "",
        ]
    return lines


def _slow_importer(groups: int) -> str:
    """A module pyright takes seconds to check (inferred comprehension types), importing utils."""
    return "\n".join(["from utils import make_str", "", "LABEL = make_str(0)", "", *_slow_functions(groups)])


async def _busy(folder: Path, real_servers: RealServers, tag: str) -> tuple[dict[str, Any], float, float]:
    """core.py's diagnostics asked right after utils.py changed, and how long after the write pyright
    published core.py and slow.py again."""
    async with _service(folder, real_servers, tag) as service:
        for path in ("slow.py", "utils.py", "core.py"):  # opened in this order: re-checked in this order
            assert (await service.dispatch("code_diagnostics", {"path": path}, SLOW))["status"] == "current"
        server = service.pool.servers[0]
        utils = folder / "utils.py"
        utils.write_text(utils.read_text().replace("(value: object)", "(value: object, extra: int)"))
        written = server.client.now()
        after = await service.dispatch("code_diagnostics", {"path": "core.py"}, SLOW)
        store = server.client.endpoint.diagnostics
        slow, core = (store.get((folder / name).as_uri()) for name in ("slow.py", "core.py"))
        assert slow is not None and core is not None
        return after, slow.received_at - written, core.received_at - written


def test_a_caller_is_awaited_while_pyright_checks_another_importer(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    """A quiet verdict needs the server idle, not only silent (ManagedServer.idle): after utils.py changed,
    pyright re-checks slow.py for seconds before core.py and says nothing meanwhile, so its silence past
    RECHECK_QUIET says nothing of core.py yet. With the idle check removed (idle always true) core.py
    answered quiet at 1.5 s with none of its new errors; with it, current with both."""
    folder = write(tmp_path / "busy", {**PYTHON, "slow.py": _slow_importer(1000)}).resolve()
    after, slow_at, core_at = asyncio.run(_busy(folder, real_servers, tag))
    assert (after["status"], _errors(after)) == ("current", [5, 9]), after
    # The scenario happened: core.py came after slow.py's check, later than the silence window
    assert slow_at <= core_at and core_at > freshness.RECHECK_QUIET, (slow_at, core_at)


def _late_checked(groups: int) -> str:
    """A module pyright takes seconds to check, whose one error, on its last line, only the check finds."""
    return "\n".join([*_slow_functions(groups), 'WRONG: int = "not an int"', ""])


#: The workspace-symbols call opens aaa.py (the first file of its language) and has pyright bind every
#: file; pyright then checks aaa.py and publishes it with late.py as bound so far (no errors yet), opens
#: its progress for late.py and checks it: the order the trial saw on click (core.py bound, then checked).
LATE = {
    "pyproject.toml": '[project]\nname = "late"\nversion = "0"\n',
    "aaa.py": "def quick() -> int:\n    return 1\n",
}


async def _bound_then_checked(folder: Path, real_servers: RealServers, tag: str) -> dict[str, Any]:
    async with _service(folder, real_servers, tag) as service:
        diagnostics, symbols = await asyncio.gather(
            service.dispatch("code_diagnostics", {"path": "late.py"}, SLOW),
            service.dispatch("code_symbols", {"query": "quick"}, SLOW),
        )
        assert symbols["ok"], symbols
        return diagnostics


def test_a_bound_publication_before_pyright_reports_its_check_is_not_current(
    tmp_path: Path, real_servers: RealServers, tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pyright publishes a file it has only bound (no errors yet), creates a progress token, and sends the
    token's ``begin`` once the create is answered, which it reads only after the check pass that follows.
    A user trial on click asked core.py's diagnostics while a workspace-symbols call kept the client busy:
    the create's answer went out late, the begin came 4 s later, after the check, and the bound
    publication (0 errors) was answered ``current`` 0.1 s after it came; the check found 2 errors. Here
    the client's loop is held 0.5 s as each create arrives (a loaded machine; fault injection)."""
    from kandev_lsp.lsp.endpoint import Endpoint

    published: list[int] = []
    receive = Endpoint.receive_message

    def loaded(self: Endpoint, message: Any, now: float) -> Any:
        if message.get("method") == "window/workDoneProgress/create":
            time.sleep(0.5)  # the answer to the create goes out late, as from a busy loop
        elif message.get("method") == "textDocument/publishDiagnostics" and str(
            message["params"].get("uri", "")
        ).endswith("/late.py"):
            published.append(len(message["params"].get("diagnostics", [])))
        return receive(self, message, now)

    monkeypatch.setattr(Endpoint, "receive_message", loaded)
    text = _late_checked(300)
    folder = write(tmp_path / "late", {**LATE, "late.py": text}).resolve()
    result = asyncio.run(_bound_then_checked(folder, real_servers, tag))
    assert published[:1] == [0] and published[-1] == 1, published  # the scenario: bound, then checked
    assert result["status"] == "current", result
    assert _errors(result) == [len(text.splitlines())], result


async def _pulled_then_edited(
    folder: Path, real_servers: RealServers, tag: str, quiet: set[str]
) -> tuple[Any, ...]:
    async with _service(folder, real_servers, tag) as service:
        first = await service.dispatch("code_diagnostics", {"path": "src/app.ts"}, SLOW)
        second = await service.dispatch("code_diagnostics", {"path": "src/other.ts"}, SLOW)
        # app.ts since the answer about other.ts: it was answered just before, and nothing changed since
        since = await service.dispatch("code_diagnostics", {"path": "src/app.ts", "since": "last"}, SLOW)
        quiet.clear()  # from the edit on, every publication comes through
        insert = {
            "target": {"path": "src/other.ts", "line": 1},
            "position": "after",
            "text": "export const z = 1;\n",
        }
        applied = await service.dispatch("code_insert", insert, IntelContext(deadline=60, auto_approve=True))
        return first, second, since, applied


def test_what_a_pull_answered_is_the_baseline_of_typescript_files_it_never_published(
    tmp_path: Path, real_servers: RealServers, tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """typescript-language-server's diagnostics are pulled, and its own check, which each pull cancels,
    may never publish the file; baselines held its publications only. A trial's code_insert into one
    file answered "1 error introduced elsewhere": the other file's old error, which kandev-lsp had
    answered a second before; a since of another file answered just before counted its old errors
    as introduced. Here app.ts's publications are held back until the edit (fault injection: the order a
    loaded machine gives), so the baselines have only the pulls to go by."""
    from kandev_lsp.lsp.endpoint import Endpoint

    quiet = {"/src/app.ts"}
    receive = Endpoint.receive_message

    def unpublished(self: Endpoint, message: Any, now: float) -> Any:
        if message.get("method") == "textDocument/publishDiagnostics" and any(
            str(message["params"].get("uri", "")).endswith(path) for path in quiet
        ):
            return []
        return receive(self, message, now)

    monkeypatch.setattr(Endpoint, "receive_message", unpublished)
    folder = write(tmp_path / "pulled", TYPESCRIPT).resolve()
    first, second, since, applied = asyncio.run(_pulled_then_edited(folder, real_servers, tag, quiet))
    assert (first["status"], _errors(first)) == ("current", [1]), first
    assert (second["status"], _errors(second)) == ("current", [1]), second
    assert "withoutBaseline" not in since["delta"], since["delta"]
    assert since["delta"]["counts"]["introduced"] == 0, since["delta"]
    assert applied["ok"] and applied["applied"], applied
    elsewhere = applied["receipt"]["diagnostics"]["elsewhere"]
    assert elsewhere["counts"]["introduced"] == 0 and elsewhere["withoutBaseline"] == 0, elsewhere
    assert "introduced elsewhere" not in applied["summary"], applied["summary"]
