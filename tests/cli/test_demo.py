"""``scripts/demo``, the end of the README's first command (issue 17 item 8): on a HOME with no server yet
it installs pyright and typescript-language-server for real (npm) into that HOME's managed cache, and the
answers about examples/greeter come from them through ``kandev-lsp code``. The expected lines are read
off the example's own files (where the mistake and the definition are), not from the demo."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from kandev_lsp.testing import processes_tagged
from stream_testkit import TAG_VARIABLE, wait_until

if TYPE_CHECKING:
    from stream_testkit import RealServers

PROJECT = Path(__file__).resolve().parents[2]
DEMO = PROJECT / "scripts" / "demo"


def demo(
    *args: str, home: str, npm_cache: Path, tag: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": home, "npm_config_cache": str(npm_cache), TAG_VARIABLE: tag}
    return subprocess.run(
        [str(DEMO), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600, check=False
    )


@pytest.mark.real_server
@pytest.mark.network_registry
def test_the_demo_installs_the_servers_and_shows_the_mistake_and_the_definition(
    real_servers: RealServers, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    tag = uuid.uuid4().hex
    result = demo(home=str(home), npm_cache=real_servers.npm_cache, tag=tag)  # warm npm cache, fresh HOME
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"kandev-lsp demo: examples/greeter, servers in {home}/.kandev/lsp-servers"
    expected = [
        "python      pyright-langserver 1.1.414",
        '  diagnostics  app.py:6:13 error: Argument of type "Literal[42]" cannot be assigned to parameter "name" of type "str" in function "greet"',
        "  definition   greet at app.py:6 -> greet.py:4  def greet(name: str) -> str:",
        "typescript  typescript-language-server 5.3.0",
        "  diagnostics  app.ts:5:19 error: Argument of type 'number' is not assignable to parameter of type 'string'.",
        "  definition   greet at app.ts:5 -> greet.ts:2  export function greet(name: string): string {",
    ]
    assert lines[1:7] == expected
    assert lines[7].startswith("ok: 2 of 2 found the planted mistake and its definition (")
    for language in ("python", "typescript"):
        assert (home / ".kandev" / "lsp-servers" / language / "current").is_dir()  # the user's cache
    assert "installing: npm install pyright@1.1.414" in result.stderr  # really installed, progress shown
    # `kandev-lsp code`'s warm daemon and its servers were stopped when the demo ended (--stop asks;
    # the last of them may still be on its way out).
    assert wait_until(lambda: not processes_tagged(TAG_VARIABLE, tag), timeout=20)


@pytest.mark.real_server
@pytest.mark.parametrize(
    "launch",
    [[], ["bash", "-c", 'trap "" INT; exec "$@"', "bash"]],  # the second: a script's background job
    ids=["sigint", "sigint-inherited-ignored"],
)
def test_ctrl_c_stops_the_demo_cleanly(launch: list[str], real_servers: RealServers, tmp_path: Path) -> None:
    """Before, Ctrl-C printed a KeyboardInterrupt traceback (subprocess.run then killed the running
    ``kandev-lsp`` 0.25 s later, whatever it was cleaning up), and a demo that inherited SIGINT ignored
    could not be interrupted at all: it ran to the end and exited 0."""
    tag = uuid.uuid4().hex
    env = {**os.environ, "HOME": str(real_servers.home), "npm_config_cache": str(real_servers.npm_cache)}
    with subprocess.Popen(
        [*launch, str(DEMO)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, TAG_VARIABLE: tag},
    ) as running:
        try:
            assert running.stdout is not None
            assert running.stdout.readline().startswith("kandev-lsp demo: ")
            # `kandev-lsp install python` runs (the demo and it carry the tag): interrupt the demo there
            assert wait_until(lambda: len(processes_tagged(TAG_VARIABLE, tag)) >= 2, timeout=20)
            running.send_signal(signal.SIGINT)
            _, errors = running.communicate(timeout=120)
        finally:
            if running.poll() is None:
                running.kill()
                running.wait()
    assert running.returncode == 130, errors
    assert "Traceback" not in errors, errors
    assert "demo: interrupted (SIGINT); what it started is stopped" in errors
    assert wait_until(lambda: not processes_tagged(TAG_VARIABLE, tag), timeout=20)


@pytest.mark.real_server
def test_the_demo_started_from_home_works_on_the_example(real_servers: RealServers) -> None:
    """``kandev-lsp/scripts/demo`` typed in ``~``: every step names the example as its workspace. Before,
    the install took the current folder, which holds HOME, so the cache was refused (exit 12, "HOME ...
    is inside the workspace")."""
    tag = uuid.uuid4().hex
    home = real_servers.home  # the servers are installed there: the install step reuses them
    result = demo("python", home=str(home), npm_cache=real_servers.npm_cache, tag=tag, cwd=home)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "  definition   greet at app.py:6 -> greet.py:4  def greet(name: str) -> str:" in result.stdout
    assert wait_until(lambda: not processes_tagged(TAG_VARIABLE, tag), timeout=20)


def test_a_demo_that_cannot_install_says_why_with_installs_status(tmp_path: Path) -> None:
    result = demo("python", home="relative-home", npm_cache=tmp_path / "npm")
    assert result.returncode == 12, result.stdout + result.stderr  # the managed cache is unusable
    assert "demo: kandev-lsp install python: cannot install pyright-langserver: the task's HOME is not" in (
        result.stderr
    )
    assert "ok:" not in result.stdout


def test_the_demo_refuses_a_language_it_has_no_example_for(tmp_path: Path) -> None:
    result = demo("cobol", home=str(tmp_path), npm_cache=tmp_path / "npm")
    assert result.returncode == 2
    assert "demo: no example for cobol; the examples: python, typescript" in result.stderr


def test_the_readmes_two_commands_are_these_scripts() -> None:
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Two commands\n.*?```sh\n(.*?)```", readme, re.S)
    assert block is not None
    commands = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    assert commands == ["scripts/setup && scripts/demo", "scripts/test"]
    for script in ("setup", "demo", "test"):
        assert os.access(PROJECT / "scripts" / script, os.X_OK), script
