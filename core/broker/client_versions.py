"""The client's own document versions behind the server-facing ones (issue 18 item 5, K17.6), sans-io.

The server sees versions the broker hands out, strictly increasing per URI for the lease's life (K17.6),
so a page that reopens a file at version 1 after a reload is version 2 at the server, and its edits at 2
and 3 are 3 and 4 there. A client that drops diagnostics for versions it never had (the common rule)
would drop every publication. So each attachment's own versions are kept, per URI, for the documents it
has open: a publication for server-facing version N goes to the client with the client's version of the
``didOpen`` / ``didChange`` that became N. Only the latest :data:`KEPT_VERSIONS` of each document are
kept: a publication older than that is stale for the client anyway and is not shown.
"""

from __future__ import annotations

from typing import Final

__all__ = ["KEPT_VERSIONS", "ClientVersions"]

#: Versions kept per open document: a server answers within a few edits, never 64 behind.
KEPT_VERSIONS: Final = 64


class ClientVersions:
    """Server-facing version -> the attached client's version, per open URI."""

    __slots__ = ("_by_uri",)

    def __init__(self) -> None:
        self._by_uri: dict[str, dict[int, int]] = {}

    def record(self, uri: str, server_version: int, client_version: object) -> None:
        """The client's ``didOpen`` / ``didChange`` of ``uri`` carried ``client_version`` and went to the
        server as ``server_version``. A client version that is not an integer is not kept."""
        versions = self._by_uri.setdefault(uri, {})
        if isinstance(client_version, int) and not isinstance(client_version, bool):
            versions[server_version] = client_version
            while len(versions) > KEPT_VERSIONS:
                del versions[next(iter(versions))]

    def client_version(self, uri: str, server_version: int) -> int | None:
        """The client's version for ``server_version`` of ``uri``; ``None`` when it is not known."""
        return self._by_uri.get(uri, {}).get(server_version)

    def knows(self, uri: str) -> bool:
        """Whether the client opened ``uri`` (on this attachment) with versions of its own."""
        return bool(self._by_uri.get(uri))

    def forget(self, uri: str | None = None) -> None:
        """The client closed ``uri`` (or left: every URI)."""
        if uri is None:
            self._by_uri.clear()
        else:
            self._by_uri.pop(uri, None)

    def __len__(self) -> int:
        return sum(len(versions) for versions in self._by_uri.values())
