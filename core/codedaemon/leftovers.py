"""What a dead daemon left running, found by its owner token and swept up by whoever replaces it.

A daemon is started with an owner token of its own in ``KANDEV_LSP_OWNER`` (:mod:`kandev_lsp.process`'s
marker), which every server it starts, and everything those start, inherits; it records ``pid token`` in
its owner file. Killed with SIGKILL, it cannot stop its trees: its servers die with it (the parent-death
signal), but their own children (tsserver under typescript-language-server, an npm mid-install) are
re-parented and live on. The next daemon of the same name (or ``--stop`` finding a stale socket) kills
every process still carrying the token of a daemon that is gone (:func:`kandev_lsp.process.reap_marked`)
before it adds its own line. A predecessor still alive (it is stopping: its socket was left first) stops
its own trees; its line stays until it removes it, so a crash during that stop is swept later.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

__all__ = ["forget", "record", "sweep", "sweep_now"]


@contextlib.contextmanager
def _entries(path: str) -> Iterator[list[tuple[int, str]]]:
    """The ``(pid, token)`` lines of the owner file, under its lock, written back when the block ends.

    The file is read and rewritten in place under ``flock``: a successor adding its line and a
    predecessor removing its own may do so at the same moment.
    """
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(descriptor, "r+", encoding="ascii", errors="replace") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        entries: list[tuple[int, str]] = []
        for line in handle.read().splitlines():
            pid, _, token = line.partition(" ")
            if pid.isdigit() and token:
                entries.append((int(pid), token))
        yield entries
        handle.seek(0)
        handle.truncate()
        handle.writelines(f"{pid} {token}\n" for pid, token in entries)


def _alive_with(pid: int, token: str) -> bool:
    """Whether process ``pid`` is alive and carries ``token`` (so it is the daemon that recorded it)."""
    from kandev_lsp.process import owner_tokens

    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return token in owner_tokens(handle.read())
    except OSError:  # gone (a zombie's environment cannot be read either)
        return False


async def sweep(path: str) -> tuple[int, ...]:
    """Kill whatever still carries the token of a recorded daemon that is gone; keep the live ones' lines.

    Returns the pids killed.
    """
    from kandev_lsp.process import reap_marked

    with _entries(path) as entries:
        gone = [token for pid, token in entries if not _alive_with(pid, token)]
        killed = await reap_marked(gone) if gone else ()
        entries[:] = [entry for entry in entries if entry[1] not in gone]
    return killed


def sweep_now(path: str) -> tuple[int, ...]:
    """:func:`sweep` for a caller without an event loop (``--stop`` finding a stale socket)."""
    import asyncio

    return asyncio.run(sweep(path))


def record(path: str, token: str) -> None:
    """Add this daemon's line (its pid and owner token)."""
    with _entries(path) as entries:
        entries.append((os.getpid(), token))


def forget(path: str, token: str) -> None:
    """Remove this daemon's line after it stopped everything it started."""
    with _entries(path) as entries:
        entries[:] = [entry for entry in entries if entry[1] != token]
