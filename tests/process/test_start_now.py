"""Starting a child before any event loop (``start_now``), then owning it in the loop (``adopt``).

``kandev-lsp run`` starts its server this way so that the server starts up while asyncio and the session
are imported (issue 7 item 25). The child must follow every rule :func:`spawn` follows (argv only, the
task's environment plus the owner marker, the workspace as working directory, a session of its own, the
parent-death signal), and once adopted be an ordinary :class:`OwnedProcess`: piped, captured, stopped
with its whole tree.
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
from typing import TYPE_CHECKING

import pytest
from kandev_lsp.process import (
    OWNER_VARIABLE,
    CommandNotFoundError,
    ProcessSupervisor,
    adopt,
    can_start_now,
    start_now,
)

if TYPE_CHECKING:  # the fixture's type; conftest is not importable under --import-mode=importlib
    from conftest import Kit

pytestmark = pytest.mark.skipif(not can_start_now(), reason="start_now is POSIX, Python < 3.14")

#: Says where it runs, forks a grandchild that would outlive it, then echoes stdin lines to stdout.
ECHO = """
    import json, os, sys
    grandchild = os.fork()
    if grandchild == 0:
        publish(sys.argv[1], os.getpid())
        time.sleep(600)
        os._exit(0)
    sys.stderr.write("ready\\n"); sys.stderr.flush()
    print(json.dumps({"owner": os.environ.get("KANDEV_LSP_OWNER"), "cwd": os.getcwd(),
                      "sid": os.getsid(0), "pid": os.getpid()}), flush=True)
    for line in sys.stdin:
        print("echo " + line.strip(), flush=True)
"""


def test_a_child_started_before_the_loop_is_owned_once_adopted(kit: Kit) -> None:
    said: list[str] = []
    started = start_now(
        [*kit.script(ECHO), kit.pidfile("grandchild")],
        env=kit.env,
        cwd=kit.cwd,
        stdin=True,
        on_output=said.append,
    )
    time.sleep(0.2)  # it runs (and writes) before any loop exists; the pipes hold its output

    async def scenario() -> None:
        async with ProcessSupervisor() as supervisor:
            process = await adopt(started, supervisor=supervisor)
            assert process.pid == started.pid
            assert process.stdin is not None and process.stdout is not None
            where = json.loads(await asyncio.wait_for(process.stdout.readline(), 10))
            assert where["cwd"] == os.path.realpath(kit.cwd)
            assert where["sid"] == where["pid"], "the child leads a session of its own"
            assert where["owner"] and " " not in where["owner"]
            process.stdin.write(b"hello\n")
            assert await asyncio.wait_for(process.stdout.readline(), 10) == b"echo hello\n"
            grandchild = await kit.wait_pid(kit.pidfile("grandchild"))
            # The supervisor's close stops the whole tree, the grandchild included.
        assert process.stopped
        assert kit.gone(grandchild)
        assert "ready" in "".join(said)

    asyncio.run(scenario())
    assert kit.alive() == []


def test_start_now_applies_the_one_executable_lookup(kit: Kit) -> None:
    """A bare name is looked up on the task's PATH, never in the workspace (even when PATH names it)."""
    planted = kit.workspace / "innocent-tool"
    planted.write_text("#!/bin/sh\necho pwned\n")
    planted.chmod(0o755)
    env = kit.env.with_overrides({"PATH": f"{kit.cwd}:/usr/bin:/bin"})
    with pytest.raises(CommandNotFoundError):
        start_now(["innocent-tool"], env=env, cwd=kit.cwd)


#: An owner that starts a child with start_now and is then SIGKILLed: the child must die with it.
OWNER = """
import json, sys
from kandev_lsp.process import start_now
from kandev_lsp.taskenv import TaskEnvironment
config = json.loads(sys.argv[1])
started = start_now(config["argv"], env=TaskEnvironment.from_agent(), cwd=config["cwd"],
                    stdout="discard", stderr="discard")
print(started.pid, "asyncio" in sys.modules, flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux")
def test_start_now_does_not_import_asyncio_and_sets_the_parent_death_signal(kit: Kit) -> None:
    config = {"argv": kit.script("time.sleep(600)"), "cwd": kit.cwd}
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, json.dumps(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **kit.env.to_dict()},
    )
    try:
        assert owner.stdout is not None
        pid_text, asyncio_imported = owner.stdout.readline().split()
        child = int(pid_text)
        assert asyncio_imported == "False", "start_now imported asyncio"
        assert OWNER_VARIABLE.encode() + b"=" in Path(f"/proc/{child}/environ").read_bytes()
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(timeout=10)
        deadline = time.monotonic() + 5
        while not kit.gone(child) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert kit.gone(child), "the child outlived its SIGKILLed owner"
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.communicate()
