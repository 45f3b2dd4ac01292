"""A child's PATH never searches the workspace (security review finding 1).

Every child starts with the workspace as its working folder, so an empty PATH entry (a trailing ``:``) or
a relative one (``.``) means "the workspace". The resolver already skipped such entries, but the server
then ran with the task's PATH unchanged, and ``#!/usr/bin/env node`` (every npm-installed server) ran a
``node`` the repository planted. The pure rule is tested on both platforms' syntax; the real-process tests
start a stand-in server exactly as npm installs one and record which ``node`` ran it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kandev_lsp.executables import NO_CURRENT_DIRECTORY, ChildSearchPath, child_environment, child_search_path
from kandev_lsp.platform import HostPlatform
from kandev_lsp.process import run
from kandev_lsp.process._start import plan_spawn
from kandev_lsp.taskenv import TaskEnvironment

LINUX = HostPlatform("linux", "x86_64")
WINDOWS = HostPlatform("windows", "x86_64")
NODE = shutil.which("node", path="/usr/bin:/bin:/usr/local/bin")


# The pure rule -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/usr/bin:/bin", ChildSearchPath("/usr/bin:/bin", 0)),
        ("/opt/x/bin::/usr/bin:/bin", ChildSearchPath("/opt/x/bin:/usr/bin:/bin", 1)),
        ("/usr/bin:", ChildSearchPath("/usr/bin", 1)),
        (":/usr/bin", ChildSearchPath("/usr/bin", 1)),
        (".:/usr/bin:./bin:node_modules/.bin:../up", ChildSearchPath("/usr/bin", 4)),
        ("/ws/.venv/bin:/usr/bin", ChildSearchPath("/ws/.venv/bin:/usr/bin", 0)),  # absolute: the task's
        ("", ChildSearchPath(None, 1)),  # an empty PATH is the current folder again: unset it
        (".::bin", ChildSearchPath(None, 3)),
    ],
)
def test_posix_keeps_only_absolute_entries(path: str, expected: ChildSearchPath) -> None:
    assert child_search_path(path, LINUX) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("C:\\Windows;C:\\Tools", ChildSearchPath("C:\\Windows;C:\\Tools", 0)),
        ("C:\\Windows;;C:\\Tools;", ChildSearchPath("C:\\Windows;C:\\Tools", 2)),
        (".;C:\\Tools;bin;.\\x", ChildSearchPath("C:\\Tools", 3)),
        ("C:tools;\\rooted;C:\\Tools", ChildSearchPath("C:\\Tools", 2)),  # drive-relative, root-relative
        ("\\\\server\\share\\bin;D:/fwd", ChildSearchPath("\\\\server\\share\\bin;D:/fwd", 0)),
        ('"C:\\Program Files\\Git\\cmd";"."', ChildSearchPath('"C:\\Program Files\\Git\\cmd"', 1)),
        ("/usr/bin", ChildSearchPath(None, 1)),  # POSIX-absolute is drive-relative on Windows
        ("", ChildSearchPath(None, 1)),
    ],
)
def test_windows_keeps_only_absolute_entries(path: str, expected: ChildSearchPath) -> None:
    assert child_search_path(path, WINDOWS) == expected


def test_the_environment_keeps_everything_else_and_unsets_a_path_with_nothing_left() -> None:
    env = TaskEnvironment.from_mapping({"PATH": ".:", "HOME": "/h", "A": "b"}, LINUX)
    assert child_environment(env) == ({"HOME": "/h", "A": "b"}, 2)
    unchanged = TaskEnvironment.from_mapping({"PATH": "/usr/bin", "A": "b"}, LINUX)
    assert child_environment(unchanged) == ({"PATH": "/usr/bin", "A": "b"}, 0)
    assert child_environment(TaskEnvironment.from_mapping({"A": "b"}, LINUX)) == ({"A": "b"}, 0)


def test_windows_keeps_the_spelling_of_path_and_stops_the_current_folder_search() -> None:
    env = TaskEnvironment.from_mapping({"Path": "C:\\Tools;;.", "SystemRoot": "C:\\Windows"}, WINDOWS)
    variables, dropped = child_environment(env)
    assert dropped == 2
    assert variables == {"Path": "C:\\Tools", "SystemRoot": "C:\\Windows", NO_CURRENT_DIRECTORY: "1"}
    own = TaskEnvironment.from_mapping({"nodefaultcurrentdirectoryinexepath": "x"}, WINDOWS)
    assert child_environment(own) == ({"nodefaultcurrentdirectoryinexepath": "x"}, 0)


def test_the_spawn_plan_uses_the_reduced_path_and_logs_only_the_count(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret_folder = "ws-folder-name-that-must-not-be-logged"
    env = TaskEnvironment.from_mapping({"PATH": f"/usr/bin:{secret_folder}::/bin"})
    with caplog.at_level(logging.INFO, logger="kandev_lsp.process"):
        plan = plan_spawn(["true"], env=env, cwd=str(tmp_path))
    assert plan.popen_kwargs["env"]["PATH"] == "/usr/bin:/bin"
    assert "2 empty or relative PATH entries dropped" in caplog.text
    assert secret_folder not in caplog.text and "/usr/bin" not in caplog.text


# Real processes ------------------------------------------------------------------------------------------


class NodeTrap:
    """A workspace holding a planted ``node``, and outside it a stand-in server started as npm installs
    one (``#!/usr/bin/env node``) that records which ``node`` runs it."""

    def __init__(self, root: Path) -> None:
        self.workspace = root / "ws"
        self.workspace.mkdir()
        self.planted_log = root / "planted.log"  # outside the workspace
        self.server_log = root / "server.log"
        planted = self.workspace / "node"
        planted.write_text(f'#!/bin/sh\necho "planted node ran: $*" >> "{self.planted_log}"\n')
        planted.chmod(0o755)
        self.bin = root / "bin"
        self.bin.mkdir()
        self.server = self.bin / "pyright-langserver"
        self.server.write_text(
            f"#!/usr/bin/env node\nrequire('fs').writeFileSync({str(self.server_log)!r}, process.execPath);\n"
        )
        self.server.chmod(0o755)
        (self.workspace / "lib.py").write_text("def f():\n    return 1\n")

    def planted_runs(self) -> str:
        return self.planted_log.read_text() if self.planted_log.exists() else ""

    def node_that_ran(self) -> str:
        return self.server_log.read_text() if self.server_log.exists() else ""


@pytest.fixture
def trap(tmp_path: Path) -> NodeTrap:
    if NODE is None:
        pytest.fail("node is not installed: the real servers need it (see README's test set-up)")
    return NodeTrap(tmp_path)


@pytest.mark.parametrize("shape", ["{bin}::/usr/bin:/bin", ".:{bin}:/usr/bin:/bin", ":{bin}:/usr/bin:/bin"])
def test_a_server_started_by_env_node_never_runs_a_node_planted_in_the_workspace(
    trap: NodeTrap, shape: str
) -> None:
    env = TaskEnvironment.from_mapping({"PATH": shape.format(bin=trap.bin), "HOME": str(trap.bin.parent)})
    result = asyncio.run(run([str(trap.server)], env=env, cwd=str(trap.workspace), timeout=30))
    assert trap.planted_runs() == ""
    assert result.returncode == 0, result.output
    assert os.path.realpath(trap.node_that_ran()) == os.path.realpath(str(NODE))


def test_kandev_lsp_run_python_never_runs_a_node_planted_in_the_workspace(trap: NodeTrap) -> None:
    """The review's repro, through the CLI: the resolver finds the stand-in outside the workspace, and the
    server it starts must not reach the planted ``node`` through the PATH's empty entry."""
    settings = trap.bin.parent / "settings.json"
    settings.write_text("{}")
    result = subprocess.run(
        [sys.executable, "-m", "kandev_lsp.cli", "run", "python", "--workspace", str(trap.workspace),
         "--env", f"PATH={trap.bin}::/usr/bin:/bin", "--env", f"HOME={trap.bin.parent}"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60, check=False,
        env={**os.environ, "KANDEV_LSP_SETTINGS": str(settings)},
    )  # fmt: skip
    assert trap.planted_runs() == "", result.stderr
    assert os.path.realpath(trap.node_that_ran()) == os.path.realpath(str(NODE)), result.stderr


def test_a_brief_version_run_never_runs_a_node_planted_in_its_working_folder(
    trap: NodeTrap, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_briefly`` (the rustup proxy check, doctor's version probes) starts its child outside
    ``spawn``, in kandev-lsp's own working folder: run from the project, that is the workspace."""
    from kandev_lsp.probe import run_briefly

    monkeypatch.chdir(trap.workspace)
    outcome = run_briefly([str(trap.server)], {"PATH": f"{trap.bin}::/usr/bin:/bin"}, timeout=30)
    assert trap.planted_runs() == ""
    assert outcome.ok, outcome.summary
    assert os.path.realpath(trap.node_that_ran()) == os.path.realpath(str(NODE))


def test_a_brief_run_happens_in_the_file_systems_root_not_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Toolchain proxies read settings from the folders above their working folder (rustup's
    rust-toolchain.toml may name a toolchain `path` to run from the workspace): a brief run starts in "/"."""
    from kandev_lsp.probe import run_briefly

    script = tmp_path / "where"
    script.write_text("#!/bin/sh\npwd\n")
    script.chmod(0o755)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    outcome = run_briefly([str(script)], {"PATH": "/usr/bin:/bin"}, timeout=30)
    assert outcome.ok and outcome.output == os.path.abspath(os.sep), outcome
