"""The task-host stream's wire contract as plain values: route, query, status frames, close codes.

Everything here is pure, so the contract is tested without a socket, and documented once in
``docs/stream-contract.md``. Close reasons stay short and generic; the detail goes to the logs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kandev_lsp import codes
from kandev_lsp.protocol.errors import MalformedMessage
from kandev_lsp.protocol.jsonrpc import parse_message

ROUTE = "/api/v1/lsp/stream"

#: ``autoInstall`` values; anything else is a 400, so a typo never silently means "no".
_TRUE_VALUES = frozenset({"1", "true"})
_FALSE_VALUES = frozenset({"0", "false", ""})


class CloseCode(IntEnum):
    """WebSocket close codes of the stream (4001-4009 follow the task host's reference contract, K9).

    A code tells the client what it can do next (the server still runs, or it is gone and a new
    connection starts a new one); the reason text and the log say why.
    """

    NORMAL = 1000  # the client closed; or the server exited after the client's shutdown + exit
    GOING_AWAY = codes.CLOSE_GOING_AWAY  # install cancelled by the client, or `serve`'s teardown
    PROTOCOL_ERROR = 1002  # a malformed WebSocket frame (sent by the WebSocket layer itself)
    INVALID_DATA = 1007  # a client message that is not UTF-8 (RFC 6455 section 8.1)
    MESSAGE_TOO_BIG = 1009  # a message over the size limit, in either direction
    INSTALLABLE_NOT_REQUESTED = codes.CLOSE_INSTALLABLE_NOT_REQUESTED
    INSTALL_FAILED = codes.CLOSE_INSTALL_FAILED
    CAPACITY = codes.CLOSE_CAPACITY  # serve's concurrent-session cap is reached: nothing started
    #: The server is gone: it exited unexpectedly, closed or corrupted its output, stopped reading its
    #: input, or was stopped because the client stopped reading (reason "client too slow").
    SERVER_FAILED = 4006
    NO_INSTALLER = codes.CLOSE_NO_INSTALLER
    START_FAILED = codes.CLOSE_START_FAILED
    #: Reserved, never sent by ``serve``: the transport or broker failed while the server may still run
    #: (K9.12). A broker in front of ``serve`` uses it as specified.
    TRANSPORT_FAILED = 4009


#: The close reason for each code: short and generic on purpose (details are logged, not sent).
CLOSE_REASONS: Mapping[int, str] = {
    CloseCode.NORMAL: "",
    CloseCode.GOING_AWAY: "going away",
    CloseCode.PROTOCOL_ERROR: "protocol error",
    CloseCode.INVALID_DATA: "invalid UTF-8",
    CloseCode.MESSAGE_TOO_BIG: "message too big",
    CloseCode.INSTALLABLE_NOT_REQUESTED: "server not installed",
    CloseCode.INSTALL_FAILED: "install failed",
    CloseCode.CAPACITY: "too many language servers",
    CloseCode.SERVER_FAILED: "server stopped",
    CloseCode.NO_INSTALLER: "server unavailable",
    CloseCode.START_FAILED: "server failed to start",
    CloseCode.TRANSPORT_FAILED: "transport failed",
}
#: The close code for each way no server could be had (keyed by :class:`kandev_lsp.lifecycle.LaunchFailure`
#: values; the numbers live in :mod:`kandev_lsp.codes`, which ``resolve --json`` reads without this module).
LAUNCH_CLOSE_CODES: Mapping[str, CloseCode] = {
    failure: CloseCode(code) for failure, code in codes.LAUNCH_CLOSE_CODES.items()
}

#: The close code ``kandev-lsp resolve --json`` reports as ``closeCode`` for each missing reason
#: (:class:`kandev_lsp.resolver.MissingReason` values); an unknown language has none.
MISSING_CLOSE_CODES: Mapping[str, CloseCode] = {
    reason: CloseCode(code) for reason, code in codes.MISSING_CLOSE_CODES.items()
}


def launch_close_code(failure: str) -> CloseCode:
    """The close code for a :class:`~kandev_lsp.lifecycle.LaunchFailure` (pure)."""
    return LAUNCH_CLOSE_CODES[failure]


#: The reason of a 4006 sent because the client stopped reading (the server was stopped for it).
CLIENT_TOO_SLOW = "client too slow"
#: The reason of the 1000 that answers a ``{"control":"stop"}`` frame, sent once the tree is reaped.
STOPPED = "stopped"

#: How every control frame starts, and the largest one looked at: a client frame is inspected only when
#: it is this small and starts with these bytes, so JSON-RPC traffic costs one ``startswith`` (a JSON-RPC
#: message always has ``"jsonrpc"``, so it is never taken for a control frame).
CONTROL_PREFIX = b'{"control"'
MAX_CONTROL_FRAME = 1024


def control_object(body: bytes, limit: int = MAX_CONTROL_FRAME) -> dict[str, Any] | None:
    """A client message as a control frame's object (pure): it starts with ``{"control"``, is at most
    ``limit`` bytes, and parses to an object without a ``jsonrpc`` key; ``None`` for anything else, which
    is traffic. The one parse behind :func:`is_stop_frame` and :func:`settings_request`."""
    if len(body) > limit or not body.startswith(CONTROL_PREFIX):
        return None
    try:  # the one strict parser: a body nested past json's depth is refused, not a RecursionError
        data = parse_message(body)
    except MalformedMessage:
        return None
    return data if "jsonrpc" not in data else None


def is_stop_frame(body: bytes, frame: Mapping[str, Any] | None = None) -> bool:
    """Whether a client message is the stop request ``{"control":"stop"}`` (pure), at most
    :data:`MAX_CONTROL_FRAME` bytes.

    The object must have ``"control": "stop"`` and no ``jsonrpc`` key (other keys, e.g. an ``id``, are
    ignored). Anything else, including a JSON-RPC message that merely mentions ``control``, is traffic.
    ``frame``: the message's :func:`control_object`, when the caller has parsed it already.
    """
    if len(body) > MAX_CONTROL_FRAME:
        return False
    frame = control_object(body) if frame is None else frame
    return frame is not None and frame.get("control") == "stop"


def stop_frame() -> str:
    """The stop request a stream client (the broker) sends: stop the server, reap it, then close 1000."""
    return frame_text({"control": "stop"})


#: The largest settings frame looked at: one language's configuration, as ``lsp_server_configs`` holds it.
MAX_SETTINGS_FRAME = 256 * 1024
#: The control frames ``serve`` acts on, named in its ready frame (``controls``) so a client knows.
CONTROLS = ("settings", "stop")


@dataclass(frozen=True, slots=True)
class SettingsRequest:
    """A client's ``{"control":"settings"[,"settings":{...}]}``: ``settings`` is this language's
    configuration, to use in place of the settings file's from now on (the broker's lease owner's,
    K14.9); ``None`` asks to re-read the settings file now (K14.11)."""

    settings: Mapping[str, Any] | None


def settings_request(body: bytes, frame: Mapping[str, Any] | None = None) -> SettingsRequest | None:
    """A client message as a settings request (pure), under the stop frame's rules: it starts with
    ``{"control"``, is at most :data:`MAX_SETTINGS_FRAME` bytes, parses to ``"control": "settings"`` without
    ``jsonrpc``, and its ``settings``, when present, is an object. Anything else is traffic (``None``).
    ``frame``: the message's :func:`control_object` (up to :data:`MAX_SETTINGS_FRAME`), when parsed
    already."""
    if len(body) > MAX_SETTINGS_FRAME:
        return None
    frame = control_object(body, MAX_SETTINGS_FRAME) if frame is None else frame
    if frame is None or frame.get("control") != "settings":
        return None
    settings = frame.get("settings")
    if settings is not None and not isinstance(settings, dict):
        return None
    return SettingsRequest(settings)


def refused_control(frame: Mapping[str, Any], size: int) -> str:
    """serve's answer to a control frame it does not act on (pure): ``frame`` is the message's
    :func:`control_object`, ``size`` its length. Such a frame is never the server's: a language server
    takes an object that is not JSON-RPC for a broken stream (gopls exits on one)."""
    name = frame.get("control")
    if name == "settings" and size > MAX_SETTINGS_FRAME:
        error = "too_large"
    elif name in ("stop", "settings"):
        error = "bad_request"  # a stop over 1 KiB; settings that are not an object
    else:
        error = "unknown_control"
    shown = name[:64] if isinstance(name, str) else "?"
    return frame_text({"ack": shown, "ok": False, "error": error})


def settings_frame(settings: Mapping[str, Any] | None = None) -> str:
    """The settings request a stream client (the broker) sends."""
    return frame_text(
        {"control": "settings"} if settings is None else {"control": "settings", "settings": settings}
    )


def settings_ack(changed: bool) -> str:
    """serve's answer to a settings request, once ``workspace/didChangeConfiguration`` (if the server's
    settings changed and it is initialized) is on its way to the server's stdin."""
    return frame_text({"ack": "settings", "changed": changed})


class BadStreamRequest(ValueError):
    """The upgrade request's query is invalid; answered with HTTP 400 before the upgrade."""

    def __init__(self, error: str, message: str, **extra: Any) -> None:
        self.error = error
        self.extra = extra
        super().__init__(message)

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error, "message": str(self), **self.extra}


@dataclass(frozen=True, slots=True)
class StreamRequest:
    """What a client asked for in ``GET /api/v1/lsp/stream?language=L&autoInstall=1``."""

    language: str
    auto_install: bool


def route_of(target: str) -> str:
    """The path of a request target, without its query."""
    return urlsplit(target).path


def parse_stream_query(target: str) -> StreamRequest:
    """Parse the request target's query.

    :raises BadStreamRequest: ``language`` missing or repeated, or ``autoInstall`` not one of
        ``1``/``true``/``0``/``false``.
    """
    query = parse_qs(urlsplit(target).query, keep_blank_values=True)
    languages = query.get("language", [])
    if len(languages) != 1 or not languages[0]:
        raise BadStreamRequest(
            "missing_language",
            "the stream needs exactly one `language` query parameter, e.g. ?language=python",
        )
    values = query.get("autoInstall", [])
    if len(values) > 1:
        raise BadStreamRequest("bad_auto_install", "`autoInstall` is given more than once")
    raw = values[0].lower() if values else ""
    if raw in _TRUE_VALUES:
        auto_install = True
    elif raw in _FALSE_VALUES:
        auto_install = False
    else:
        raise BadStreamRequest(
            "bad_auto_install", "`autoInstall` must be 1, true, 0 or false", value=values[0][:32]
        )
    return StreamRequest(languages[0], auto_install)


def unknown_language(language: str, known: list[str]) -> BadStreamRequest:
    return BadStreamRequest(
        "unknown_language",
        f"unknown language {language[:64]!r}; this host serves: {', '.join(known) or 'none'}",
        language=language[:64],
        languages=known,
    )


#: Half of a surrogate pair on its own: ``json.loads`` gives one for the escape ``"\\ud800"``, which JSON
#: allows and JavaScript's ``JSON.stringify`` writes for a string holding one.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def frame_text(data: Mapping[str, Any]) -> str:
    """``data`` as the text of one WebSocket message: compact JSON, non-ASCII written as itself, and a
    lone surrogate escaped as the peer that sent it wrote it. Written raw (``ensure_ascii=False`` alone)
    a lone surrogate is not UTF-8, so no text frame can carry it: sending raised ``UnicodeEncodeError``
    and dropped the connection it was meant for. (A pair is one code point once parsed, written as
    itself.) Outside a string JSON text is ASCII, so every surrogate found is inside one."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def installing_frame(language: str) -> str:
    return frame_text({"status": "installing", "language": language})


def installed_frame(language: str) -> str:
    return frame_text({"status": "installed", "language": language})


def install_failed_frame(language: str, error: str) -> str:
    return frame_text({"status": "install_failed", "language": language, "error": error})


def ready_frame(language: str, workspace_path: str, workspace_uri: str) -> str:
    return frame_text(
        {
            "status": "ready",
            "language": language,
            "workspacePath": workspace_path,
            "workspaceUri": workspace_uri,
            "controls": list(CONTROLS),
        }
    )
