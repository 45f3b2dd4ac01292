"""``kandev-lsp install`` / ``uninstall`` / ``list`` as a user runs them, in a subprocess.

The built-in Go plugin is installed for real with ``go install`` from a local module proxy that serves a
small stand-in for ``golang.org/x/tools/gopls`` at the pinned version.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.install.cache import ServerCache
from kandev_lsp.testing import processes_tagged
from kandev_lsp_go import LANGUAGE as GO

GOPLS = "golang.org/x/tools/gopls"
TAG = "KANDEV_TEST_TAG"


def no_settings(folder: Path) -> str:
    """An empty settings file (the defaults), so the user's own never applies; a missing file named by
    KANDEV_LSP_SETTINGS is an error."""
    path = folder / "no-settings.json"
    path.write_text("{}")
    return str(path)


def cli(*args: str, env_file: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kandev_lsp.cli", *args, "--env-file", str(env_file)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "KANDEV_LSP_SETTINGS": no_settings(env_file.parent)},
    )


@pytest.fixture
def env_file(world: Any, kit: Any) -> Path:
    """A task whose PATH holds only ``go`` (so no system gopls is found) and whose HOME is fresh."""
    kit.publish_go_module(world.proxy, GOPLS, GO.install.version)
    os.symlink(kit.REAL_GO, world.tools / "go")
    path = world.root / "task.env"
    path.write_text(json.dumps({**dict(world.env()), "PATH": str(world.tools)}))
    return path


def test_install_list_resolve_and_uninstall_from_the_command_line(world: Any, env_file: Path) -> None:
    installed = cli("install", "go", "--json", env_file=env_file)
    assert installed.returncode == 0, installed.stderr
    outcome = json.loads(installed.stdout)
    assert outcome["status"] == "installed" and outcome["language"] == "go"
    assert outcome["receipt"]["packages"] == [f"{GOPLS}@{GO.install.version}"]
    assert outcome["executable"].startswith(str(world.cache / "go" / "versions"))
    # Progress went to stderr as plain lines (not a terminal).
    assert "kandev-lsp: go: installing" in installed.stderr and "kandev-lsp: go: done" in installed.stderr

    resolved = cli("resolve", "go", "--json", env_file=env_file)
    assert resolved.returncode == 0 and json.loads(resolved.stdout)["source"] == "managed cache"

    listed = json.loads(cli("list", "--json", env_file=env_file).stdout)
    assert [(s["language"], s["matchesPin"], s["binaryPresent"]) for s in listed["servers"]] == [
        ("go", True, True)
    ]
    human = cli("list", env_file=env_file)
    assert human.returncode == 0 and human.stdout.split()[:3] == ["ok", "go", GO.install.version]

    again = cli("install", "go", env_file=env_file)
    assert again.returncode == 0 and "is installed" in again.stdout
    assert "installing" not in again.stderr  # reused, not reinstalled

    removed = cli("uninstall", "go", env_file=env_file)
    assert removed.returncode == 0 and "removed" in removed.stdout
    assert cli("resolve", "go", "--json", env_file=env_file).returncode == 10  # missing, installable
    nothing = cli("uninstall", "go", "--json", env_file=env_file)
    assert nothing.returncode == 0 and json.loads(nothing.stdout)["status"] == "not_installed"


def test_a_failed_install_exits_20_with_the_reason(world: Any, env_file: Path) -> None:
    failed = cli("install", "go", "--version", "v9.9.9", env_file=env_file)
    assert failed.returncode == 20
    assert "go install golang.org/x/tools/gopls@v9.9.9 failed" in failed.stderr
    assert "then run `kandev-lsp install go --version v9.9.9` again" in failed.stderr  # issue 17 item 12
    as_json = cli("install", "go", "--version", "v9.9.9", "--json", env_file=env_file)
    assert as_json.returncode == 20 and json.loads(as_json.stdout)["status"] == "failed"


def test_manual_languages_exit_11_and_unknown_languages_exit_13(world: Any, env_file: Path) -> None:
    kotlin = cli("install", "kotlin", "--json", env_file=env_file)
    assert kotlin.returncode == 11 and json.loads(kotlin.stdout)["status"] == "no_installer"
    unknown = cli("install", "cobol", env_file=env_file)
    assert unknown.returncode == 13 and "unknown language 'cobol'" in unknown.stderr


def test_waiting_for_the_lock_is_said_only_while_another_install_holds_it(world: Any, env_file: Path) -> None:
    """Issue 17 item 12: every install said "waiting for the install lock", also with nobody holding it."""
    import threading

    import filelock

    first = cli("install", "go", env_file=env_file)
    assert first.returncode == 0, first.stderr
    assert "waiting" not in first.stderr, first.stderr
    lines: list[str] = []
    with filelock.FileLock(str(ServerCache(str(world.home / ".kandev" / "lsp-servers"), "go").lock_path)):
        process = start_install(world, env_file)
        assert process.stderr is not None
        reader = threading.Thread(target=lambda: lines.append(process.stderr.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout=60)
        assert lines and "waiting for another install of the Go server to finish" in lines[0], lines
        assert process.poll() is None  # it waits for the lock, as it says
    _, rest = process.communicate(timeout=60)
    assert process.returncode == 0 and "already installed" in rest


def slow_go_task(world: Any, env_file: Path) -> str:
    """Make the task's go a slow one whose worker outlives it (see ``orphaning_go``); tag the task so
    every process it starts can be found from ``/proc``. Returns the tag."""
    (world.tools / "go").unlink()
    world.orphaning_go(world.root / "started")
    tag = uuid.uuid4().hex
    data = json.loads(env_file.read_text())
    data["PATH"] = f"{world.tools}:/usr/bin:/bin"  # the fake go is a shell script
    data[TAG] = tag
    env_file.write_text(json.dumps(data))
    return tag


def start_install(world: Any, env_file: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kandev_lsp.cli", "install", "go", "--env-file", str(env_file), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KANDEV_LSP_SETTINGS": no_settings(world.root)},
    )


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_cancelling_signal_stops_the_whole_tree_cleans_up_and_dies_by_that_signal(
    world: Any, kit: Any, env_file: Path, signum: signal.Signals
) -> None:
    """Issue 7 item 5: SIGTERM and SIGHUP cancel like Ctrl-C; the CLI dies by the signal afterwards."""
    tag = slow_go_task(world, env_file)
    process = start_install(world, env_file, "--json")
    try:
        [line] = kit.wait_for_lines(world.root / "started")
        go, worker = map(int, line.split())
        process.send_signal(signum)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        survivors = processes_tagged(TAG, tag)
        for pid in survivors:
            os.kill(pid, signal.SIGKILL)
    assert process.returncode == -signum, err
    assert json.loads(out) | {"error": ""} == {
        "schema": "kandev-lsp/install", "version": 1, "language": "go", "status": "cancelled", "error": ""
    }  # fmt: skip
    assert signum.name in json.loads(out)["error"]
    assert survivors == [], "processes of the install outlived the CLI"
    assert kit.gone(go, timeout=0.0) and kit.gone(worker, timeout=0.0)
    time.sleep(0.2)  # a surviving worker would re-create the staging folder by now
    cache = ServerCache(world.cache, "go")
    assert cache.leftovers() == [] and cache.current_name() is None


def test_sigkill_takes_go_along_and_the_next_install_sweeps_what_it_left(
    world: Any, kit: Any, env_file: Path
) -> None:
    """Issue 7 item 5: SIGKILL cannot be handled; go dies with the CLI (parent-death signal) and the
    next ``kandev-lsp install`` kills the worker go left, then removes the staging folder."""
    tag = slow_go_task(world, env_file)
    process = start_install(world, env_file)
    try:
        [line] = kit.wait_for_lines(world.root / "started")
        go, worker = map(int, line.split())
        process.kill()
        process.communicate(timeout=30)
        assert kit.gone(go), "go outlived the SIGKILLed CLI"
        assert not kit.gone(worker, timeout=0.0)  # re-parented: only the next install can find it
        cache = ServerCache(world.cache, "go")
        assert any(path.name.startswith(".staging-") for path in cache.leftovers())
        (world.tools / "go").unlink()
        os.symlink(kit.REAL_GO, world.tools / "go")
        again = cli("install", "go", env_file=env_file)
        assert again.returncode == 0, again.stderr
        assert kit.gone(worker, timeout=0.0)
        time.sleep(0.2)  # a surviving worker would re-create the staging folder by now
        assert processes_tagged(TAG, tag) == []
        assert cache.leftovers() == []
        assert cache.current_name() is not None
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        for pid in processes_tagged(TAG, tag):
            os.kill(pid, signal.SIGKILL)
