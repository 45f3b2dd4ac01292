"""Published diagnostics, keyed by URI, with the document version and server generation they belong to.

Fed by the endpoint from ``textDocument/publishDiagnostics``. A publication of an older server generation
is dropped (a late message from a server that was replaced), and so is a publication whose version is
older than the one already stored for that URI. Readers ask whether a URI's diagnostics belong to the
document version they care about (K17.7: a resumed lease forwards only publications whose version equals
the current server-facing version; the agent tools' freshness). Unversioned publications keep
``version=None`` so a caller can apply K17.8 (hidden until a fresh generation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DiagnosticsEntry", "DiagnosticsStore"]


@dataclass(frozen=True, slots=True)
class DiagnosticsEntry:
    """The latest publication for one URI."""

    uri: str
    version: int | None
    generation: int
    diagnostics: tuple[Any, ...]
    received_at: float

    def matches(self, version: int | None) -> bool:
        """Whether this publication is for document version ``version`` exactly."""
        return self.version is not None and self.version == version


class DiagnosticsStore:
    """Latest diagnostics per URI for one server generation."""

    __slots__ = ("_entries", "generation")

    def __init__(self, generation: int = 1) -> None:
        self.generation = generation
        self._entries: dict[str, DiagnosticsEntry] = {}

    def reset(self, generation: int) -> None:
        """A new server generation starts without diagnostics."""
        self.generation = generation
        self._entries.clear()

    def publish(self, params: object, now: float, generation: int | None = None) -> DiagnosticsEntry | None:
        """Apply ``publishDiagnostics`` params; return the stored entry, or None when it was dropped."""
        if generation is not None and generation != self.generation:
            return None
        if not isinstance(params, Mapping):
            return None
        uri = params.get("uri")
        diagnostics = params.get("diagnostics")
        if not isinstance(uri, str) or not isinstance(diagnostics, list):
            return None
        version = params.get("version")
        if isinstance(version, bool) or not isinstance(version, int):
            version = None
        previous = self._entries.get(uri)
        if (
            previous is not None
            and version is not None
            and previous.version is not None
            and version < previous.version
        ):
            return None
        entry = DiagnosticsEntry(uri, version, self.generation, tuple(diagnostics), now)
        self._entries[uri] = entry
        return entry

    def get(self, uri: str) -> DiagnosticsEntry | None:
        return self._entries.get(uri)

    def clear(self, uri: str | None = None) -> None:
        """Forget one URI's diagnostics, or all of them (a detach, K17.2)."""
        if uri is None:
            self._entries.clear()
        else:
            self._entries.pop(uri, None)

    def snapshot(self) -> dict[str, DiagnosticsEntry]:
        return dict(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
