"""A supervisor owns every process it spawned, so one ``aclose()`` leaves nothing behind.

A task host gives each session (a stream, an install, a CLI run) a supervisor; whatever way the session
ends, closing the supervisor stops every tree it started, concurrently, and returns only once they are
reaped.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from kandev_lsp.process._errors import ProcessStartError
from kandev_lsp.process._owned import OwnedProcess


class ProcessSupervisor:
    """Tracks the processes spawned with ``supervisor=self`` until they are stopped."""

    def __init__(self) -> None:
        self._owned: dict[int, OwnedProcess] = {}
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def live(self) -> list[OwnedProcess]:
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

    async def _adopt(self, process: OwnedProcess) -> None:
        if self._closed:  # closed while the child was starting: it must not outlive the session
            await stop_all([process])
            self._check_open(process.argv[0])
        self._owned[id(process)] = process

    def _release(self, process: OwnedProcess) -> None:
        self._owned.pop(id(process), None)

    def __repr__(self) -> str:
        return f"<ProcessSupervisor {'closed' if self._closed else 'open'} live={len(self.live())}>"


async def stop_all(processes: list[OwnedProcess]) -> None:
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
