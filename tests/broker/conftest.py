"""The broker tests share ``leasekit`` (a settable clock, a book with readable ids) and ``routekit`` (a real
serve with gopls, a broker, clients); every server a test starts carries its tag and must be gone after it."""

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

sys.path.insert(0, str(Path(__file__).parent))

TAG = "KANDEV_TEST_TAG"


@pytest.fixture
def tag() -> Iterator[str]:
    value = uuid.uuid4().hex
    yield value
    leaked = processes_tagged(TAG, value)
    for pid in leaked:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert leaked == [], "a server outlived its test"
