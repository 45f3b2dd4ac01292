"""Fixtures of the daemon tests: a private runtime folder per test, and a caller of ``kandev-lsp code``
whose daemons (and their servers) are stopped, and checked gone, after the test.

Every process a test starts carries the suite's ``tag`` (tests/conftest.py: the daemon inherits it from
its first caller, the servers from the daemon): after each test any live one fails the test.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "stream"))
sys.path.insert(0, str(Path(__file__).parent.parent / "intel"))
sys.path.insert(0, str(Path(__file__).parent))

from daemon_kit import Caller, wait_until
from stream_testkit import RealServers, tagged_alive


@pytest.fixture
def runtime_folder() -> Iterator[Path]:
    """A private runtime folder of the test's own, short enough for a socket path (not under tmp_path,
    whose names can pass the 107 bytes a socket path may have)."""
    folder = Path(tempfile.mkdtemp(prefix="kdt"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def caller(tmp_path: Path, runtime_folder: Path, tag: str, real_servers: RealServers) -> Iterator[Caller]:
    """``kandev-lsp code`` with pyright in the managed cache, this test's runtime folder and tag; its
    daemons are stopped after the test and must be gone (with their servers) within the deadline."""
    found = Caller(tmp_path, runtime_folder, tag, real_servers.overrides())
    yield found
    found.run("--stop", check=False)
    wait_until(lambda: not tagged_alive(tag), timeout=30, what="the test's daemons and servers to exit")
