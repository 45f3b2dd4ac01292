"""The mutating tools through ``kandev-lsp mcp`` and a real MCP client (the SDK's stdio client) on real
pyright (issue 11; B2.4-B2.6, B7.4): the two-step approval (preview, then ``{transactionId, approve:
true}`` writes the files), a replayed transaction refused, an edit declined through elicitation (nothing
written), and auto-approve continuity ("approve all" once, the next edit is not prompted). Plus the pure
rules of :mod:`kandev_lsp.cli.mcp_approval`."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from intel_projects import write
from kandev_lsp.cli.mcp_approval import (
    APPROVAL_SCHEMA,
    SessionApprovals,
    approval_message,
    read_answer,
    supports_form_elicitation,
)
from mcp import ClientSession
from mcp.client.session import ClientRequestContext, ElicitationFnT
from mcp.client.stdio import StdioServerParameters, stdio_client
from stream_testkit import TAG_VARIABLE, RealServers

KANDEV_LSP = str(Path(sys.executable).parent / "kandev-lsp")

PROJECT = {
    "pyproject.toml": '[project]\nname = "demo"\nversion = "0"\n',
    "lib.py": 'def greet(name: str) -> str:\n    return "hello " + name\n',
    "app.py": "from lib import greet\n\n\ndef main() -> str:\n    return greet('world')\n",
}


# --- pure rules --------------------------------------------------------------------------------------


def test_form_elicitation_is_read_from_the_declared_capability() -> None:
    assert not supports_form_elicitation(None)
    assert supports_form_elicitation(types.ElicitationCapability())  # {}: form, per the specification
    assert supports_form_elicitation(types.ElicitationCapability(form=types.FormElicitationCapability()))
    assert not supports_form_elicitation(types.ElicitationCapability(url=types.UrlElicitationCapability()))


def test_answers_map_to_approve_decline_and_fallback() -> None:
    assert read_answer("accept", None) == (True, False)
    assert read_answer("accept", {"approveAll": True}) == (True, True)
    assert read_answer("accept", {"approveAll": "yes"}) == (True, False)  # only a real boolean counts
    assert read_answer("decline", {"approveAll": True}) == (False, False)  # never "all" with a no
    assert read_answer("cancel", {"approveAll": True}) == (None, False)
    approvals = SessionApprovals()
    assert not approvals.auto_approve
    approvals.remember_all()
    assert approvals.auto_approve
    # the form is a flat object of primitives, as elicitation requires
    assert all(prop["type"] == "boolean" for prop in APPROVAL_SCHEMA["properties"].values())


def test_the_approval_message_shows_counts_reasons_and_a_bounded_diff() -> None:
    diff = "".join(f"-old line {n}\n+new line {n}\n" for n in range(2000))
    text = approval_message(
        "code_rename wants to change 2 files.",
        {
            "files": 2,
            "edits": 3,
            "reasons": ["deletes old.py"],
            "resources": [
                {"kind": "delete", "path": "old.py", "destructive": True, "options": {"recursive": True}}
            ],
            "touched": ["lib.py", "app.py"],
            "diff": diff,
        },
        max_diff=1000,
    )
    assert text.startswith("code_rename wants to change 2 files.\nNeeds your review")
    assert approval_message("", {"files": 2, "edits": 3}) == "3 edits in 2 files."
    assert (
        "Needs your review: deletes old.py." in text and "  - delete old.py (destructive, recursive)" in text
    )
    assert "Files: lib.py, app.py" in text
    assert "-old line 0\n+new line 0" in text
    assert "diff cut at 1000 characters" in text and len(text) < 1500
    assert "new line 1999" not in text


# --- fault injection: a client whose prompt fails ----------------------------------------------------


class _AskingDispatcher:
    """Stands in for the coordinator: asks through ``ctx.elicit`` and reports the answer."""

    def __init__(self) -> None:
        self.calls: list[tuple[bool, bool]] = []

    def tools(self) -> list[Any]:
        from kandev_lsp.intel.surface.schemas import ALL_TOOLS

        return list(ALL_TOOLS)

    async def dispatch_for_host(self, name: str, arguments: Any, ctx: Any) -> Any:
        from kandev_lsp.intel.surface.dispatch import DispatchOutcome

        self.calls.append((ctx.auto_approve, ctx.elicit is not None))
        answer = await ctx.elicit("code_rename: apply 1 edits in 1 files?", {"diff": "-a\n+b\n"})
        return DispatchOutcome({"ok": True, "answer": answer, "summary": "asked"})


async def _failing_prompt() -> tuple[list[Any], _AskingDispatcher]:
    from types import SimpleNamespace

    from kandev_lsp.cli.mcp import build_server
    from mcp.shared.memory import create_client_server_memory_streams

    dispatcher = _AskingDispatcher()
    server = build_server(SimpleNamespace(dispatcher=dispatcher))  # type: ignore[arg-type]

    async def broken(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ErrorData:
        return types.ErrorData(code=types.INTERNAL_ERROR, message="the prompt window crashed")

    answers = []
    async with create_client_server_memory_streams() as (client, served), anyio.create_task_group() as group:
        group.start_soon(lambda: server.run(served[0], served[1], server.create_initialization_options()))
        async with ClientSession(client[0], client[1], elicitation_callback=broken) as session:
            await session.initialize()
            for _ in range(2):
                result = await session.call_tool("code_rename", {})
                answers.append((result.structured_content or {}).get("answer", "missing"))
        group.cancel_scope.cancel()
    return answers, dispatcher


def test_a_failed_prompt_is_no_approval() -> None:
    answers, dispatcher = anyio.run(_failing_prompt)
    assert answers == [None, None]  # None: the coordinator parks the edit as a transaction
    assert dispatcher.calls == [(False, True), (False, True)]  # and nothing turned auto-approve on


# --- a real MCP client session --------------------------------------------------------------------------

Answer = Callable[[str], types.ElicitResult]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """:data:`PROJECT` written to ``tmp_path/py`` (the user settings file would sit next to it)."""
    return write(tmp_path / "py", PROJECT)


def _env(folder: Path, real_servers: RealServers, tag: str) -> dict[str, str]:
    """kandev-lsp's environment: the suite's pyright, this test's tag, no user settings."""
    env = {**os.environ, **real_servers.overrides(), TAG_VARIABLE: tag}
    env["KANDEV_LSP_SETTINGS"] = str(folder.parent / "no-settings.json")
    return env


@contextlib.asynccontextmanager
async def _session(
    folder: Path,
    real_servers: RealServers,
    tag: str,
    *extra: str,
    elicitation_callback: ElicitationFnT | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session with ``kandev-lsp mcp`` (plus ``extra`` flags) on ``folder``."""
    params = StdioServerParameters(
        command=KANDEV_LSP,
        args=["mcp", "--workspace", str(folder), "--deadline", "90", *extra],
        env=_env(folder, real_servers, tag),
    )
    async with (
        stdio_client(params) as (read, write_stream),
        ClientSession(read, write_stream, elicitation_callback=elicitation_callback) as session,
    ):
        await session.initialize()
        yield session


def _rename_arguments(old: str, new: str) -> dict[str, Any]:
    return {"target": {"path": "lib.py", "symbol": old}, "newName": new}


async def _rename(session: ClientSession, old: str, new: str) -> types.CallToolResult:
    return await session.call_tool("code_rename", _rename_arguments(old, new))


def _disk(folder: Path) -> dict[str, str]:
    return {name: (folder / name).read_text() for name in ("lib.py", "app.py")}


async def _two_step(folder: Path, real_servers: RealServers, tag: str) -> dict[str, Any]:
    """A client without elicitation: preview + transactionId, approve, replay."""
    out: dict[str, Any] = {}
    async with _session(folder, real_servers, tag) as session:
        out["tools"] = {tool.name: tool for tool in (await session.list_tools()).tools}
        out["before"] = _disk(folder)
        out["parked"] = await _rename(session, "greet", "salute")
        out["after_preview"] = _disk(folder)
        transaction = (out["parked"].structured_content or {}).get("transactionId")
        approval = {"transactionId": transaction, "approve": True}
        out["applied"] = await session.call_tool("code_rename", approval)
        out["after_apply"] = _disk(folder)
        out["replayed"] = await session.call_tool("code_rename", approval)
        out["after_replay"] = _disk(folder)
    return out


@pytest.mark.real_server
@pytest.mark.network_registry
@pytest.mark.timeout(300)
def test_two_step_approval_over_stdio(project: Path, real_servers: RealServers, tag: str) -> None:
    out = anyio.run(_two_step, project, real_servers, tag)

    rename, navigate = out["tools"]["code_rename"], out["tools"]["code_navigate"]
    assert rename.annotations.read_only_hint is False and rename.annotations.destructive_hint is True
    assert rename.annotations.idempotent_hint is False
    assert navigate.annotations.read_only_hint is True

    parked = out["parked"]
    assert not parked.is_error, parked
    result = parked.structured_content
    assert result["needsApproval"] is True and isinstance(result["transactionId"], str)
    assert "-def greet" in result["preview"]["diff"] and "+def salute" in result["preview"]["diff"]
    assert "receipt" in result and "autoApproveAll" not in result
    assert out["after_preview"] == out["before"]  # a preview writes nothing
    instructions = parked.content[-1].text
    assert result["transactionId"] in instructions and '"approve": true' in instructions

    applied = out["applied"]
    assert not applied.is_error, applied
    assert (
        "needsApproval" not in applied.structured_content or not applied.structured_content["needsApproval"]
    )
    assert "receipt" in applied.structured_content
    assert out["after_apply"]["lib.py"].startswith("def salute(")
    assert "from lib import salute" in out["after_apply"]["app.py"]
    assert "salute('world')" in out["after_apply"]["app.py"]

    replayed = out["replayed"]
    assert replayed.is_error, replayed  # single use
    assert out["after_replay"] == out["after_apply"]


async def _elicited(
    folder: Path, real_servers: RealServers, tag: str, answers: list[Answer]
) -> dict[str, Any]:
    """A client with form elicitation whose person answers from ``answers``, in order."""
    asked: list[str] = []

    async def person(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        asked.append(params.message)
        return answers[len(asked) - 1](params.message)

    out: dict[str, Any] = {"asked": asked, "disk": [_disk(folder)]}
    renames = [("greet", "hail"), ("greet", "hail"), ("hail", "wave")]
    async with _session(folder, real_servers, tag, elicitation_callback=person) as session:
        out["results"] = []
        for old, new in renames:
            result = await _rename(session, old, new)
            out["results"].append(result)
            out["disk"].append(_disk(folder))
    return out


@pytest.mark.real_server
@pytest.mark.network_registry
@pytest.mark.timeout(300)
def test_elicitation_decline_then_approve_all(project: Path, real_servers: RealServers, tag: str) -> None:
    answers: list[Answer] = [
        lambda _: types.ElicitResult(action="decline"),
        lambda _: types.ElicitResult(action="accept", content={"approveAll": True}),
    ]
    out = anyio.run(_elicited, project, real_servers, tag, answers)
    declined, approved, unprompted = out["results"]
    before, after_decline, after_approve, after_unprompted = out["disk"]

    # declined: asked with the preview, nothing written, nothing parked for the model to approve itself
    assert "-def greet" in out["asked"][0] and "+def hail" in out["asked"][0]
    assert after_decline == before
    assert "transactionId" not in (declined.structured_content or {}), declined
    assert "receipt" in (declined.structured_content or {})

    # approved with "approve all": written
    assert not approved.is_error, approved
    assert after_approve["lib.py"].startswith("def hail(") and "hail('world')" in after_approve["app.py"]

    # continuity: the next edit of the session is applied without asking
    assert len(out["asked"]) == 2
    assert not unprompted.is_error, unprompted
    assert (
        after_unprompted["lib.py"].startswith("def wave(") and "wave('world')" in after_unprompted["app.py"]
    )
    for result in out["results"]:
        assert "autoApproveAll" not in (result.structured_content or {})  # B2.6: never shown to the model


# --- kandev-lsp code: a dry run unless --auto-approve ---------------------------------------------------


@pytest.mark.real_server
@pytest.mark.network_registry
@pytest.mark.timeout(300)
def test_code_command_is_a_dry_run_unless_auto_approve(
    project: Path, real_servers: RealServers, tag: str
) -> None:
    env = _env(project, real_servers, tag)
    payload = json.dumps(_rename_arguments("greet", "salute"))
    command = [KANDEV_LSP, "code", "code_rename", "--workspace", str(project), "--json", payload]
    command.append("--no-daemon")  # the one-shot path (the warm daemon's: tests/codedaemon)
    before = _disk(project)

    dry = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240, check=False)
    assert dry.returncode == 0, dry.stderr
    result = json.loads(dry.stdout)
    assert result["dryRun"] is True and "transactionId" not in result and "--auto-approve" in result["next"]
    assert "+def salute" in result["preview"]["diff"]
    assert _disk(project) == before

    applied = subprocess.run(
        [*command, "--auto-approve"], capture_output=True, text=True, env=env, timeout=240, check=False
    )
    assert applied.returncode == 0, applied.stderr
    result = json.loads(applied.stdout)
    assert "dryRun" not in result and result["receipt"]["saved"] == "saved", result
    after = _disk(project)
    assert after["lib.py"].startswith("def salute(") and "salute('world')" in after["app.py"]


# --- kandev-lsp mcp --auto-approve and --read-only -------------------------------------------------------


async def _flags(folder: Path, real_servers: RealServers, tag: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with _session(folder, real_servers, tag, "--read-only") as session:
        out["read_only_tools"] = {tool.name for tool in (await session.list_tools()).tools}
        out["read_only_rename"] = await _rename(session, "greet", "salute")
    async with _session(folder, real_servers, tag, "--auto-approve") as session:
        out["before"] = _disk(folder)
        out["rename"] = await _rename(session, "greet", "salute")
        out["after"] = _disk(folder)
    return out


@pytest.mark.real_server
@pytest.mark.network_registry
@pytest.mark.timeout(300)
def test_read_only_and_auto_approve_flags(project: Path, real_servers: RealServers, tag: str) -> None:
    out = anyio.run(_flags, project, real_servers, tag)
    assert out["read_only_tools"] == {
        "code_symbols", "code_navigate", "code_hierarchy", "code_hover", "code_diagnostics", "code_inlay_hints"
    }  # fmt: skip
    assert out["read_only_rename"].is_error and "code_rename" in out["read_only_rename"].content[0].text
    rename = out["rename"]
    assert not rename.is_error, rename
    assert "needsApproval" not in rename.structured_content
    assert rename.structured_content["receipt"]["saved"] == "saved"
    assert out["before"]["lib.py"].startswith("def greet(")
    assert out["after"]["lib.py"].startswith("def salute(")
