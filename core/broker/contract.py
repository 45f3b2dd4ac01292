"""The broker's wire contract as plain values: the route, its query, the ready frame, control frames
and their acks (docs/broker-contract.md). Pure, so the contract is tested without a socket.

The route is checked in two parts because authentication sits between them (K11.5): the path first
(404), then the caller (401), then the query (400), so an unauthenticated caller learns nothing about
which languages or hints are valid.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from kandev_lsp.stream.contract import frame_text

__all__ = [
    "ROUTE_PREFIX",
    "BadBrokerRequest",
    "BrokerQuery",
    "Control",
    "ControlError",
    "ControlName",
    "ReadyInfo",
    "ack_frame",
    "initialized_frame",
    "parse_broker_path",
    "parse_broker_query",
    "parse_control",
    "ready_frame",
    "valid_session_id",
]

ROUTE_PREFIX: Final = "/lsp/"
#: ``/lsp/tickets`` is the ticket route (``POST``), never a session.
RESERVED_SESSION: Final = "tickets"
_SESSION = re.compile(r"[A-Za-z0-9._~-]{1,128}")
_HINT = re.compile(r"[A-Za-z0-9_-]{1,128}")
_TRUE: Final = frozenset({"1", "true"})
_FALSE: Final = frozenset({"0", "false", ""})
_MAX_CONTROL_ID: Final = 64


class BadBrokerRequest(ValueError):
    """The upgrade request is refused before the upgrade with HTTP ``status`` and a JSON body."""

    def __init__(self, status: int, error: str, message: str) -> None:
        self.status = status
        self.error = error
        super().__init__(message)

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error, "message": str(self)}


@dataclass(frozen=True, slots=True)
class BrokerQuery:
    language: str
    lease_hint: str | None = field(repr=False)  # a routing hint: never shown, never logged (K12.11)
    auto_install: bool


def valid_session_id(session: str) -> bool:
    """Whether ``session`` can be the ``{sessionId}`` of ``/lsp/{sessionId}``: 1-128 of
    ``A-Za-z0-9._~-``, not ``.``, ``..`` or the reserved ``tickets``. The route and the ticket route's
    body (:func:`~kandev_lsp.broker.tickets.parse_mint_body`) hold session ids to this one rule."""
    return bool(_SESSION.fullmatch(session)) and session not in (".", "..", RESERVED_SESSION)


def parse_broker_path(target: str) -> str:
    """The session id of ``/lsp/{sessionId}``.

    :raises BadBrokerRequest: 404 for any other path, a session segment outside
        ``[A-Za-z0-9._~-]{1,128}`` (percent-encoded characters included), or the reserved ``tickets``.
    """
    path = urlsplit(target).path
    session = path[len(ROUTE_PREFIX) :] if path.startswith(ROUTE_PREFIX) else ""
    if not valid_session_id(session):
        raise BadBrokerRequest(
            404,
            "not_found",
            "the broker serves GET /lsp/{sessionId}?language=L (and POST /lsp/tickets to mint a ticket)",
        )
    return session


def _one(query: Mapping[str, list[str]], name: str, error: str) -> str | None:
    values = query.get(name, [])
    if len(values) > 1:
        raise BadBrokerRequest(400, error, f"`{name}` is given more than once")
    return values[0] if values else None


def parse_broker_query(target: str) -> BrokerQuery:
    """``language`` (exactly one), ``lease`` (optional hint), ``autoInstall`` (optional, as serve's).

    :raises BadBrokerRequest: 400 with ``missing_language``, ``bad_lease_hint`` (the value is never
        echoed) or ``bad_auto_install``.
    """
    query = parse_qs(urlsplit(target).query, keep_blank_values=True)
    language = _one(query, "language", "missing_language")
    if not language:
        raise BadBrokerRequest(
            400,
            "missing_language",
            "the route needs exactly one `language` query parameter, e.g. ?language=python",
        )
    hint = _one(query, "lease", "bad_lease_hint")
    if hint is not None and not _HINT.fullmatch(hint):
        raise BadBrokerRequest(
            400,
            "bad_lease_hint",
            "`lease` must be the lease id from a ready frame (1-128 of A-Z a-z 0-9 _ -)",
        )
    raw = (_one(query, "autoInstall", "bad_auto_install") or "").lower()
    if raw not in _TRUE | _FALSE:
        raise BadBrokerRequest(400, "bad_auto_install", "`autoInstall` must be 1, true, 0 or false")
    return BrokerQuery(language, hint, raw in _TRUE)


# --- frames the broker sends --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadyInfo:
    """What the ``ready`` frame tells a client about its lease (K17.3, K5.3, K2.3)."""

    language: str
    workspace_path: str
    workspace_uri: str
    lease_id: str = field(repr=False)
    resumed: bool
    server_generation: int
    capabilities: Mapping[str, Any] | None = None
    server_info: Mapping[str, Any] | None = None
    position_encoding: str = "utf-16"
    registrations: Sequence[Mapping[str, Any]] = ()
    progress: Mapping[str, Any] | None = None
    suppressed_providers: Sequence[str] = ()
    initialize_sent_at_ms: int | None = None
    #: The server got ``initialized``: the handshake is complete (not merely answered; item 3).
    initialized: bool = False
    #: The server's error answer to the lease's ``initialize`` (then ``capabilities`` stays null).
    initialize_error: Mapping[str, Any] | None = None


def ready_frame(info: ReadyInfo) -> str:
    """serve's ready frame (``status``, ``language``, ``workspacePath``, ``workspaceUri``) extended with
    the lease fields, so a client written for serve's stream works unchanged."""
    return frame_text(
        {
            "status": "ready",
            "language": info.language,
            "workspacePath": info.workspace_path,
            "workspaceUri": info.workspace_uri,
            "lease": info.lease_id,
            "resumed": info.resumed,
            "serverGeneration": info.server_generation,
            "capabilities": info.capabilities,
            "serverInfo": info.server_info,
            "positionEncoding": info.position_encoding,
            "registrations": list(info.registrations),
            "progress": info.progress if info.progress is not None else {"active": [], "lastEnded": None},
            "suppressedProviders": list(info.suppressed_providers),
            "initializeSentAt": info.initialize_sent_at_ms,
            "initialized": info.initialized,
            "initializeError": info.initialize_error,
        }
    )


def initialized_frame(
    capabilities: Mapping[str, Any] | None,
    server_info: Mapping[str, Any] | None,
    position_encoding: str,
    suppressed_providers: Sequence[str],
    error: Mapping[str, Any] | None = None,
) -> str:
    """What a client that resumed while the lease's ``initialize`` was still pending (its ready frame
    said ``capabilities: null``) is told once the server answered (issue 18 item 4): the retained
    result's fields, as the ready frame names them, or the server's error."""
    if error is not None:
        return frame_text({"status": "initialize_failed", "error": dict(error)})
    return frame_text(
        {
            "status": "initialized",
            "capabilities": capabilities,
            "serverInfo": server_info,
            "positionEncoding": position_encoding,
            "suppressedProviders": list(suppressed_providers),
        }
    )


# --- control frames a client sends --------------------------------------------------------------------


class ControlName(StrEnum):
    STOP = "stop"
    RELEASE = "release"
    ATTACHMENT_READY = "attachment-ready"


@dataclass(frozen=True, slots=True)
class Control:
    name: ControlName
    id: str | int | None = None


@dataclass(frozen=True, slots=True)
class ControlError:
    """A control frame the broker cannot act on; answer with :meth:`ack` (``ok: false``)."""

    name: str
    id: str | int | None
    error: str

    def ack(self) -> str:
        return ack_frame(self.name, self.id, ok=False, error=self.error)


def parse_control(message: Mapping[str, Any]) -> Control | ControlError | None:
    """A parsed client frame as a control frame; ``None`` when it is not one (it has ``jsonrpc``, or no
    ``control`` key) and belongs to the LSP stream."""
    if "jsonrpc" in message or "control" not in message:
        return None
    raw_name = message["control"]
    name = raw_name[:32] if isinstance(raw_name, str) else "?"
    raw_id = message.get("id")
    if raw_id is not None and (
        isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or len(str(raw_id)) > _MAX_CONTROL_ID
    ):
        return ControlError(name, None, "bad_id")
    try:
        control = ControlName(raw_name)
    except ValueError:
        return ControlError(name, raw_id, "unknown_control")
    if control is ControlName.RELEASE and message.get("reason", "editor_idle") != "editor_idle":
        return ControlError(name, raw_id, "unknown_reason")
    return Control(control, raw_id)


def ack_frame(
    name: str,
    control_id: str | int | None,
    *,
    ok: bool = True,
    confirmed: bool | None = None,
    error: str | None = None,
) -> str:
    """``{"ack": name, "id": ..., "ok": ...}`` plus ``confirmed`` (stop / release: was the task host's
    cleanup confirmed) or ``error``."""
    data: dict[str, Any] = {"ack": name, "id": control_id, "ok": ok}
    if confirmed is not None:
        data["confirmed"] = confirmed
    if error is not None:
        data["error"] = error
    return frame_text(data)
