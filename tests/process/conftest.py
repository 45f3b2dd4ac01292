"""Helpers for the owned-process tests: real child processes, each tagged so a test can find them.

Every test's task environment carries ``KANDEV_TEST_TAG=<unique>``. After each test, any live process
with that tag (read straight from ``/proc``, not through the code under test) fails the test and is
killed, so one leak cannot spill into other tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from kandev_lsp.taskenv import TaskEnvironment
from kandev_lsp.testing import processes_tagged

TAG_VARIABLE = "KANDEV_TEST_TAG"

#: Shared by the child scripts: write a pid file atomically.
PUBLISH = textwrap.dedent(
    """
    import os, signal, sys, time

    def publish(path, pid):
        with open(path + ".tmp", "w") as handle:
            handle.write(str(pid))
        os.replace(path + ".tmp", path)
    """
)


def tagged_alive(tag: str) -> list[int]:
    """Live (non-zombie) processes whose environment holds this test's tag."""
    return processes_tagged(TAG_VARIABLE, tag)


def gone(pid: int) -> bool:
    """No such process, or only its zombie (which holds nothing but an exit status)."""
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


class Kit:
    """A test's workspace, task environment, scripts and pid files."""

    def __init__(self, root: Path, tag: str) -> None:
        self.root = root
        self.tag = tag
        self.workspace = root / "workspace"
        self.workspace.mkdir()
        self.scripts = root / "scripts"
        self.scripts.mkdir()
        self.env = TaskEnvironment.from_agent({TAG_VARIABLE: tag})
        self._count = 0

    @property
    def cwd(self) -> str:
        return str(self.workspace)

    def script(self, body: str) -> list[str]:
        """argv running ``body`` (with :data:`PUBLISH` prepended) with this interpreter."""
        self._count += 1
        path = self.scripts / f"child{self._count}.py"
        path.write_text(PUBLISH + textwrap.dedent(body))
        return [sys.executable, str(path)]

    def pidfile(self, name: str) -> str:
        return str(self.root / f"{name}.pid")

    async def wait_pid(self, path: str, timeout: float = 10.0) -> int:
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                raise AssertionError(f"{path} was not written within {timeout} s")
            await asyncio.sleep(0.01)
        return int(Path(path).read_text())

    def alive(self) -> list[int]:
        return tagged_alive(self.tag)

    def kill_leftovers(self, timeout: float = 5.0) -> None:
        """SIGKILL every live tagged process and wait until each is gone.

        A SIGKILL is delivered asynchronously: right after ``kill()`` returns, a loaded machine may still
        list the process as running, so a later :meth:`alive` check would count it as a leak.
        """
        deadline = time.monotonic() + timeout
        for pid in self.alive():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        while (left := [pid for pid in self.alive() if not gone(pid)]) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not left, f"tagged processes survived SIGKILL for {timeout} s: {left}"

    gone = staticmethod(gone)


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    kit = Kit(tmp_path, uuid.uuid4().hex)
    yield kit
    leaked = kit.alive()
    for pid in leaked:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not leaked, f"processes left alive by the test: {leaked}"
