"""``kandev-lsp mcp`` as a subprocess, driven by the official SDK's stdio client: tools listed with
schemas and read-only annotations, calls answered with structured content and a one-line summary,
disabled tools absent, servers warm between calls, everything stopped when the client leaves."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from intel_projects import PYTHON, write
from kandev_lsp.intel.surface.schemas import MUTATING_TOOLS
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]

KANDEV_LSP = str(Path(sys.executable).parent / "kandev-lsp")


async def _session(folder: Path, real_servers: RealServers, tag: str) -> dict[str, Any]:
    env = {**os.environ, **real_servers.overrides(), TAG_VARIABLE: tag}
    env["KANDEV_LSP_SETTINGS"] = str(folder.parent / "settings.json")
    (folder.parent / "settings.json").write_text('{"lsp_disabled_tools": ["code_inlay_hints"]}')
    params = StdioServerParameters(
        command=KANDEV_LSP,
        args=["mcp", "--workspace", str(folder), "--disable-tool", "code_hierarchy", "--deadline", "90"],
        env=env,
    )
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write_stream), ClientSession(read, write_stream) as session:
        await session.initialize()
        listed = await session.list_tools()
        out["tools"] = {tool.name: tool for tool in listed.tools}
        out["first"] = await session.call_tool(
            "code_navigate", {"target": {"path": "lib.py", "symbol": "greet"}, "kind": "references"}
        )
        started = time.monotonic()
        out["second"] = await session.call_tool(
            "code_navigate", {"target": {"path": "lib.py", "symbol": "greet"}, "kind": "references"}
        )
        out["warm_seconds"] = time.monotonic() - started
        out["disabled"] = await session.call_tool(
            "code_hierarchy", {"target": {"path": "lib.py", "line": 1}, "kind": "callers"}
        )
        out["bad"] = await session.call_tool("code_hover", {"target": {"path": "../x.py", "line": 1}})
    return out


def test_mcp_server_over_stdio(tmp_path: Path, real_servers: RealServers, tag: str) -> None:
    folder = write(tmp_path / "py", PYTHON)
    out = anyio.run(_session, folder, real_servers, tag)
    tools = out["tools"]
    reads = {name for name, tool in tools.items() if tool.annotations.read_only_hint}
    assert reads == {"code_symbols", "code_navigate", "code_hover", "code_diagnostics"}
    # issue 11: the six mutating tools are listed too, and not as read-only
    assert set(tools) - reads == {tool.name for tool in MUTATING_TOOLS}
    navigate = tools["code_navigate"]
    assert navigate.input_schema["type"] == "object" and "target" in navigate.input_schema["properties"]
    assert navigate.annotations.read_only_hint is True and navigate.annotations.destructive_hint is False
    for key in ("first", "second"):
        result = out[key]
        assert not result.is_error, result
        assert result.content[0].text == "5 references · 2 files"
        assert result.structured_content["totalFound"] == 5
        # the whole answer as text too: clients that give the model only `content` lose nothing
        assert json.loads(result.content[1].text) == result.structured_content
    assert out["first"].structured_content["files"] == out["second"].structured_content["files"]
    assert out["warm_seconds"] < 5.0  # the server stayed up between calls
    assert out["disabled"].is_error and "disabled" in out["disabled"].content[0].text
    assert out["bad"].is_error and "leaves the workspace" in out["bad"].structured_content["error"]
    assert "leaves the workspace" in json.loads(out["bad"].content[1].text)["error"]  # uncut, as text
