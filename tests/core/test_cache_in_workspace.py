"""A managed cache inside the task workspace is never trusted, HOME or not (security review finding 6).

With ``--env HOME=<ws>/.home``, ``<ws>/.home/.kandev/lsp-servers/go/current/bin/gopls`` resolved as
"managed cache" and ran: the cache used to be trusted whenever HOME was the workspace or inside it. A
checkout that holds HOME can ship that file, so the resolver now refuses it with the cache's reason (what
to change: HOME), and ``install`` refuses to install there before any toolchain runs. The real-process
tests plant a ``gopls`` in the cache and stand-in ``npm``/``go`` outside the workspace that each log a run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import kandev_lsp_go
import kandev_lsp_python
import pytest
from kandev_lsp import HostPlatform, MissingReason, TaskEnvironment
from kandev_lsp.discovery import ProbeStatus
from kandev_lsp.executables import WorkspaceGate, managed_cache
from kandev_lsp.fileprobe import LocalFileProbe
from kandev_lsp.testing import TableProbe, make_plugin_host, make_task, resolve_in

ADVICE = "set HOME to a folder outside it"


class HomeInWorkspace:
    """A Go workspace whose task HOME is ``<ws>/.home``, with a ``gopls`` planted in that HOME's cache."""

    def __init__(self, root: Path) -> None:
        self.workspace = root / "ws"
        self.workspace.mkdir()
        (self.workspace / "go.mod").write_text("module example.com/m\n\ngo 1.21\n")
        (self.workspace / "main.go").write_text("package main\n\nfunc main() {}\n")
        self.home = self.workspace / ".home"
        self.log = root / "executed.log"  # outside the workspace
        self.planted = self.home / ".kandev" / "lsp-servers" / "go" / "current" / "bin" / "gopls"
        self.script(self.planted)
        self.tools = root / "tools"  # outside the workspace: npm and go that log and fail
        for tool in ("npm", "go"):
            self.script(self.tools / tool)
        settings = root / "settings.json"
        settings.write_text("{}")
        self.environ = {**os.environ, "KANDEV_LSP_SETTINGS": str(settings)}

    def script(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'#!/bin/sh\necho "{path.name} $*" >> "{self.log}"\nexit 1\n')
        path.chmod(0o755)

    def runs(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        flags = ["--workspace", str(self.workspace), "--env", f"HOME={self.home}", "--env", f"PATH={self.tools}",
                 "--env", "GOPATH=", "--env", "GOBIN="]  # fmt: skip
        return subprocess.run(
            [sys.executable, "-m", "kandev_lsp.cli", *args, *flags],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=90, check=False, env=self.environ,
        )  # fmt: skip


@pytest.fixture
def ws(tmp_path: Path) -> HomeInWorkspace:
    return HomeInWorkspace(tmp_path)


def test_resolve_refuses_a_cache_under_a_home_inside_the_workspace(ws: HomeInWorkspace) -> None:
    result = ws.cli("resolve", "go", "--json", "--explain")
    answer = json.loads(result.stdout)
    assert result.returncode == 12, result.stderr  # missing, cache unusable: no advice that loops
    assert answer["status"] == "missing" and answer["reason"] == "cache_unavailable"
    assert not answer["installable"] and "kandev-lsp install" not in answer["message"]
    assert ADVICE in answer["message"]
    (step,) = [step for step in answer["explain"] if step["path"] == str(ws.planted)]
    assert step["verdict"] == "rejected" and "inside the task workspace" in step["reason"]
    assert ADVICE in step["reason"]


def test_run_never_starts_a_server_planted_in_a_home_inside_the_workspace(ws: HomeInWorkspace) -> None:
    result = ws.cli("run", "go")
    assert ws.runs() == []
    assert result.returncode != 0 and ADVICE in result.stderr


@pytest.mark.parametrize("language", ["go", "python"])  # the toolchains: go, npm (stand-ins that log)
def test_install_refuses_a_cache_inside_the_workspace_before_running_anything(
    ws: HomeInWorkspace, language: str
) -> None:
    shutil.rmtree(ws.home / ".kandev")
    result = ws.cli("install", language)
    assert ws.runs() == []  # the toolchain never ran
    assert result.returncode != 0
    assert ADVICE in result.stderr and "HOME" in result.stderr
    assert not (ws.home / ".kandev").exists()  # nothing was written into the refused cache


# The rule, on this machine's files and on a simulated Windows task ------------------------------------


def test_the_rule_as_a_table(tmp_path: Path) -> None:
    home = tmp_path / "users" / "ann"
    (home / ".kandev").mkdir(parents=True)
    elsewhere = tmp_path / "work" / "repo"
    elsewhere.mkdir(parents=True)
    probe = LocalFileProbe(HostPlatform.current())

    def usable(workspace: Path, home_value: Path | str) -> bool:
        env = TaskEnvironment.from_agent({"HOME": str(home_value)})
        return managed_cache(str(workspace), env, probe).usable

    assert usable(elsewhere, home)  # the usual case: the cache is outside the workspace
    assert usable(home / "project", home)  # a project under HOME: the cache is outside it
    assert not usable(home, home)  # HOME is the workspace (an editor whose root is ~, a container)
    assert not usable(home.parent, home)  # HOME inside the workspace
    assert not usable(elsewhere, elsewhere / ".home")  # the review's --env HOME=<ws>/.home
    assert not usable(home / ".kandev", home)  # the cache inside the workspace, HOME not
    assert not usable(elsewhere, "relative/home")  # HOME not absolute: disabled


def test_a_home_linked_into_the_workspace_is_inside_it(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    (workspace / "dot-home").mkdir(parents=True)
    link = tmp_path / "home"
    link.symlink_to(workspace / "dot-home")
    env = TaskEnvironment.from_agent({"HOME": str(link)})
    cache = managed_cache(str(workspace), env, LocalFileProbe(HostPlatform.current()))
    assert not cache.usable and ADVICE in cache.reason
    refusal = WorkspaceGate(str(workspace), env, LocalFileProbe(HostPlatform.current())).refusal(
        str(workspace / "dot-home" / ".kandev" / "lsp-servers" / "go" / "current" / "bin" / "gopls")
    )
    assert refusal is not None and ADVICE in refusal


def test_windows_a_userprofile_workspace_refuses_its_cache_case_insensitively() -> None:
    windows = HostPlatform("windows", "x86_64")
    current = "C:\\Users\\Ann\\.kandev\\lsp-servers\\python\\current"
    server = current + "\\node_modules\\.bin\\pyright-langserver.cmd"
    node, script = "C:\\nodejs\\node.exe", current + "\\node_modules\\pyright\\langserver.index.js"
    receipt = {
        "schema": "kandev-lsp/install-receipt", "version": 1, "language": "python", "plugin": "python",
        "pluginVersion": "0.1.0", "recipe": "npm", "serverVersion": "1.1.414", "packages": [],
        "identity": "npm pyright@1.1.414", "source": "npm registry", "installedAt": "2026-12-01T00:00:00Z",
        "executable": "node_modules/.bin/pyright-langserver.cmd", "interpreter": node,
        "script": "node_modules/pyright/langserver.index.js",
    }  # fmt: skip
    probe = TableProbe(
        {server: ProbeStatus.OK, script: ProbeStatus.OK, node: ProbeStatus.OK},
        windows,
        contents={current + "\\receipt.json": json.dumps(receipt).encode()},
    )
    host = make_plugin_host(kandev_lsp_python, kandev_lsp_go)
    task = make_task("c:\\users\\ann", path=[], extra={"USERPROFILE": "C:\\Users\\Ann"}, host=windows)
    resolution = resolve_in(host, "python", task, probe)
    assert not resolution.found and resolution.reason is MissingReason.CACHE_UNAVAILABLE
    assert ADVICE in resolution.message
    elsewhere = make_task("D:\\work\\repo", path=[], extra={"USERPROFILE": "C:\\Users\\Ann"}, host=windows)
    assert resolve_in(host, "python", elsewhere, probe).executable == server


def test_uninstall_never_deletes_through_a_link_the_checkout_ships(
    ws: HomeInWorkspace, tmp_path: Path
) -> None:
    """The checkout holds HOME, so it can make its cache's ``versions`` a link to a folder of the user's
    (here a relative one, as a repository would commit it). ``uninstall`` still works on such a cache (it
    only removes); before, it retired every folder the link led to."""
    outside = tmp_path / "user-folder"
    (outside / "project").mkdir(parents=True)
    (outside / "project" / "notes.txt").write_text("keep")
    versions = ws.home / ".kandev" / "lsp-servers" / "go" / "versions"
    shutil.rmtree(versions.parent / "current")  # the link alone
    versions.symlink_to(os.path.relpath(outside, versions.parent))
    result = ws.cli("uninstall", "go")
    assert result.returncode == 20, result.stdout + result.stderr
    assert f"{versions} is a symbolic link" in result.stderr
    assert (outside / "project" / "notes.txt").read_text() == "keep"
    assert versions.is_symlink()  # nothing changed at all
