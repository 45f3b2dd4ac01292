"""Dynamic capability registrations a server made (``client/registerCapability``), pure state (K14.4, K14.6).

The endpoint applies every ``client/registerCapability`` and ``client/unregisterCapability`` here and
answers the server itself, so a server with no client attached never waits. The broker hands the
effective registrations to a client that (re)attaches (K14.7, K17.3); the agent tools read them to learn,
for example, whether the server watches files (``workspace/didChangeWatchedFiles``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Registration", "RegistrationStore"]


@dataclass(frozen=True, slots=True)
class Registration:
    """One registration: its id, the method it registers, and the server's ``registerOptions``."""

    id: str
    method: str
    register_options: Any = None

    def to_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {"id": self.id, "method": self.method}
        if self.register_options is not None:
            value["registerOptions"] = self.register_options
        return value


class RegistrationStore:
    """The effective registrations of one server generation, in the order they were made."""

    __slots__ = ("_by_id",)

    def __init__(self) -> None:
        self._by_id: dict[str, Registration] = {}

    def register(self, params: object) -> list[Registration]:
        """Apply ``client/registerCapability`` params; return the registrations added or replaced.

        Malformed entries (no string id or method) are skipped; valid ones in the same request are kept.
        """
        added: list[Registration] = []
        for entry in _entries(params, "registrations"):
            reg_id, method = entry.get("id"), entry.get("method")
            if not isinstance(reg_id, str) or not isinstance(method, str):
                continue
            registration = Registration(reg_id, method, entry.get("registerOptions"))
            self._by_id.pop(reg_id, None)
            self._by_id[reg_id] = registration
            added.append(registration)
        return added

    def unregister(self, params: object) -> list[Registration]:
        """Apply ``client/unregisterCapability`` params; return the registrations removed.

        The specification spells the list ``unregisterations``; ``unregistrations`` is accepted too.
        """
        removed: list[Registration] = []
        entries = _entries(params, "unregisterations") or _entries(params, "unregistrations")
        for entry in entries:
            reg_id = entry.get("id")
            if isinstance(reg_id, str) and reg_id in self._by_id:
                removed.append(self._by_id.pop(reg_id))
        return removed

    def clear(self) -> None:
        self._by_id.clear()

    def for_method(self, method: str) -> list[Registration]:
        return [reg for reg in self._by_id.values() if reg.method == method]

    def snapshot(self) -> tuple[Registration, ...]:
        return tuple(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)


def _entries(params: object, key: str) -> list[Mapping[str, Any]]:
    if not isinstance(params, Mapping):
        return []
    entries = params.get(key)
    if not isinstance(entries, list):
        return []
    return [entry for entry in entries if isinstance(entry, Mapping)]
