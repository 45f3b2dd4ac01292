"""Server-facing document versions: strictly increasing per URI for the life of one server (K17.6).

A client's own version numbers are not what the server sees: a broker that outlives its clients reopens
documents for a second client whose versions start again at 1, and the agent tools re-sync files edited
on disk. This counter hands out the version every ``didOpen`` and ``didChange`` carries, and never gives
the same URI the same or a smaller number twice while the server lives, even across close and reopen.
It also records which documents are open (and with which languageId), never their text.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DocumentNotOpen", "DocumentState", "DocumentVersions"]


class DocumentNotOpen(LookupError):
    """A change or close for a document that is not open on this server."""


@dataclass(frozen=True, slots=True)
class DocumentState:
    """An open document as the server knows it."""

    uri: str
    language_id: str
    version: int


class DocumentVersions:
    """Per-URI version counters and the set of open documents of one server."""

    __slots__ = ("_last", "_open")

    def __init__(self) -> None:
        self._last: dict[str, int] = {}
        self._open: dict[str, DocumentState] = {}

    def _next(self, uri: str) -> int:
        version = self._last.get(uri, 0) + 1
        self._last[uri] = version
        return version

    def open(self, uri: str, language_id: str) -> int:
        """The version for a ``didOpen`` of ``uri`` (a document already open is reopened with a new one)."""
        version = self._next(uri)
        self._open[uri] = DocumentState(uri, language_id, version)
        return version

    def change(self, uri: str) -> int:
        """The version for a ``didChange`` of an open document.

        :raises DocumentNotOpen: ``uri`` is not open (send ``didOpen`` first).
        """
        state = self._open.get(uri)
        if state is None:
            raise DocumentNotOpen(f"{uri} is not open on this server; open it before changing it")
        version = self._next(uri)
        self._open[uri] = DocumentState(uri, state.language_id, version)
        return version

    def close(self, uri: str) -> bool:
        """Forget that ``uri`` is open (its counter is kept). Returns whether it was open."""
        return self._open.pop(uri, None) is not None

    def close_all(self) -> list[str]:
        """Close every document (a detach, K17.1); return their URIs so the caller can send ``didClose``."""
        uris = list(self._open)
        self._open.clear()
        return uris

    def current(self, uri: str) -> int | None:
        """The version the server has for an open ``uri``, or None when it is not open."""
        state = self._open.get(uri)
        return state.version if state is not None else None

    def last_version(self, uri: str) -> int:
        """The last version handed out for ``uri`` (0 when never opened), open or not."""
        return self._last.get(uri, 0)

    def counted_uris(self) -> tuple[str, ...]:
        """Every URI a version was ever handed out for, open or not: the counters this object keeps."""
        return tuple(self._last)

    def is_open(self, uri: str) -> bool:
        return uri in self._open

    def open_documents(self) -> tuple[DocumentState, ...]:
        return tuple(self._open.values())
