"""The cross-process install lock of one language: ``<cache>/<language>/.lock``.

It is an OS file lock (``flock`` on Unix, ``LockFileEx`` on Windows, through :mod:`filelock`), so the
kernel releases it when its holder dies, even by ``kill -9``: a dead install never blocks the next one.
The lock is taken by polling a non-blocking attempt, so waiting never blocks the event loop and is
cancelled like any other await.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import filelock

FIRST_POLL = 0.02
MAX_POLL = 0.25


@asynccontextmanager
async def hold_file_lock(path: Path, on_wait: Callable[[], object] | None = None) -> AsyncIterator[None]:
    """Hold the file lock at ``path`` for the body of the ``async with``; wait for it without blocking.

    ``on_wait`` is called once, before waiting, when another holder has the lock: only then is there
    anything to wait for, and to tell a person about.
    """
    # A new FileLock object per holder: flock locks belong to an open file description, so two holders
    # in one process exclude each other just as two processes do.
    lock = filelock.FileLock(str(path))
    delay = FIRST_POLL
    while True:
        try:
            lock.acquire(timeout=0)
            break
        except filelock.Timeout:
            if on_wait is not None and delay == FIRST_POLL:
                on_wait()
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_POLL)
    try:
        yield
    finally:
        lock.release()
