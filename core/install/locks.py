"""The cross-process install lock of one language: ``<cache>/<language>/.lock``.

It is an OS file lock (``flock`` on Unix, ``LockFileEx`` on Windows, through :mod:`filelock`), so the
kernel releases it when its holder dies, even by ``kill -9``: a dead install never blocks the next one.
The lock is taken by polling a non-blocking attempt, so waiting never blocks the event loop and is
cancelled like any other await.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import filelock

FIRST_POLL = 0.02
MAX_POLL = 0.25


@asynccontextmanager
async def hold_file_lock(path: Path) -> AsyncIterator[None]:
    """Hold the file lock at ``path`` for the body of the ``async with``; wait for it without blocking."""
    # A new FileLock object per holder: flock locks belong to an open file description, so two holders
    # in one process exclude each other just as two processes do.
    lock = filelock.FileLock(str(path))
    delay = FIRST_POLL
    while True:
        try:
            lock.acquire(timeout=0)
            break
        except filelock.Timeout:
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_POLL)
    try:
        yield
    finally:
        lock.release()
