"""Installs in several OS processes sharing one HOME, and installs killed with SIGKILL.

The child processes run a small script that installs the fake Go server through the manager, the way
two ``kandev-lsp install`` runs (or two task-host agents) would.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import filelock
import pytest
from kandev_lsp.install import InstallManager
from kandev_lsp.install.cache import ServerCache
from kandev_lsp.resolver import Resolver

CHILD = """
import asyncio, json, sys
from kandev_lsp import GoRecipe, LanguageSpec, Task, TaskEnvironment, hookimpl
from kandev_lsp.install import InstallManager
from kandev_lsp.testing import make_plugin_host

config = json.loads(sys.argv[1])
spec = LanguageSpec(id="fakego", display_name="Fake", command="fakels",
                    install=GoRecipe(package="example.com/fakels", version="v0.1.0", bin="fakels"))

class Plugin:
    @hookimpl
    def kandev_lsp_languages(self):
        return [spec]

def report(progress):
    if config.get("phases"):
        with open(config["phases"], "a") as f:
            f.write(progress.phase + "\\n")

async def main():
    async with InstallManager(make_plugin_host(Plugin(), names=["fakes"])) as manager:
        receipt = await manager.install("fakego", Task(config["workspace"], TaskEnvironment(config["env"])),
                                        version=config.get("version"),
                                        progress=report)
    print("receipt", json.dumps(receipt.to_json()), flush=True)

asyncio.run(main())
"""


def start_child(world: Any, version: str | None = None, phases: Path | None = None) -> subprocess.Popen[str]:
    config = {
        "workspace": str(world.workspace),
        "env": dict(world.env()),
        "version": version,
        "phases": str(phases) if phases else None,
    }
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_processes_installing_at_once_install_once_and_both_succeed(world: Any, kit: Any) -> None:
    started, gate = world.root / "started", world.root / "gate"
    world.gated_go(started, gate)
    logs = [world.root / "phases-1", world.root / "phases-2"]
    children = [start_child(world, phases=log) for log in logs]
    try:
        # Both are waiting for the lock (the first report comes before the lock is tried)...
        assert [kit.wait_for_lines(log)[0] for log in logs] == ["waiting_for_lock"] * 2
        # ...one of them got it and is inside go install, holding it...
        kit.wait_for_lines(started)
        with pytest.raises(filelock.Timeout):
            filelock.FileLock(str(world.cache / "fakego" / ".lock")).acquire(timeout=0)
        time.sleep(0.3)  # ...and the other keeps polling it meanwhile.
        assert len(started.read_text().splitlines()) == 1
        gate.touch()
        outputs = [child.communicate(timeout=60) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
            leftover = child.communicate()
            if child.returncode != 0:
                print("child failed:", leftover)
    assert [child.returncode for child in children] == [0, 0], outputs
    receipts = [json.loads(out.split("receipt ", 1)[1]) for out, _ in outputs]
    assert receipts[0] == receipts[1]
    assert len(started.read_text().splitlines()) == 1, "exactly one go install ran"
    phases = sorted(log.read_text().split() for log in logs)
    # One process installed; the other said it waited for the lock the first held (a second report,
    # with a message: issue 17 item 12), then found it current once it got the lock.
    assert phases == [
        ["waiting_for_lock", "installing", "verifying", "switching", "done"],
        ["waiting_for_lock", "waiting_for_lock", "done"],
    ], phases
    assert ServerCache(world.cache, "fakego").leftovers() == []


def test_an_install_killed_with_sigkill_takes_its_go_along_and_the_next_install_sweeps_the_rest(
    world: Any, kit: Any
) -> None:
    """Issue 7 item 5: the go child dies with its owner (parent-death signal), the old version stays
    current, and the next install kills the worker the go left behind *before* removing the staging
    folder that worker keeps re-creating."""
    host = kit.plugin_host(kit.go_spec())
    asyncio.run(InstallManager(host).install("fakego", world.task()))  # v0.1.0 is current
    started = world.root / "started"
    world.orphaning_go(started)
    child = start_child(world, version="v0.2.0")
    go = worker = 0
    try:
        [line] = kit.wait_for_lines(started)
        go, worker = map(int, line.split())
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=10)
        cache = ServerCache(world.cache, "fakego")
        # The go install died with its owner; the worker it started lives on, re-parented...
        assert kit.gone(go), "go outlived the SIGKILLed install"
        assert not kit.gone(worker, timeout=0.0)
        assert any(p.name.startswith(".staging-") for p in cache.leftovers())
        # ...the server that was current still is, and still resolves.
        current = cache.current_receipt()
        assert current is not None and current.version == "v0.1.0"
        assert Resolver(host).resolve("fakego", world.task()).found
        # The kernel released the lock with the process: the next install sweeps, cleans and switches.
        (world.tools / "go").unlink()
        receipt = asyncio.run(InstallManager(host).install("fakego", world.task(), version="v0.2.0"))
        assert receipt.version == "v0.2.0"
        assert kit.gone(worker, timeout=0.0), "the next install left the dead install's worker running"
        time.sleep(0.3)  # long enough for a surviving worker to re-create the staging folder
        assert cache.leftovers() == []
        assert [name for name in os.listdir(cache.folder) if name.startswith(".owner-")] == []
        current = cache.current_receipt()
        assert current is not None and current.version == "v0.2.0"
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()
        for pid in (go, worker):
            if pid and not kit.gone(pid, timeout=0.0):
                os.kill(pid, signal.SIGKILL)
                kit.gone(pid)


def test_a_lock_held_by_a_live_process_makes_the_next_install_wait(world: Any, kit: Any) -> None:
    """The lock really excludes: while another process holds it, an install reports waiting and waits."""
    cache = ServerCache(world.cache, "fakego")
    cache.prepare()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import filelock, sys, time; lock = filelock.FileLock(sys.argv[1]); lock.acquire(); "
            "print('held', flush=True); time.sleep(1.0); lock.release()",
            str(cache.lock_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        phases: list[str] = []

        async def run() -> float:
            loop = asyncio.get_running_loop()
            began = loop.time()
            async with InstallManager(kit.plugin_host(kit.go_spec())) as manager:
                await manager.install("fakego", world.task(), progress=lambda p: phases.append(p.phase))
            return loop.time() - began

        took = asyncio.run(run())
    finally:
        holder.wait(timeout=10)
        if holder.stdout:
            holder.stdout.close()
    assert phases[0] == "waiting_for_lock" and phases[-1] == "done"
    assert took >= 0.5, f"the install did not wait for the lock ({took:.2f} s)"
    assert Path(world.cache / "fakego" / "current" / "bin" / "fakels").is_file()
