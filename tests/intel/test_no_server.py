"""A read no language server answered never reads as a clean or empty answer (a user trial's finding).

With a HOME holding no server, ``code_diagnostics`` of ``app.py`` answered ``ok: true``, ``status:
"published_workspace"`` and the summary "0 errors, 0 warnings": an agent reading the summary first saw a
clean file although nothing had checked it (the only hint was a ``notice``). Every read tool's answer
without a server now says ``status: "no_server"`` and its summary leads with why, through the command
line (``kandev-lsp code``, one-shot) and through MCP (the official SDK's stdio client), as a user runs
them, with nothing installed (PATH is the system's, HOME is empty). A mutation's receipt likewise names
the touched files no server checked after the edit, instead of "current" over those that answered.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.dispatch import IntelContext
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = pytest.mark.timeout(120)

#: A loaded shared machine: cold servers get longer than the tools' 9 s default.
SLOW = IntelContext(deadline=90)

KANDEV_LSP = str(Path(sys.executable).parent / "kandev-lsp")
#: examples/greeter's shape: a Python and a TypeScript program.
FILES = {
    "app.py": 'from greet import greet\n\nprint(greet("world"))\nprint(greet(42))\n',
    "greet.py": "def greet(name: str) -> str:\n    return f'hello, {name}'\n",
    "app.ts": 'import { greet } from "./greet";\n\nconsole.log(greet(42));\n',
    "greet.ts": "export function greet(name: string): string {\n  return `hello, ${name}`;\n}\n",
    "tsconfig.json": '{"compilerOptions": {"strict": true}}\n',
}
#: A summary of an empty answer: "0 errors, 0 warnings", "no references", "no symbols".
_COUNT = re.compile(r"(\d+|no) (error|warning|reference|caller|symbol|inlay hint)s?\b")
PYTHON_MISSING = "No python language server is installed"
TYPESCRIPT_MISSING = "No typescript language server is installed"


@pytest.fixture
def greeter(tmp_path: Path) -> Path:
    folder = tmp_path / "greeter"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text)
    return folder


def _environment(tmp_path: Path, tag: str) -> dict[str, str]:
    """What a user with nothing installed has: an empty HOME, the system's PATH (no pyright, no
    typescript-language-server there), no settings file."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "KANDEV_LSP_SETTINGS": str(tmp_path / "none.json"),
        TAG_VARIABLE: tag,
    }


def _code(
    folder: Path, env: dict[str, str], tool: str, payload: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [KANDEV_LSP, "code", tool, "--no-daemon", "--workspace", str(folder), "--json", json.dumps(payload)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def _no_server(result: dict[str, Any], *leads: str) -> None:
    """``result`` says no server answered, and its summary leads with why (never a count)."""
    assert result["status"] == "no_server", result
    assert result["summary"].startswith(leads), result["summary"]
    assert not _COUNT.match(result["summary"]), result["summary"]


def test_every_read_without_a_server_says_so_from_the_command_line(
    greeter: Path, tmp_path: Path, tag: str
) -> None:
    env = _environment(tmp_path, tag)
    status, diagnostics = _code(greeter, env, "code_diagnostics", {"path": "app.py"})
    assert status == 0 and diagnostics["ok"] is True  # B8.10: an empty read stays ok, with its notice
    _no_server(diagnostics, PYTHON_MISSING)
    assert "kandev-lsp install python" in diagnostics["notice"]
    assert "0 errors" not in diagnostics["summary"], diagnostics

    _, typescript = _code(greeter, env, "code_diagnostics", {"path": "app.ts"})
    _no_server(typescript, TYPESCRIPT_MISSING)

    # A workspace read with no server running: nothing published, and it says why, not "0 errors".
    _, workspace = _code(greeter, env, "code_diagnostics", {})
    _no_server(workspace, "No language server runs for this workspace yet")
    assert "activateWorkspace" in workspace["notice"] and "baselineId" not in workspace, workspace

    # Activated: every language found was tried, and each one's reason is named.
    _, activated = _code(greeter, env, "code_diagnostics", {"activateWorkspace": True})
    _no_server(activated, "no server answered")
    assert [entry["language"] for entry in activated["notChecked"]] == ["python", "typescript"], activated
    assert PYTHON_MISSING in activated["notice"] and TYPESCRIPT_MISSING in activated["notice"]

    target = {"path": "app.py", "line": 3, "matchText": "greet"}
    reads = [
        ("code_navigate", {"target": target, "kind": "references"}),
        ("code_hierarchy", {"target": target, "kind": "callers"}),
        ("code_symbols", {"path": "greet.py"}),
        ("code_inlay_hints", {"path": "app.py"}),
    ]
    for tool, payload in reads:
        status, result = _code(greeter, env, tool, payload)
        assert status == 0 and result["ok"] is True, (tool, result)
        _no_server(result, PYTHON_MISSING)
        assert result["totalFound"] == 0, (tool, result)
    status, hover = _code(greeter, env, "code_hover", {"target": target})
    assert status == 1 and hover["ok"] is False  # an empty hover is a failure (B8.10)
    _no_server(hover, f"error: {PYTHON_MISSING}")
    _, query = _code(greeter, env, "code_symbols", {"query": "greet"})
    _no_server(query, "not searched: python")
    assert [entry["language"] for entry in query["notSearched"]] == ["python", "typescript"], query


async def _mcp_calls(folder: Path, env: dict[str, str]) -> dict[str, Any]:
    params = StdioServerParameters(command=KANDEV_LSP, args=["mcp", "--workspace", str(folder)], env=env)
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write_stream), ClientSession(read, write_stream) as session:
        await session.initialize()
        out["file"] = await session.call_tool("code_diagnostics", {"path": "app.py"})
        out["workspace"] = await session.call_tool("code_diagnostics", {})
    return out


def test_diagnostics_without_a_server_say_so_through_mcp(greeter: Path, tmp_path: Path, tag: str) -> None:
    out = anyio.run(_mcp_calls, greeter, _environment(tmp_path, tag))
    for key, lead in (("file", PYTHON_MISSING), ("workspace", "No language server runs")):
        result = out[key]
        assert not result.is_error, result  # B8.10: ok, with the notice
        assert result.structured_content["status"] == "no_server", result
        summary = result.content[0].text  # what a model reading the text first sees
        assert summary.startswith(lead) and "0 errors" not in summary, summary


async def _edit_when_a_server_is_gone(
    folder: Path, real_servers: RealServers, tag: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A batch edit of a Python and a TypeScript file, previewed while both servers run, approved after
    typescript-language-server died and could not be started again (its install gone from the task's
    HOME: the pool's environment is swapped for an empty one, fault injection); then the receipt of
    that edit as ``code_diagnostics`` ``since`` a baseline of app.ts taken before it."""
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    async with IntelService.open([folder], env=env) as service:
        batch = {
            "edits": [
                {"target": {"path": "app.py", "line": 4}, "text": 'print(greet("again"))\n'},
                {"target": {"path": "app.ts", "line": 3}, "text": 'console.log(greet("again"));\n'},
            ]
        }
        parked = await service.dispatch("code_replace_batch", batch, SLOW)
        assert parked["ok"] and parked["needsApproval"], parked
        baseline = await service.dispatch("code_diagnostics", {"path": "app.ts"}, SLOW)
        assert baseline["status"] == "current", baseline
        typescript = next(s for s in service.pool.servers if s.language.id == "typescript")
        os.killpg(typescript.process.pid, signal.SIGKILL)
        async with asyncio.timeout(30):
            await typescript.client.wait_closed()
        service.pool.env = TaskEnvironment.from_agent(_environment(folder.parent, tag))
        try:
            applied = await service.dispatch(
                "code_replace_batch", {"transactionId": parked["transactionId"], "approve": True}, SLOW
            )
            since = await service.dispatch("code_diagnostics", {"since": baseline["baselineId"]}, SLOW)
            return applied, since
        finally:
            await typescript.process.stop(grace=1)


@pytest.mark.real_server
@pytest.mark.network_registry
@pytest.mark.timeout(300)
def test_receipts_name_the_files_no_server_checked_after_the_edit(
    greeter: Path, real_servers: RealServers, tag: str
) -> None:
    result, since = asyncio.run(_edit_when_a_server_is_gone(greeter, real_servers, tag))
    assert result["ok"] and result["applied"], result
    assert (greeter / "app.ts").read_text().splitlines()[2] == 'console.log(greet("again"));'
    diagnostics = result["receipt"]["diagnostics"]
    # app.py was checked by pyright; app.ts by nobody: the receipt must not read "current" for both
    assert diagnostics["status"] == "no_server", diagnostics
    assert [entry["path"] for entry in diagnostics["notChecked"]] == ["app.ts"], diagnostics
    assert TYPESCRIPT_MISSING in diagnostics["notChecked"][0]["reason"], diagnostics
    assert diagnostics["files"] == 1, diagnostics  # app.py's delta only
    assert result["summary"].endswith("· 1 touched file not checked (no server answered)"), result["summary"]
    # The same edit seen through `since`: app.ts changed and is in the baseline, but nothing checked it.
    delta = since["delta"]
    assert delta["status"] == "no_server", delta
    assert [entry["path"] for entry in delta["notChecked"]] == ["app.ts"], delta
    assert since["summary"].endswith("(1 file not checked: no server answered)"), since["summary"]
