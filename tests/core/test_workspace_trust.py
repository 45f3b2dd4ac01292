"""Nothing inside the task workspace runs, whoever starts it (issue 7 items 1, 2 and 17).

Every entry point that starts a toolchain (``install``, ``run --install``, the stream's autoInstall and
``doctor``) is driven through the real CLI with a task PATH whose only entry lies inside the workspace and
holds planted ``npm``, ``node`` and ``go`` scripts. A planted script records each run in a log outside the
workspace: the log must stay empty, and the answer must say what was refused and why.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import kandev_lsp_python
import pytest
from kandev_lsp import MissingReason, TaskEnvironment
from kandev_lsp.install.toolchains import toolchain_checks
from kandev_lsp.taskenv import Task
from kandev_lsp.testing import fake_executable, make_plugin_host, make_task, resolve_in

TOKEN = "workspace-trust-test-token-0123456789"


@dataclass
class Planted:
    """A workspace whose ``node_modules/.bin`` holds npm, node and go that record being run."""

    workspace: Path
    home: Path
    log: Path
    bin: Path

    def runs(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []

    @property
    def environ(self) -> dict[str, str]:
        """kandev-lsp's own environment: the user's settings file (mirrors, ...) never leaks in."""
        settings = self.home.parent / "settings.json"
        settings.write_text("{}", encoding="utf-8")
        return {**os.environ, "KANDEV_LSP_SETTINGS": str(settings)}

    def task_flags(self, path: str = "") -> list[str]:
        return [
            "--workspace", str(self.workspace),
            "--env", f"PATH={path or self.bin}",
            "--env", f"HOME={self.home}",
            "--env", "GOPATH=", "--env", "GOBIN=",
        ]  # fmt: skip


@pytest.fixture
def planted(tmp_path: Path) -> Planted:
    workspace = tmp_path / "repo"
    folder = workspace / "node_modules" / ".bin"
    folder.mkdir(parents=True)
    log = tmp_path / "executed.log"  # outside the workspace
    for tool in ("npm", "node", "go"):
        script = folder / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{log}"\nexit 1\n', encoding="utf-8")
        script.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    return Planted(workspace, home, log, folder)


def cli(planted: Planted, *args: str, path: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kandev_lsp.cli", *args, *planted.task_flags(path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
        env=planted.environ,
    )


# Item 1: one entry point each ---------------------------------------------------------------------------


@pytest.mark.parametrize(("language", "tool"), [("python", "npm"), ("go", "go")])
def test_install_never_runs_a_toolchain_planted_in_the_workspace(
    planted: Planted, language: str, tool: str
) -> None:
    result = cli(planted, "install", language)
    assert planted.runs() == []
    assert result.returncode != 0
    assert f"{tool} was not found on the task's PATH outside the task workspace" in result.stderr
    assert str(planted.bin / tool) in result.stderr


def test_run_install_never_runs_a_toolchain_planted_in_the_workspace(planted: Planted) -> None:
    # stdin stays open (an editor that is still there), so only the lookup can stop npm from running
    process = subprocess.Popen(
        [sys.executable, "-m", "kandev_lsp.cli", "run", "python", "--install", *planted.task_flags()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=planted.environ,
    )
    try:
        process.wait(timeout=60)  # not communicate(): it would close stdin, and run would stop at once
        assert process.stderr is not None
        stderr = process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    assert planted.runs() == []
    assert process.returncode != 0
    assert "outside the task workspace" in stderr and str(planted.bin / "npm") in stderr


def test_stream_auto_install_never_runs_a_toolchain_planted_in_the_workspace(planted: Planted) -> None:
    frames, code = asyncio.run(_stream_auto_install(planted))
    assert planted.runs() == []
    # With npm only in the workspace nothing can install it here (issue 17 item 6): 4007 at once, no
    # install tried (resolve's message names the refused npm: test_resolution.py).
    assert code == 4007 and frames == []


async def _stream_auto_install(planted: Planted) -> tuple[list[str], int | None]:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kandev_lsp.cli", "serve", *planted.task_flags(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**planted.environ, "KANDEV_LSP_TOKEN": TOKEN},
    )  # fmt: skip
    try:
        assert process.stdout is not None
        listening = json.loads(await asyncio.wait_for(process.stdout.readline(), 30))
        url = f"{listening['url']}?language=python&autoInstall=1"
        frames: list[str] = []
        async with connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
            try:
                async with asyncio.timeout(60):
                    async for frame in ws:
                        frames.append(frame if isinstance(frame, str) else frame.decode())
            except ConnectionClosed:
                pass
            return frames, ws.close_code
    finally:
        process.terminate()
        await process.wait()


def test_doctor_never_runs_a_toolchain_planted_in_the_workspace(planted: Planted) -> None:
    result = cli(planted, "doctor", "--json", "--no-version")
    assert planted.runs() == []
    toolchains = {check["tool"]: check for check in json.loads(result.stdout)["toolchains"]}
    assert set(toolchains) == {"node", "npm", "go"}
    for tool, check in toolchains.items():
        assert not check["ok"] and check["path"] is None
        assert str(planted.bin / tool) in check["message"] and "inside the task workspace" in check["message"]


def env_node_launcher(folder: Path, name: str) -> Path:
    """A launcher outside the workspace that starts with ``#!/usr/bin/env node``, as npm's does."""
    folder.mkdir(parents=True, exist_ok=True)
    launcher = folder / name
    launcher.write_text("#!/usr/bin/env node\nconsole.log('10.0.0')\n", encoding="utf-8")
    launcher.chmod(0o755)
    return launcher


@pytest.mark.parametrize("entry_point", ["install", "doctor"])
def test_a_node_planted_in_the_workspace_is_not_found_through_an_env_shebang(
    planted: Planted, tmp_path: Path, entry_point: str
) -> None:
    """npm outside the workspace is allowed, but its ``#!/usr/bin/env node`` searches PATH: kandev-lsp's
    own tools run with PATH reduced to entries outside the workspace, so the planted node never runs."""
    tools = tmp_path / "tools"
    env_node_launcher(tools, "npm")
    path = f"{planted.bin}:{tools}"
    if entry_point == "install":
        result = cli(planted, "install", "python", path=path)
        assert result.returncode != 0
    else:
        result = cli(planted, "doctor", "--json", "--no-version", path=path)
        npm = {check["tool"]: check for check in json.loads(result.stdout)["toolchains"]}["npm"]
        assert npm["path"] == str(tools / "npm") and not npm["ok"]
    assert planted.runs() == []


def test_toolchain_checks_take_the_task_workspace_into_account(planted: Planted) -> None:
    env = TaskEnvironment.from_agent({"PATH": str(planted.bin), "HOME": str(planted.home)})
    elsewhere = Task(str(planted.workspace.parent / "other"), env)
    assert all(check.path for check in toolchain_checks(elsewhere, [kandev_lsp_python.LANGUAGE]))
    inside = Task(str(planted.workspace), env)
    assert not any(check.path for check in toolchain_checks(inside, [kandev_lsp_python.LANGUAGE]))


# Item 17: a server refused because it lies in the workspace is named ----------------------------------


def test_a_server_found_only_in_the_workspace_is_named_as_refused(planted: Planted) -> None:
    server = fake_executable(planted.bin, "pyright-langserver")
    host = make_plugin_host(kandev_lsp_python)
    path = [str(planted.bin), "/usr/bin"]  # the task's real npm and node: installing is possible
    task = make_task(str(planted.workspace), path=path, home=str(planted.home))
    resolution = resolve_in(host, "python", task)
    assert resolution.reason is MissingReason.INSTALLABLE_NOT_REQUESTED and resolution.installable
    assert f"found only inside the task workspace ({server})" in resolution.message
    assert "never runs programs from the workspace" in resolution.message
    assert "kandev-lsp install python" in resolution.message  # installing is the way out, and it works

    doctor = cli(planted, "doctor", "--no-version")
    assert f"pyright-langserver was found only inside the task workspace ({server})" in doctor.stdout


# Item 2: a workspace that contains the managed cache (finding 6: refused, HOME or not) ----------------


def installed_pyright(home: Path) -> str:
    """A server in the managed cache's layout, as ``kandev-lsp install`` leaves it."""
    version = home / ".kandev" / "lsp-servers" / "python" / "1.1.414"
    fake_executable(version / "node_modules" / ".bin", "pyright-langserver")
    (version.parent / "current").symlink_to(version.name)
    return str(version.parent / "current" / "node_modules" / ".bin" / "pyright-langserver")


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "users" / "ann"
    folder.mkdir(parents=True)
    yield folder


@pytest.mark.parametrize("workspace", ["home", "parent of home"])
def test_a_workspace_that_contains_home_refuses_the_managed_cache(home: Path, workspace: str) -> None:
    """Security review finding 6 reversed item 2: a checkout that holds HOME could ship the cache (the
    full rule: tests/core/test_cache_in_workspace.py)."""
    installed_pyright(home)
    folder = home if workspace == "home" else home.parent
    task = make_task(str(folder), path=[], home=str(home))
    resolution = resolve_in(make_plugin_host(kandev_lsp_python), "python", task)
    assert not resolution.found and resolution.reason is MissingReason.CACHE_UNAVAILABLE
    assert "set HOME to a folder outside it" in resolution.message


def test_the_server_from_a_cache_in_a_home_workspace_is_not_started(home: Path) -> None:
    """The process layer applies the same rule as the resolver: with cwd = HOME it refuses the cache."""
    from kandev_lsp.process import ProcessStartError, run

    server = installed_pyright(home)
    env = TaskEnvironment.from_agent({"PATH": "", "HOME": str(home)})
    with pytest.raises(ProcessStartError, match="set HOME to a folder outside it"):
        asyncio.run(run([server], env=env, cwd=str(home), timeout=30))


@pytest.mark.parametrize("layout", ["workspace is ~/.kandev", "~/.kandev links into the workspace"])
def test_a_cache_inside_the_workspace_while_home_is_not_is_refused_without_a_loop(
    home: Path, tmp_path: Path, layout: str
) -> None:
    """A checkout at W can write W/...: a "cache" it holds is not kandev-lsp's, and installing again
    would put the server in the same refused place, so the answer must not advise it."""
    if layout == "workspace is ~/.kandev":
        installed_pyright(home)
        workspace = home / ".kandev"
    else:
        workspace = tmp_path / "repo"
        installed_pyright(workspace)  # the repository carries a ".kandev/lsp-servers" of its own
        (home / ".kandev").symlink_to(workspace / ".kandev")
    task = make_task(str(workspace), path=[], home=str(home))
    resolution = resolve_in(make_plugin_host(kandev_lsp_python), "python", task)
    assert not resolution.found
    assert resolution.reason is MissingReason.CACHE_UNAVAILABLE and not resolution.installable
    assert "kandev-lsp install" not in resolution.message
    assert "lies inside the task workspace" in resolution.message and "project root" in resolution.message
    assert any("never trusted (the managed cache" in step.reason for step in resolution.trail)


def test_the_stream_close_detail_names_a_server_refused_in_the_workspace(planted: Planted) -> None:
    """Item 17 through ``serve``: without autoInstall the close is 4001 and the logged detail says the
    server was refused because it lies in the workspace, not that it was not found."""
    server = fake_executable(planted.bin, "pyright-langserver")
    code, log = asyncio.run(_stream_without_install(planted, f"{planted.bin}:/usr/bin"))
    assert code == 4001
    assert f"found only inside the task workspace ({server})" in log


async def _stream_without_install(planted: Planted, path: str = "") -> tuple[int | None, str]:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kandev_lsp.cli", "serve", *planted.task_flags(path), "--log-level", "info",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**planted.environ, "KANDEV_LSP_TOKEN": TOKEN},
    )  # fmt: skip
    try:
        assert process.stdout is not None and process.stderr is not None
        listening = json.loads(await asyncio.wait_for(process.stdout.readline(), 30))
        url = f"{listening['url']}?language=python"
        async with connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
            with contextlib.suppress(ConnectionClosed):
                async with asyncio.timeout(30):
                    await ws.recv()
            code = ws.close_code
    finally:
        process.terminate()
        await process.wait()
    return code, (await process.stderr.read()).decode("utf-8", "replace")
