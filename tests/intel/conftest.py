"""Fixtures of the intel tests: pyright and typescript-language-server installed once per run by
kandev-lsp's own installer (the stream tests' :class:`RealServers`), and a leak check for the processes
a test starts."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kandev_lsp.testing import processes_tagged

sys.path.insert(0, str(Path(__file__).parent.parent / "stream"))
sys.path.insert(0, str(Path(__file__).parent))

from stream_testkit import TAG_VARIABLE, RealServers


@pytest.fixture(scope="session")
def real_servers(tmp_path_factory: pytest.TempPathFactory) -> RealServers:
    """pyright and typescript-language-server in the managed cache of a HOME of their own (real npm)."""
    home = tmp_path_factory.mktemp("intel-real-home")
    servers = RealServers(home, tmp_path_factory.mktemp("intel-npm-cache"))
    asyncio.run(servers.install(["python", "typescript"], tmp_path_factory.mktemp("intel-install-cwd")))
    return servers


@pytest.fixture
def tag() -> Iterator[str]:
    """A unique tag for the environment of every process the test starts; leaks fail the test."""
    value = uuid.uuid4().hex
    yield value
    leaked = processes_tagged(TAG_VARIABLE, value)
    for pid in leaked:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not leaked, f"processes left running after the test: {leaked}"
