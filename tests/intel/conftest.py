"""Fixtures of the intel tests: a leak check for the processes a test starts. pyright and
typescript-language-server come from the suite's ``real_servers`` fixture (tests/conftest.py), installed
once per run."""

from __future__ import annotations

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

from stream_testkit import TAG_VARIABLE


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
