"""The broker's close codes and how an upstream close becomes a client close (K9.4-K9.12, K16.3-K16.5).

Pure decisions, table-tested: what a client sees when its lease ends, and how ``serve``'s close codes
are translated. 1005 and 1006 are never sent (they are reserved to mean "no status" and "abnormal
closure" and cannot appear in a close frame): an upstream that ends with them, or with no close frame at
all, failed as a transport, so the client gets 4009 ("the server may still run", K16.4, K16.5).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from typing import Final

from kandev_lsp.broker.leases import ControlKind, ReleaseReason

__all__ = [
    "ACK_CLOSE_REASONS",
    "CLOSE_REASONS",
    "BrokerCloseCode",
    "client_close_for_lease_end",
    "client_close_for_upstream",
    "proxy_close_for_upstream",
    "refusal_close",
]


class BrokerCloseCode(IntEnum):
    NORMAL = 1000  # after a stop / release ack; a generic client's `exit`
    GOING_AWAY = 1001  # the broker is shutting down
    POLICY_VIOLATION = 1008  # a malformed control frame
    MESSAGE_TOO_BIG = 1009
    INSTALLABLE_NOT_REQUESTED = 4001  # relayed
    SESSION_UNAVAILABLE = 4002
    INSTALL_FAILED = 4003  # relayed
    EXECUTOR_UNSUPPORTED = 4004
    CAPACITY = 4005
    SERVER_EXITED = 4006
    NO_INSTALLER = 4007  # relayed
    START_FAILED = 4008  # relayed
    CONNECTION_FAILED = 4009  # transport or broker failure while the server may still run
    # A browser request refused before anything was looked up: the upgrade is accepted and closed at
    # once with 4000 + the HTTP status a non-browser client gets (a page sees a 4xx answer as 1006 only).
    BAD_REQUEST = 4400
    UNAUTHORIZED = 4401
    FORBIDDEN = 4403
    NOT_FOUND = 4404


CLOSE_REASONS: Final[Mapping[int, str]] = {
    BrokerCloseCode.NORMAL: "",
    BrokerCloseCode.GOING_AWAY: "going away",
    BrokerCloseCode.POLICY_VIOLATION: "policy violation",
    BrokerCloseCode.MESSAGE_TOO_BIG: "message too big",
    BrokerCloseCode.INSTALLABLE_NOT_REQUESTED: "server not installed",
    BrokerCloseCode.SESSION_UNAVAILABLE: "session unavailable",
    BrokerCloseCode.INSTALL_FAILED: "install failed",
    BrokerCloseCode.EXECUTOR_UNSUPPORTED: "executor unsupported",
    BrokerCloseCode.CAPACITY: "too many language servers",
    BrokerCloseCode.SERVER_EXITED: "server stopped",
    BrokerCloseCode.NO_INSTALLER: "server unavailable",
    BrokerCloseCode.START_FAILED: "server failed to start",
    BrokerCloseCode.CONNECTION_FAILED: "connection failed",
    # A refused browser request: the error code of the HTTP answer (see ``refusal_close``).
    BrokerCloseCode.BAD_REQUEST: "bad_request",
    BrokerCloseCode.UNAUTHORIZED: "unauthorized",
    BrokerCloseCode.FORBIDDEN: "forbidden_origin",
    BrokerCloseCode.NOT_FOUND: "not_found",
}

#: The reason of the 1000 that follows the ack of a stop or a release (serve's own stop says "stopped").
ACK_CLOSE_REASONS: Final[Mapping[ControlKind, str]] = {
    ControlKind.STOP: "stopped",
    ControlKind.RELEASE: "released",
}

#: Upstream codes the client gets unchanged: the task host's own verdict on the server.
_RELAYED: Final = frozenset(
    {
        BrokerCloseCode.INSTALLABLE_NOT_REQUESTED,
        BrokerCloseCode.INSTALL_FAILED,
        BrokerCloseCode.NO_INSTALLER,
        BrokerCloseCode.START_FAILED,
        BrokerCloseCode.SERVER_EXITED,
        BrokerCloseCode.CAPACITY,  # serve's own session cap: nothing was started there either
    }
)


def client_close_for_upstream(code: int | None) -> BrokerCloseCode:
    """The client's close code when its lease's upstream ended without the broker asking.

    * serve's 4001/4003/4007/4008/4006 are relayed: the task host knows what happened to the server;
      so is its 4005 (every session slot of that ``serve`` is taken, no server was started);
    * 1000 (the server exited with status 0 by itself) and 1009 (serve stopped a server that wrote an
      oversized message) are confirmed exits: 4006;
    * 1001 (serve itself is stopping: the task host is going away) makes the session unavailable: 4002;
    * anything else (no close frame, 1005, 1006, 1011, serve's 4009, unknown codes) is a transport
      failure with no confirmed exit: 4009.
    """
    if code in _RELAYED:
        return BrokerCloseCode(code)
    if code in (1000, 1009):
        return BrokerCloseCode.SERVER_EXITED
    if code == 1001:
        return BrokerCloseCode.SESSION_UNAVAILABLE
    return BrokerCloseCode.CONNECTION_FAILED


def client_close_for_lease_end(reason: ReleaseReason, upstream_code: int | None = None) -> BrokerCloseCode:
    """The close code for a client whose lease ended under it (the book's ``EndAttachment``)."""
    if reason is ReleaseReason.RUNTIME_STOP:
        return BrokerCloseCode.SESSION_UNAVAILABLE
    if reason is ReleaseReason.BACKEND_STOP:
        return BrokerCloseCode.GOING_AWAY
    if reason is ReleaseReason.SERVER_EXIT:
        return client_close_for_upstream(upstream_code)
    # stop and editor_idle end with an ack and 1000; capacity and detached_timeout have no client.
    return BrokerCloseCode.NORMAL


#: The HTTP refusals a browser request can get, as the close code that tells its page the same thing.
_REFUSAL_CLOSE: Final[Mapping[int, BrokerCloseCode]] = {
    400: BrokerCloseCode.BAD_REQUEST,
    401: BrokerCloseCode.UNAUTHORIZED,
    403: BrokerCloseCode.FORBIDDEN,
    404: BrokerCloseCode.NOT_FOUND,
}


def refusal_close(status: int, error: str) -> tuple[BrokerCloseCode, str]:
    """The close a browser page gets for a request refused with HTTP ``status`` (issue 18 item 2): code
    ``4000 + status`` and, as the reason, the ``error`` code of the JSON body a non-browser client gets
    (``unauthorized``, ``forbidden_origin``, ``missing_language``, ...). Never retryable as it stands: a
    page must fix the request (a new ticket, another origin) before it connects again."""
    return _REFUSAL_CLOSE.get(status, BrokerCloseCode.BAD_REQUEST), error[:64]


def _sendable(code: int) -> bool:
    """Whether a close frame may carry ``code`` (RFC 6455 section 7.4)."""
    return code in (1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011) or 3000 <= code <= 4999


def proxy_close_for_upstream(code: int | None) -> int:
    """Continuity off: the upstream's close code forwarded as is, except codes no close frame may
    carry (no status, 1005, 1006, 1015, ...), which become 4009."""
    if code is None or not _sendable(code):
        return BrokerCloseCode.CONNECTION_FAILED
    return code
