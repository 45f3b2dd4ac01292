"""A cancellation token that any thread can set and any event loop can wait on.

Installs and runs are cancelled from places that are not the awaiting task: a CLI's signal handler, a
WebSocket that closed on another task, a thread of the host agent. ``asyncio.Task.cancel`` needs the task
and the loop; a :class:`CancelToken` needs neither, so the one who decides and the one who stops a
process tree stay decoupled. Setting it is one-way and idempotent.

:class:`SignalCancel` connects the signals that ask a command-line run to stop (SIGINT, SIGTERM,
SIGHUP) to a token, and :func:`die_by_signal` ends the process by the signal that stopped it once the
cleanup is done, so the caller (a shell, an editor, a supervisor) sees "killed by SIGTERM" exactly as it
would from a program that had no cleanup to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from types import TracebackType

__all__ = ["CANCEL_SIGNALS", "CancelToken", "SignalCancel", "die_by_signal"]

#: The signals that ask a run to stop: Ctrl-C, a polite kill, a closed terminal or an editor quitting.
CANCEL_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


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


class SignalCancel:
    """While entered (on the running loop, from the main thread), :data:`CANCEL_SIGNALS` set ``token``
    instead of killing the process; :attr:`received` is the first one that came. Later signals are
    recorded and ignored: the cleanup they would interrupt is bounded (interrupt, grace, kill).

    Where the loop cannot handle signals (Windows, a thread other than the main one) it does nothing,
    and the usual ``KeyboardInterrupt`` path applies.
    """

    def __init__(self, token: CancelToken) -> None:
        self.token = token
        self.received: int | None = None
        self._installed: list[int] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def _on_signal(self, signum: int) -> None:
        if self.received is None:
            self.received = signum
        self.token.set()

    async def __aenter__(self) -> SignalCancel:
        self._loop = asyncio.get_running_loop()
        for signum in CANCEL_SIGNALS:
            try:
                self._loop.add_signal_handler(signum, self._on_signal, int(signum))
            except (NotImplementedError, RuntimeError, ValueError):
                continue
            self._installed.append(int(signum))
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._loop is not None
        for signum in self._installed:
            self._loop.remove_signal_handler(signum)
        self._installed.clear()


def die_by_signal(signum: int) -> None:
    """End this process by ``signum`` with its default action (after the caller cleaned up), so a parent
    sees the signal, not an exit status; falls back to exit status 128 + ``signum`` if the process
    survives it (a signal the OS does not let us die by)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(OSError, ValueError):
        signal.signal(signum, signal.SIG_DFL)
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
    os._exit(128 + signum)
