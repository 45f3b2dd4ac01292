"""Is a server ready, meaning it will now give complete answers? Pure, fed by the endpoint's messages.

Each language declares how its server says so (:class:`~kandev_lsp.language.Readiness`, overridable by
the ``kandev_lsp_readiness`` hook):

* ``immediate``: ready once ``initialize`` is answered (gopls);
* ``progress``: ready when a work-done progress item has ended and none is active (pyright and
  typescript-language-server: tsls answers hover and definition from a syntax-only server first, and
  those early answers are incomplete); stays ready once reached;
* ``server_status``: ready while the last ``experimental/serverStatus`` said ``quiescent: true``
  (rust-analyzer); it may become busy again;
* ``notification``: ready once the declared notification arrived (kotlin-lsp); stays ready;
* with any kind, a ``window/logMessage`` matching the declared ``log_message`` pattern (after
  ``initialize`` was answered) also makes the server ready for good (pyright reports no progress when
  its analysis is short, but always logs ``Found N source files``);
* with any kind, the first ``ready_on_notification`` (after ``initialize`` was answered) also makes the
  server ready for good (typescript-language-server's first diagnostics: it reports no progress while
  it loads a project without a ``tsconfig.json``).

Nothing is ready before ``initialize`` is answered. :meth:`ReadinessTracker.status` says ready or not,
with what the server reports (progress titles, its status message, elapsed time), so a caller that gives
up after ``Readiness.timeout`` reports why instead of returning a silently incomplete answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kandev_lsp.language import Readiness, ReadinessKind
from kandev_lsp.lsp.progress import ProgressSnapshot

__all__ = ["LOG_MESSAGE", "SERVER_STATUS", "ReadinessStatus", "ReadinessTracker"]

LOG_MESSAGE = "window/logMessage"
#: rust-analyzer's status notification (client capability ``experimental.serverStatusNotification``).
SERVER_STATUS = "experimental/serverStatus"


@dataclass(frozen=True, slots=True)
class ReadinessStatus:
    """Ready or not, and what the server reports.

    ``waiting_for`` says in words what readiness still waits for (empty when ready); ``progress`` lists
    the titles of active work-done progress, oldest first; ``server_message`` is the last status message
    (rust-analyzer); ``elapsed`` counts from when tracking started; ``timed_out`` is true once ``elapsed``
    passed the language's readiness timeout without readiness.
    """

    ready: bool
    kind: ReadinessKind
    waiting_for: str
    progress: tuple[str, ...]
    server_message: str | None
    elapsed: float
    timed_out: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "kind": self.kind.value,
            "waitingFor": self.waiting_for,
            "progress": list(self.progress),
            "serverMessage": self.server_message,
            "elapsed": round(self.elapsed, 3),
            "timedOut": self.timed_out,
        }


class ReadinessTracker:
    """Readiness of one server generation under one :class:`~kandev_lsp.language.Readiness` declaration.

    Feed it :meth:`initialized` when ``initialize`` is answered, :meth:`observe` for every notification
    (with the endpoint's current progress snapshot) and ask :meth:`status` with the current time.
    """

    def __init__(self, readiness: Readiness, *, started_at: float) -> None:
        self.readiness = readiness
        self.started_at = started_at
        self.ready_at: float | None = None
        self._initialized = False
        self._latched = False
        self._quiescent = False
        self._server_message: str | None = None
        self._progress: ProgressSnapshot | None = None

    def initialized(self, now: float, progress: ProgressSnapshot | None = None) -> bool:
        """``initialize`` was answered; returns whether the server is ready now."""
        self._initialized = True
        if progress is not None:
            self._progress = progress
        return self._update(now)

    def observe(self, method: str, params: Any, now: float, progress: ProgressSnapshot | None = None) -> bool:
        """Take one server notification into account; returns whether the server is ready now."""
        if progress is not None:
            self._progress = progress
        kind = self.readiness.kind
        if method == SERVER_STATUS and isinstance(params, Mapping):
            message = params.get("message")
            self._server_message = message if isinstance(message, str) else None
            if kind is ReadinessKind.SERVER_STATUS:
                self._quiescent = params.get("quiescent") is True
        elif (kind is ReadinessKind.NOTIFICATION and method == self.readiness.notification) or (
            method == self.readiness.ready_on_notification and self._initialized
        ):
            self._latched = True
        elif method == LOG_MESSAGE and self.readiness.log_message is not None and self._initialized:
            message = params.get("message") if isinstance(params, Mapping) else None
            if isinstance(message, str) and re.search(self.readiness.log_message, message):
                self._latched = True
        return self._update(now)

    def _decide(self) -> bool:
        if not self._initialized:
            return False
        kind = self.readiness.kind
        if kind is ReadinessKind.IMMEDIATE:
            return True
        if kind is ReadinessKind.SERVER_STATUS:
            return self._quiescent
        if kind is ReadinessKind.PROGRESS and not self._latched:
            progress = self._progress
            self._latched = progress is not None and progress.ended_count > 0 and not progress.active
        return self._latched

    def _update(self, now: float) -> bool:
        ready = self._decide()
        if ready and self.ready_at is None:
            self.ready_at = now
        elif not ready and self.readiness.kind is ReadinessKind.SERVER_STATUS:
            self.ready_at = None
        return ready

    @property
    def ready(self) -> bool:
        return self._decide()

    def status(self, now: float) -> ReadinessStatus:
        ready = self._decide()
        kind = self.readiness.kind
        if ready:
            waiting = ""
        elif not self._initialized:
            waiting = "the answer to initialize"
        elif kind is ReadinessKind.PROGRESS:
            waiting = "the server's first work-done progress to end"
            if self.readiness.ready_on_notification:
                waiting += f" or its first {self.readiness.ready_on_notification}"
        elif kind is ReadinessKind.SERVER_STATUS:
            waiting = "the server to report itself quiescent (experimental/serverStatus)"
        else:
            waiting = f"the server's {self.readiness.notification} notification"
        titles = tuple(item.title for item in self._progress.active) if self._progress else ()
        elapsed = max(0.0, now - self.started_at)
        return ReadinessStatus(
            ready,
            kind,
            waiting,
            titles,
            self._server_message,
            elapsed,
            not ready and elapsed > self.readiness.timeout,
        )
