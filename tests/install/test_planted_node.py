"""A ``node`` the repository planted never runs kandev-lsp's npm-installed servers (issue 17 item 1).

Every test plants ``<ws>/node_modules/.bin/node`` first on the task's PATH (an absolute entry inside the
workspace, which a child's PATH keeps: the task's own lookups are the task's). It logs each run and then
runs the real node, so the log alone tells whether it was the interpreter. Before the fix, npm's launchers
(``#!/usr/bin/env node``) resolved node through that PATH in the install's verification and in every later
start. One test per entry point, each with real npm installs (a shared npm cache) and real servers
answering a real ``initialize``: ``install`` (pyright's initialize check, typescript's ``--version``),
``run --install``, an install the settings ask for, the stream's ``autoInstall=1``, and later starts of
both servers from the cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.testing import processes_tagged

sys.path.insert(0, str(Path(__file__).parent.parent / "stream"))

from stream_testkit import TAG_VARIABLE, LspPeer, RealServers
from websockets.asyncio.client import connect

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry]

CLI = [sys.executable, "-m", "kandev_lsp.cli"]
TRUSTED_NODE = "/usr/bin/node"
SCRIPTS = {
    "python": "node_modules/pyright/langserver.index.js",
    "typescript": "node_modules/typescript-language-server/lib/cli.mjs",
}


@dataclass
class Planted:
    """A workspace with a logging ``node`` first on the task's PATH, and a HOME of its own."""

    workspace: Path
    home: Path
    log: Path
    tag: str
    npm_cache: Path

    def overrides(self, home: Path | None = None) -> dict[str, str]:
        planted = self.workspace / "node_modules" / ".bin"
        return {
            "HOME": str(home or self.home),
            "PATH": f"{planted}:/usr/bin:/bin",
            "npm_config_cache": str(self.npm_cache),
            TAG_VARIABLE: self.tag,
        }

    def task_flags(self, home: Path | None = None) -> list[str]:
        flags = ["--workspace", str(self.workspace)]
        return flags + [f"--env={key}={value}" for key, value in self.overrides(home).items()]

    def planted_runs(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def receipt(self, language: str) -> dict[str, Any]:
        current = self.home / ".kandev" / "lsp-servers" / language / "current"
        data: dict[str, Any] = json.loads((current / "receipt.json").read_text())
        return data


@pytest.fixture
def planted(tmp_path: Path, real_servers: RealServers) -> Iterator[Planted]:
    workspace = tmp_path / "repo"
    node = workspace / "node_modules" / ".bin" / "node"
    node.parent.mkdir(parents=True)
    log = tmp_path / "planted-node.log"  # outside the workspace
    node.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec {TRUSTED_NODE} "$@"\n')
    node.chmod(0o755)
    (workspace / "app.ts").write_text("export const answer: number = 42;\n")
    (workspace / "app.py").write_text("answer: int = 42\n")
    home = tmp_path / "home"
    home.mkdir()
    value = uuid.uuid4().hex
    yield Planted(workspace, home, log, value, real_servers.npm_cache)
    leaked = processes_tagged(TAG_VARIABLE, value)
    for pid in leaked:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not leaked, f"processes left running: {leaked}"


def initialize_params(workspace: Path) -> dict[str, Any]:
    return {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}


async def serve_one_session(peer: LspPeer, workspace: Path) -> dict[str, Any]:
    """initialize (the real server's answer), shutdown, exit."""
    answer = await peer.request("initialize", initialize_params(workspace), timeout=120)
    await peer.notify("initialized", {})
    await peer.request("shutdown", timeout=30)
    await peer.notify("exit")
    result: dict[str, Any] = answer["result"]
    return result


async def run_command(planted: Planted, *args: str, home: Path | None = None) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *CLI, "run", *args, *planted.task_flags(home),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def talk_over_run(planted: Planted, *args: str, home: Path | None = None) -> dict[str, Any]:
    process = await run_command(planted, *args, home=home)
    try:
        capabilities = (await serve_one_session(LspPeer.over_stdio(process), planted.workspace))[
            "capabilities"
        ]
        assert process.stdin is not None
        process.stdin.close()
        async with asyncio.timeout(30):
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert isinstance(capabilities, dict)
    return capabilities


@pytest.mark.parametrize("language", ["python", "typescript"])
def test_install_verifies_the_server_on_the_trusted_node(planted: Planted, language: str) -> None:
    # python: pyright-langserver answers an LSP initialize; typescript: typescript-language-server --version.
    result = subprocess.run(
        [*CLI, "install", language, "--json", *planted.task_flags()],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert planted.planted_runs() == []
    receipt = planted.receipt(language)
    assert (receipt["interpreter"], receipt["script"]) == (TRUSTED_NODE, SCRIPTS[language])


def test_run_install_starts_the_new_server_on_the_trusted_node(planted: Planted) -> None:
    capabilities = asyncio.run(talk_over_run(planted, "typescript", "--install"))
    assert capabilities.get("hoverProvider")
    assert planted.planted_runs() == []
    assert planted.receipt("typescript")["interpreter"] == TRUSTED_NODE


def test_an_install_the_settings_ask_for_runs_on_the_trusted_node(planted: Planted, tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"lsp_auto_install_languages": ["typescript"]}))
    capabilities = asyncio.run(talk_over_run(planted, "typescript", "--settings", str(settings)))
    assert capabilities.get("hoverProvider")
    assert planted.planted_runs() == []


def test_the_streams_auto_install_runs_on_the_trusted_node(planted: Planted, tmp_path: Path) -> None:
    async def scenario() -> dict[str, Any]:
        serving = await asyncio.create_subprocess_exec(
            *CLI, "serve", "--settings", str(tmp_path / "none.json"), *planted.task_flags(),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            assert serving.stdout is not None
            async with asyncio.timeout(30):
                listening = json.loads(await serving.stdout.readline())
            headers = {"Authorization": f"Bearer {listening['token']}"}
            url = listening["url"] + "?language=typescript&autoInstall=1"
            async with connect(url, additional_headers=headers, max_size=None) as ws:
                statuses = []
                async with asyncio.timeout(300):
                    while not statuses or statuses[-1] not in ("ready", "install_failed"):
                        statuses.append(json.loads(await ws.recv())["status"])
                assert statuses == ["installing", "installed", "ready"]
                return await serve_one_session(LspPeer.over_websocket(ws), planted.workspace)
        finally:
            if serving.returncode is None:
                serving.send_signal(signal.SIGTERM)
            async with asyncio.timeout(30):
                await serving.wait()

    assert asyncio.run(scenario())["capabilities"].get("hoverProvider")
    assert planted.planted_runs() == []


@pytest.mark.parametrize("language", ["python", "typescript"])
def test_later_starts_from_the_cache_run_on_the_recorded_node(
    planted: Planted, real_servers: RealServers, language: str
) -> None:
    resolved = subprocess.run(
        [*CLI, "resolve", language, "--json", *planted.task_flags(real_servers.home)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    argv = json.loads(resolved.stdout)["argv"]
    assert argv[0] == TRUSTED_NODE and argv[1].endswith(SCRIPTS[language].split("/", 1)[1])
    capabilities = asyncio.run(talk_over_run(planted, language, home=real_servers.home))
    assert capabilities.get("hoverProvider")
    assert planted.planted_runs() == []
