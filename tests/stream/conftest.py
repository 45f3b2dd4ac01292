"""Fixtures of the stream tests: a test's world (:class:`StreamKit`), the fake server, a local release
server, and a leak check after every test (the real servers are the suite's ``real_servers`` fixture, in
tests/conftest.py).

Every child a test starts carries ``KANDEV_TEST_TAG=<unique>`` in its environment; after each test any
live process with that tag fails the test (and is killed so it cannot spill into the next one).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from stream_testkit import (
    ReleaseServer,
    StreamKit,
    fake_server_source,
    tagged_alive,
    wait_until,
    write_executable,
)


@pytest.fixture(scope="session")
def fake_executables(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The fake server as an executable script, and a script whose interpreter does not exist."""
    folder = tmp_path_factory.mktemp("fake-bin")
    fake = write_executable(folder / "fake-lsp", fake_server_source())
    bad = write_executable(folder / "bad-lsp", "print('never')\n", interpreter="/nonexistent/python3")
    return fake, bad


@pytest.fixture
def release_server() -> Iterator[ReleaseServer]:
    server = ReleaseServer()
    yield server
    server.close()


@pytest.fixture
def kit(
    tmp_path: Path, fake_executables: tuple[str, str], release_server: ReleaseServer
) -> Iterator[StreamKit]:
    tag = uuid.uuid4().hex
    world = StreamKit(tmp_path, tag, *fake_executables, release_server)
    yield world
    leaked = tagged_alive(tag)
    for pid in leaked:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not tagged_alive(tag), timeout=5)
    assert not leaked, f"processes left running after the test: {leaked}"
