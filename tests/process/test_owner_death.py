"""An owner killed with SIGKILL takes its children with it (Linux), and what they left is swept up.

The owner here is a real Python process that spawns through :func:`kandev_lsp.process.spawn` and is then
killed the way editors and users kill: SIGKILL to it, or SIGKILL to the whole process group it runs in
(eglot on shutdown and on its connect timeout). Owned children lead sessions of their own, so no group
signal reaches them: only the parent-death signal does.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest
from kandev_lsp.process import reap_marked
from kandev_lsp.process._parentdeath import parent_death_hook

if TYPE_CHECKING:  # the fixture's type; conftest is not importable under --import-mode=importlib
    from conftest import Kit

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux")

OWNER = """
import asyncio, json, sys, threading
from kandev_lsp.process import spawn
from kandev_lsp.taskenv import TaskEnvironment

config = json.loads(sys.argv[1])

async def main():
    child = await spawn(config["argv"], env=TaskEnvironment.from_agent(), cwd=config["cwd"],
                        stdout="discard", stderr="discard", owner_tokens=config["tokens"])
    print(child.pid, flush=True)
    await asyncio.sleep(600)

if config.get("thread"):
    worker = threading.Thread(target=asyncio.run, args=(main(),))
    worker.start()
    worker.join()
else:
    asyncio.run(main())
"""

#: The owned child: forks a grandchild that outlives it unless someone kills it, then waits.
CHILD = """
    import os, sys, time
    grandchild = os.fork()
    if grandchild == 0:
        publish(sys.argv[1], os.getpid())
        time.sleep(600)
        os._exit(0)
    time.sleep(600)
"""


def start_owner(kit: Kit, *, tokens: tuple[str, ...] = (), thread: bool = False) -> subprocess.Popen[str]:
    """An owner process leading its own process group (as an editor's child would), tagged like the kit."""
    config = {
        "argv": [*kit.script(CHILD), kit.pidfile("grandchild")],
        "cwd": kit.cwd,
        "tokens": list(tokens),
        "thread": thread,
    }
    return subprocess.Popen(
        [sys.executable, "-c", OWNER, json.dumps(config)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **kit.env.to_dict()},
        start_new_session=True,
    )


def wait_gone(kit: Kit, pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not kit.gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def owned_child(owner: subprocess.Popen[str]) -> int:
    assert owner.stdout is not None
    line = owner.stdout.readline()
    assert line.strip().isdigit(), f"the owner did not start its child: {line!r}"
    return int(line)


@pytest.mark.parametrize("how", ["owner", "process group"])
def test_sigkill_to_the_owner_or_its_group_kills_the_owned_child(kit: Kit, how: str) -> None:
    owner = start_owner(kit)
    try:
        child = owned_child(owner)
        asyncio.run(kit.wait_pid(kit.pidfile("grandchild")))
        assert os.getpgid(child) == child, "the child leads a group of its own: a group kill misses it"
        if how == "owner":
            os.kill(owner.pid, signal.SIGKILL)
        else:  # the owner leads its group, like `kandev-lsp run` started by eglot
            os.killpg(owner.pid, signal.SIGKILL)
        owner.wait(timeout=10)
        assert wait_gone(kit, child), "the owned child outlived its SIGKILLed owner"
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.communicate()
        kit.kill_leftovers()  # the grandchild is swept by the next test below; here just clean up


def test_the_grandchildren_of_a_dead_owner_are_swept_by_its_recorded_token(kit: Kit) -> None:
    owner = start_owner(kit, tokens=("install-record-1",))
    try:
        child = owned_child(owner)
        grandchild = asyncio.run(kit.wait_pid(kit.pidfile("grandchild")))
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(timeout=10)
        assert wait_gone(kit, child)
        # The parent-death signal reaches only the direct child: its own child lives on, re-parented...
        time.sleep(0.2)
        assert not kit.gone(grandchild)
        # ...until someone who knows the owner is gone sweeps by the token the owner recorded.
        assert asyncio.run(reap_marked(["unrelated-token"])) == ()
        assert not kit.gone(grandchild)
        assert asyncio.run(reap_marked(["install-record-1"])) == (grandchild,)
        assert kit.gone(grandchild)
        assert kit.alive() == []
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.communicate()


def test_a_child_spawned_on_a_loop_thread_dies_with_the_owner_process(kit: Kit) -> None:
    """The kernel fires the signal when the forking *thread* ends; here that thread lives until the
    process is killed, and the signal still comes."""
    owner = start_owner(kit, thread=True)
    try:
        child = owned_child(owner)
        asyncio.run(kit.wait_pid(kit.pidfile("grandchild")))
        time.sleep(0.2)
        assert not kit.gone(child), "the child must live while its owner (and the loop thread) does"
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(timeout=10)
        assert wait_gone(kit, child)
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.communicate()
        kit.kill_leftovers()


def test_no_parent_death_signal_where_the_os_has_none() -> None:
    assert parent_death_hook("darwin") is None
    assert parent_death_hook("win32") is None
    assert parent_death_hook("linux") is not None
