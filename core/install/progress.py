"""Install progress: what callers see while an install runs.

One install may be awaited by several callers (two editors opening the same language at once). The
install reports to a :class:`ProgressFanout`, which forwards every report to each caller still waiting.
A caller whose callback raises is dropped from the fanout, so a broken listener (a closed socket) never
breaks an install others wait for.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

Phase = Literal["waiting_for_lock", "downloading", "installing", "verifying", "switching", "done"]
PHASES: tuple[Phase, ...] = (
    "waiting_for_lock",
    "downloading",
    "installing",
    "verifying",
    "switching",
    "done",
)

log = logging.getLogger("kandev_lsp.install")

#: Byte-count reports closer together than this are dropped (the last one of a download is always kept).
BYTES_INTERVAL = 0.1


@dataclass(frozen=True, slots=True)
class InstallProgress:
    """One progress report. ``bytes_done``/``bytes_total`` are set while downloading (``total`` None when
    the server sent no length)."""

    language: str
    phase: Phase
    bytes_done: int | None = None
    bytes_total: int | None = None
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "phase": self.phase,
            "bytesDone": self.bytes_done,
            "bytesTotal": self.bytes_total,
            "message": self.message,
        }


ProgressCallback = Callable[[InstallProgress], None]


class ProgressFanout:
    """Forwards one install's reports to every caller still waiting for it."""

    def __init__(self, language: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.language = language
        self.last: InstallProgress | None = None
        self._listeners: dict[int, ProgressCallback] = {}
        self._next = 0
        self._clock = clock
        self._last_bytes_at = float("-inf")

    def add(self, callback: ProgressCallback) -> int:
        """Start forwarding to ``callback``; it first gets the latest phase, if the install has one."""
        key = self._next
        self._next += 1
        self._listeners[key] = callback
        if self.last is not None:
            self._deliver(key, callback, self.last)
        return key

    def remove(self, key: int) -> None:
        self._listeners.pop(key, None)

    def phase(self, phase: Phase, message: str = "") -> None:
        self._emit(InstallProgress(self.language, phase, message=message))

    def bytes(self, done: int, total: int | None, message: str = "") -> None:
        """A download's byte count, rate-limited so a fast download does not flood a slow listener."""
        now = self._clock()
        finished = total is not None and done >= total
        if not finished and now - self._last_bytes_at < BYTES_INTERVAL:
            return
        self._last_bytes_at = now
        self._emit(InstallProgress(self.language, "downloading", done, total, message))

    def _emit(self, report: InstallProgress) -> None:
        self.last = report
        for key, callback in list(self._listeners.items()):
            self._deliver(key, callback, report)

    def _deliver(self, key: int, callback: ProgressCallback, report: InstallProgress) -> None:
        try:
            callback(report)
        except Exception as exc:
            log.warning("install progress listener for %s failed and was dropped: %r", self.language, exc)
            self._listeners.pop(key, None)
