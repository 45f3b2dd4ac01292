"""Client request ids mapped to server-facing ids, with the lease's bounds (K15.1-K15.8), sans-io.

A lease outlives its clients, so a client's ids cannot go to the server as they are: two attachments
(a tab before and after a reload) may both use id 1, and a reply meant for a client that has left must
not reach the next one. The broker gives every forwarded request a fresh server-facing id, never reused
for the lease's lifetime, and remembers which attachment generation and client id it belongs to.

Bounds, checked before anything is forwarded (K15.4):

* at most ``max_pending`` (256) pending client requests per lease (K15.1);
* at most ``max_id_bytes`` (256) per id: a string id's UTF-8 bytes, a number's decimal digits (K15.2);
* at most ``max_tracked_bytes`` (64 KiB) of tracked state per lease, where one pending request costs
  ``entry_cost`` (128) plus the bytes of its id and of its method name (K15.3).

A request pending for ``timeout`` (30 s) is cancelled toward the server and answered with an error
(K15.5). Ending a generation (detach) drops its pending requests, whose late replies are then unknown
and dropped (K15.8).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from kandev_lsp.protocol.jsonrpc import ErrorCode, RequestId, error_response, notification

__all__ = [
    "DEFAULT_REQUEST_TIMEOUT",
    "Forward",
    "PendingRequest",
    "Refuse",
    "RequestBounds",
    "RequestMap",
    "TimedOut",
    "cancel_notification",
    "id_size",
    "with_id",
]

CANCEL_METHOD: Final = "$/cancelRequest"
#: How long a client request may wait for the server's answer before it is cancelled (K15.5).
DEFAULT_REQUEST_TIMEOUT: Final = 30.0
_Key: TypeAlias = tuple[int, bool, RequestId]  # generation, is-a-string, id: 1 and "1" are different ids


@dataclass(frozen=True, slots=True)
class RequestBounds:
    max_pending: int = 256
    max_id_bytes: int = 256
    max_tracked_bytes: int = 64 * 1024
    entry_cost: int = 128
    timeout: float = DEFAULT_REQUEST_TIMEOUT


@dataclass(frozen=True, slots=True)
class PendingRequest:
    server_id: int
    generation: int
    client_id: RequestId
    method: str
    deadline: float
    cost: int


@dataclass(frozen=True, slots=True)
class Forward:
    """Send the request to the server with ``server_id`` in place of the client's id."""

    server_id: int


@dataclass(frozen=True, slots=True)
class Refuse:
    """Answer the client with ``error`` (a JSON-RPC error response) and forward nothing."""

    error: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TimedOut:
    """A request the server did not answer in time: send ``cancel`` to the server and ``error`` to the
    client of ``generation`` (if it is still attached)."""

    request: PendingRequest
    cancel: dict[str, Any]
    error: dict[str, Any]


def id_size(request_id: RequestId) -> int:
    """The size of an id as the bounds count it: UTF-8 bytes of a string, decimal digits of a number."""
    if isinstance(request_id, str):
        return len(request_id.encode("utf-8"))
    return len(str(request_id))


def with_id(message: Mapping[str, Any], request_id: RequestId) -> dict[str, Any]:
    """A copy of ``message`` with its ``id`` replaced (the rest is untouched)."""
    return {**message, "id": request_id}


def cancel_notification(server_id: int) -> dict[str, Any]:
    return notification(CANCEL_METHOD, {"id": server_id})


def _key(generation: int, client_id: RequestId) -> _Key:
    return (generation, isinstance(client_id, str), client_id)


class RequestMap:
    """The pending client requests of one lease, keyed both ways.

    :param clock: monotonic seconds, for the timeouts.
    """

    def __init__(self, bounds: RequestBounds = RequestBounds(), *, clock: Callable[[], float]) -> None:
        self.bounds = bounds
        self._clock = clock
        self._next_id = 0
        self._by_server: dict[int, PendingRequest] = {}
        self._by_client: dict[_Key, int] = {}
        self._tracked = 0

    @property
    def pending(self) -> int:
        return len(self._by_server)

    @property
    def tracked_bytes(self) -> int:
        return self._tracked

    def next_server_id(self) -> int:
        """A server-facing id never used before on this lease (the broker's own requests use it too)."""
        self._next_id += 1
        return self._next_id

    def admit(self, generation: int, client_id: RequestId, method: str) -> Forward | Refuse:
        """A client request arrives: give it a server-facing id, or refuse it within the bounds."""
        size = id_size(client_id)
        bounds = self.bounds
        if size > bounds.max_id_bytes:
            return self._refuse(
                client_id, f"request id is {size} bytes; the broker accepts at most {bounds.max_id_bytes}"
            )
        if len(self._by_server) >= bounds.max_pending:
            return self._refuse(
                client_id,
                f"{bounds.max_pending} requests are already pending on this lease; "
                "wait for answers (or cancel some) before sending more",
            )
        cost = bounds.entry_cost + size + len(method.encode("utf-8"))
        if self._tracked + cost > bounds.max_tracked_bytes:
            return self._refuse(
                client_id,
                f"pending requests on this lease would exceed {bounds.max_tracked_bytes} bytes of tracked "
                "state; wait for answers before sending more",
            )
        key = _key(generation, client_id)
        if key in self._by_client:
            return Refuse(
                error_response(
                    client_id, ErrorCode.INVALID_REQUEST, "this id is already used by a pending request"
                )
            )
        server_id = self.next_server_id()
        entry = PendingRequest(server_id, generation, client_id, method, self._clock() + bounds.timeout, cost)
        self._by_server[server_id] = entry
        self._by_client[key] = server_id
        self._tracked += cost
        return Forward(server_id)

    def complete(self, server_id: RequestId) -> PendingRequest | None:
        """The server answered ``server_id``: the pending request it belongs to, now done; ``None`` for
        an id this map does not know (a late reply after a timeout or a detach: drop it, K15.8)."""
        if not isinstance(server_id, int) or isinstance(server_id, bool):
            return None
        entry = self._by_server.get(server_id)
        if entry is None:
            return None
        self._forget(entry)
        return entry

    def cancel(self, generation: int, client_id: RequestId) -> int | None:
        """A client ``$/cancelRequest``: the server-facing id to cancel, or ``None`` when that request is
        not pending (already answered: drop the notification). The request stays pending: the server
        still answers it, usually with RequestCancelled (K15.7)."""
        return self._by_client.get(_key(generation, client_id))

    def end_generation(self, generation: int) -> list[PendingRequest]:
        """The attachment ``generation`` left: its pending requests are dropped and returned, so the
        caller sends ``$/cancelRequest`` for each to the server (K15.8)."""
        ended = [entry for entry in self._by_server.values() if entry.generation == generation]
        for entry in ended:
            self._forget(entry)
        return ended

    def reject_all(self) -> list[PendingRequest]:
        """Stop: every pending request, dropped and returned for a RequestCancelled answer (K16.2)."""
        entries = list(self._by_server.values())
        for entry in entries:
            self._forget(entry)
        return entries

    def next_deadline(self) -> float | None:
        # Insertion order is deadline order: every request gets the same timeout from its arrival.
        return next(iter(self._by_server.values())).deadline if self._by_server else None

    def expire(self) -> list[TimedOut]:
        """The requests whose timeout passed, dropped, with the cancel and the error to send (K15.5)."""
        now = self._clock()
        expired: list[TimedOut] = []
        for entry in list(self._by_server.values()):
            if entry.deadline > now:
                break
            self._forget(entry)
            message = (
                f"request timed out: the server did not answer {entry.method[:64]} within "
                f"{self.bounds.timeout:g} s, so the broker cancelled it"
            )
            expired.append(
                TimedOut(
                    entry,
                    cancel_notification(entry.server_id),
                    error_response(entry.client_id, ErrorCode.REQUEST_FAILED, message),
                )
            )
        return expired

    def _forget(self, entry: PendingRequest) -> None:
        del self._by_server[entry.server_id]
        del self._by_client[_key(entry.generation, entry.client_id)]
        self._tracked -= entry.cost

    @staticmethod
    def _refuse(client_id: RequestId, message: str) -> Refuse:
        return Refuse(error_response(client_id, ErrorCode.REQUEST_FAILED, message))
