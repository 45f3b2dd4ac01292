"""A supervisor owns every process it spawned, so one ``aclose()`` leaves nothing behind.

A task host gives each session (a stream, an install, a CLI run) a supervisor; whatever way the session
ends, closing the supervisor stops every tree it started, concurrently, and returns only once they are
reaped.

The supervisor knows its processes only as :class:`Stoppable` things (what it calls on them), so this module
does not import :mod:`kandev_lsp.process._owned`: ``spawn`` there hands each child to the supervisor it is
given, and the import goes one way only (the house, issue 17).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import TracebackType
from typing import Protocol

from kandev_lsp.process._errors import ProcessStartError


class Stoppable(Protocol):
    """What a supervisor needs of a process it owns (an :class:`~kandev_lsp.process.OwnedProcess`)."""

    @property
    def argv(self) -> tuple[str, ...]: ...

    @property
    def stopped(self) -> bool: ...

    async def stop(self) -> int | None: ...


class ProcessSupervisor:
    """Tracks the processes spawned with ``supervisor=self`` until they are stopped."""

    def __init__(self) -> None:
        self._owned: dict[int, Stoppable] = {}
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def live(self) -> list[Stoppable]:
        """Processes spawned here and not stopped yet (an exited child counts until it is stopped: its
        descendants may still run)."""
        return [process for process in self._owned.values() if not process.stopped]

    async def aclose(self) -> None:
        """Stop every live process tree, concurrently; return once all are reaped. Idempotent.

        Cancelling the caller does not abort the stops: they finish, then the cancellation is raised.
        """
        self._closed = True
        await stop_all(self.live())

    async def __aenter__(self) -> ProcessSupervisor:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # Used by spawn() and OwnedProcess ---------------------------------------------------------------
    def _check_open(self, command: str) -> None:
        if self._closed:
            raise ProcessStartError(
                command, "its supervisor is closed (the session is ending)", "Start it in a new session."
            )

    async def _adopt(self, process: Stoppable) -> None:
        if self._closed:  # closed while the child was starting: it must not outlive the session
            await stop_all([process])
            self._check_open(process.argv[0])
        self._owned[id(process)] = process

    def _release(self, process: Stoppable) -> None:
        self._owned.pop(id(process), None)

    def __repr__(self) -> str:
        return f"<ProcessSupervisor {'closed' if self._closed else 'open'} live={len(self.live())}>"


async def stop_all(processes: Sequence[Stoppable]) -> None:
    """Stop ``processes`` concurrently, to the end even if the caller is cancelled meanwhile (the
    cancellation is raised afterwards, so a tree is never left half-stopped)."""
    if not processes:
        return
    stopping = asyncio.gather(*(process.stop() for process in processes))
    cancelled = False
    while not stopping.done():
        try:
            await asyncio.shield(stopping)
        except asyncio.CancelledError:
            if stopping.done():
                raise
            cancelled = True
    stopping.result()
    if cancelled:
        raise asyncio.CancelledError
