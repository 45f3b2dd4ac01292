"""A cancellation token that any thread can set and any event loop can wait on.

Installs and runs are cancelled from places that are not the awaiting task: a CLI's signal handler, a
WebSocket that closed on another task, a thread of the host agent. ``asyncio.Task.cancel`` needs the task
and the loop; a :class:`CancelToken` needs neither, so the one who decides and the one who stops a
process tree stay decoupled. Setting it is one-way and idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

__all__ = ["CancelToken"]


class CancelToken:
    """A one-way flag: :meth:`set` from any thread, ``await`` :meth:`wait` on any event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def is_set(self) -> bool:
        """Whether :meth:`set` was called (a method, like ``threading.Event.is_set``)."""
        return self._set

    def set(self) -> None:
        """Request cancellation; wakes every waiter, whichever thread or loop it is on."""
        with self._lock:
            if self._set:
                return
            self._set = True
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits there any more
                loop.call_soon_threadsafe(_resolve, future)

    async def wait(self) -> None:
        """Return once the token is set (at once if it already is)."""
        if self._set:
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        entry = (loop, future)
        with self._lock:
            if self.is_set():  # set by another thread since the check above
                return
            self._waiters.append(entry)
        try:
            await future
        finally:
            with self._lock:
                if entry in self._waiters:
                    self._waiters.remove(entry)

    def __repr__(self) -> str:
        return f"<CancelToken {'set' if self._set else 'not set'}>"


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
