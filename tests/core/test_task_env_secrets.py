"""kandev-lsp's own variables never reach a server (security review finding 3).

``KANDEV_LSP_TOKEN`` (the stream's bearer token) and ``KANDEV_LSP_BROKER_TOKEN`` (the broker's) live in
kandev-lsp's environment, which is the base of every task's: a language server, and whatever the repository
makes it run, could read them from its own. The task environment leaves every ``KANDEV_LSP_*`` variable out
except the process-tree owner marker. The real-process tests start ``run``, ``serve``, ``code`` and ``mcp``
with the secrets set, and a stand-in ``gopls`` that copies its own ``/proc/self/environ`` to a file. (The
broker starts no server: it connects to each task host's ``serve``.)
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kandev_lsp.executables import child_environment
from kandev_lsp.platform import HostPlatform
from kandev_lsp.process import OWNER_VARIABLE, run
from kandev_lsp.taskenv import TaskEnvironment, is_own_variable, without_own_variables

LINUX = HostPlatform("linux", "x86_64")
WINDOWS = HostPlatform("windows", "x86_64")
TOKEN = "stream-token-must-not-leak-0123456789"
BROKER_TOKEN = "broker-token-must-not-leak-0123456789"
SECRETS = {"KANDEV_LSP_TOKEN": TOKEN, "KANDEV_LSP_BROKER_TOKEN": BROKER_TOKEN}


# The pure rule -------------------------------------------------------------------------------------------


def test_own_variables_are_every_kandev_lsp_name_but_the_owner_marker() -> None:
    for name in ("KANDEV_LSP_TOKEN", "KANDEV_LSP_BROKER_TOKEN", "KANDEV_LSP_SETTINGS", "KANDEV_LSP_DISABLE_PLUGINS",
                 "KANDEV_LSP_TRACE_HOOKS", "KANDEV_LSP_MAX_CONNECTIONS", "kandev_lsp_token", "KANDEV_LSP_NEW"):  # fmt: skip
        assert is_own_variable(name), name
    for name in (
        OWNER_VARIABLE,
        "kandev_lsp_owner",
        "KANDEV_LSPX",
        "KANDEV_FEATURES_LSP_BROWSER_CONTINUITY",
        "PATH",
    ):
        assert not is_own_variable(name), name
    base = {**SECRETS, "KANDEV_LSP_SETTINGS": "/s.json", OWNER_VARIABLE: "outer", "PATH": "/usr/bin"}
    assert without_own_variables(base) == {OWNER_VARIABLE: "outer", "PATH": "/usr/bin"}


@pytest.mark.parametrize("host", [LINUX, WINDOWS])
def test_a_task_built_from_the_agent_environment_leaves_them_out(host: HostPlatform) -> None:
    base = {**SECRETS, "Kandev_Lsp_Token": TOKEN, OWNER_VARIABLE: "outer", "PATH": "/usr/bin", "HOME": "/h"}
    env = TaskEnvironment.from_agent({"GOBIN": "/g"}, base=base, host=host)
    assert dict(env) == {OWNER_VARIABLE: "outer", "PATH": "/usr/bin", "HOME": "/h", "GOBIN": "/g"}


def test_the_default_base_is_this_process_environment_less_the_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SOME_TASK_VARIABLE", "kept")
    env = TaskEnvironment.from_agent()
    assert "KANDEV_LSP_TOKEN" not in env and "KANDEV_LSP_BROKER_TOKEN" not in env
    assert env["SOME_TASK_VARIABLE"] == "kept"


def test_a_child_environment_leaves_them_out_however_the_task_was_built() -> None:
    env = TaskEnvironment.from_mapping({**SECRETS, OWNER_VARIABLE: "outer", "PATH": "/usr/bin"}, LINUX)
    assert child_environment(env) == ({OWNER_VARIABLE: "outer", "PATH": "/usr/bin"}, 0)


# Real processes ------------------------------------------------------------------------------------------


class EnvDump:
    """A Go workspace, and outside it a stand-in ``gopls`` that copies its environment to ``dump``."""

    def __init__(self, root: Path) -> None:
        self.workspace = root / "ws"
        self.workspace.mkdir()
        (self.workspace / "go.mod").write_text("module example.com/m\n\ngo 1.21\n")
        (self.workspace / "main.go").write_text("package main\n\nfunc main() {}\n")
        self.bin = root / "bin"
        self.bin.mkdir()
        self.home = root / "home"
        self.home.mkdir()
        self.dump = root / "gopls.environ"
        gopls = self.bin / "gopls"
        gopls.write_text(
            f'#!/bin/sh\ncat /proc/$$/environ > "{self.dump}.tmp"\nmv "{self.dump}.tmp" "{self.dump}"\n'
        )
        gopls.chmod(0o755)
        settings = root / "settings.json"
        settings.write_text("{}")
        #: kandev-lsp's own environment: both tokens and its settings file
        self.environ = {**os.environ, **SECRETS, "KANDEV_LSP_SETTINGS": str(settings)}

    def flags(self) -> list[str]:
        return ["--workspace", str(self.workspace), "--env", f"PATH={self.bin}:/usr/bin:/bin",
                "--env", f"HOME={self.home}", "--env", "GOPATH=", "--env", "GOBIN="]  # fmt: skip

    def server_environment(self, timeout: float = 30.0) -> dict[str, str]:
        import time

        deadline = time.monotonic() + timeout
        while not self.dump.exists():
            assert time.monotonic() < deadline, "the stand-in gopls never ran"
            time.sleep(0.05)
        entries = [entry for entry in self.dump.read_bytes().split(b"\0") if entry]
        return dict(entry.decode().split("=", 1) for entry in entries)

    def assert_no_secret(self) -> None:
        seen = self.server_environment()
        assert seen.get("HOME") == str(self.home)  # it is the server's environment
        assert OWNER_VARIABLE in seen  # the process-tree marker is inherited on purpose
        leaked = sorted(
            key for key in seen if key.upper().startswith("KANDEV_LSP_") and key != OWNER_VARIABLE
        )
        assert leaked == []
        assert not any(TOKEN in value or BROKER_TOKEN in value for value in seen.values())


@pytest.fixture
def dump(tmp_path: Path) -> EnvDump:
    return EnvDump(tmp_path)


def cli(dump: EnvDump, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kandev_lsp.cli", *args],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=90, check=False, env=dump.environ,
    )  # fmt: skip


def test_run_never_hands_the_tokens_to_the_server(dump: EnvDump) -> None:
    cli(dump, "run", "go", *dump.flags())
    dump.assert_no_secret()


@pytest.mark.parametrize("path", ["warm daemon", "one-shot"])
def test_code_never_hands_the_tokens_to_the_server(dump: EnvDump, path: str) -> None:
    """Through the warm daemon (``code``'s default: the daemon holds kandev-lsp's environment, the server it
    starts must not) and the one-shot path. The daemon gets a runtime folder of this test's own, and is
    stopped and gone before the test ends."""
    import shutil
    import tempfile
    import time

    runtime = tempfile.mkdtemp(prefix="kdt")  # short: a socket path takes 107 bytes at most
    dump.environ["KANDEV_LSP_RUNTIME_DIR"] = runtime
    one_shot = ["--no-daemon"] if path == "one-shot" else []
    try:
        done = cli(dump, "code", "code_symbols", *dump.flags(), "--json", '{"path": "main.go"}', *one_shot)
        assert "warning" not in done.stderr, done.stderr  # answered by the path this test is about
        dump.assert_no_secret()
    finally:
        stop = cli(dump, "code", "--stop", "--workspace", str(dump.workspace))
        stopped = json.loads(stop.stdout)["stopped"]
        deadline = time.monotonic() + 30
        while any(os.path.exists(f"/proc/{pid}") for pid in stopped) and time.monotonic() < deadline:
            time.sleep(0.05)
        shutil.rmtree(runtime, ignore_errors=True)
    assert len(stopped) == (0 if one_shot else 1)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in stopped), "the daemon outlived its --stop"


def test_serve_never_hands_its_token_to_the_server(dump: EnvDump) -> None:
    asyncio.run(_serve_once(dump))
    dump.assert_no_secret()


async def _serve_once(dump: EnvDump) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kandev_lsp.cli", "serve", *dump.flags(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=dump.environ,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        listening = json.loads(await asyncio.wait_for(process.stdout.readline(), 30))
        url = f"{listening['url']}?language=go"
        async with connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
            try:
                async with asyncio.timeout(30):
                    async for _frame in ws:
                        pass
            except ConnectionClosed:
                pass
    finally:
        process.terminate()
        await process.wait()


def test_a_spawned_child_of_a_mapping_built_task_never_gets_them(dump: EnvDump) -> None:
    env = TaskEnvironment.from_mapping({**SECRETS, "PATH": "/usr/bin:/bin", "HOME": str(dump.home)})
    result = asyncio.run(run([str(dump.bin / "gopls")], env=env, cwd=str(dump.workspace), timeout=30))
    assert result.returncode == 0, result.output
    dump.assert_no_secret()


def test_mcp_never_hands_the_tokens_to_the_server(dump: EnvDump) -> None:
    """The MCP server on stdio, driven with raw JSON-RPC lines: one read-only tool call starts gopls."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "code_symbols", "arguments": {"path": "main.go"}}},
    ]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "kandev_lsp.cli", "mcp", *dump.flags()],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=dump.environ,
    )  # fmt: skip
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(messages[0]) + "\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1
        for message in messages[1:]:
            process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()
        dump.server_environment()
    finally:
        process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()
    dump.assert_no_secret()
