"""Small JSON-RPC 2.0 helpers for LSP frame bodies, without a dependency on lsprotocol.

The bridges mostly forward bodies untouched; they only need to tell requests, responses and
notifications apart, answer a few requests themselves (``workspace/configuration``) and report errors.
Messages are plain dicts so nothing is lost when a peer sends fields we do not model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import IntEnum, StrEnum
from typing import Any, Final, TypeAlias

from kandev_lsp import jsontext
from kandev_lsp.protocol.errors import MalformedMessage

__all__ = [
    "ErrorCode",
    "MessageKind",
    "RequestId",
    "classify",
    "dump_message",
    "error_response",
    "notification",
    "parse_message",
    "request",
    "response",
]

#: A request id: JSON-RPC allows numbers and strings (LSP: ``integer | string``).
RequestId: TypeAlias = int | str

_VERSION: Final = "2.0"


class MessageKind(StrEnum):
    """What a JSON-RPC message is, as decided by :func:`classify`."""

    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"


class ErrorCode(IntEnum):
    """Error codes of JSON-RPC 2.0 and of the LSP specification."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_NOT_INITIALIZED = -32002
    UNKNOWN_ERROR_CODE = -32001
    REQUEST_FAILED = -32803
    SERVER_CANCELLED = -32802
    CONTENT_MODIFIED = -32801
    REQUEST_CANCELLED = -32800


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array (LSP does not use JSON-RPC batches)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a string" if isinstance(value, str) else "null"


def parse_message(body: bytes | str) -> dict[str, Any]:
    """Parse one frame body into a JSON object.

    :raises MalformedMessage: the body is not UTF-8, not JSON, or not a JSON object.
    """
    try:
        text = body if isinstance(body, str) else body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise MalformedMessage(
            f"a message body is not valid UTF-8 (byte {error.start}); LSP bodies are UTF-8 JSON"
        ) from None
    try:
        message = jsontext.loads(text)
    except json.JSONDecodeError as error:
        raise MalformedMessage(
            f"a message body is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except jsontext.UnacceptableJson as error:
        # Too deeply nested, an integer with too many digits, NaN/Infinity, a number out of range.
        raise MalformedMessage(f"a message body is not acceptable JSON: {error}") from None
    if not isinstance(message, dict):
        raise MalformedMessage(f"a message body must be a JSON object, got {_json_type(message)}")
    return message


def dump_message(message: Mapping[str, Any]) -> bytes:
    """Serialise a message to compact UTF-8 JSON, ready for :func:`~kandev_lsp.protocol.encode_frame`.

    :raises ValueError: the message holds NaN or Infinity, which JSON cannot carry.
    :raises TypeError: the message holds a value JSON cannot represent.
    """
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _valid_id(value: object) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


def classify(message: Mapping[str, Any]) -> MessageKind:
    """Tell whether a parsed message is a request, a notification or a response.

    :raises MalformedMessage: the object is not a JSON-RPC 2.0 message.
    """
    if message.get("jsonrpc") != _VERSION:
        raise MalformedMessage('a message lacks "jsonrpc": "2.0"')
    if "method" in message:
        if not isinstance(message["method"], str):
            raise MalformedMessage('a message has a "method" that is not a string')
        if "id" not in message:
            return MessageKind.NOTIFICATION
        if not _valid_id(message["id"]):
            raise MalformedMessage('a request has an "id" that is neither an integer nor a string')
        return MessageKind.REQUEST
    if "id" not in message:
        raise MalformedMessage('a message has neither "method" nor "id"')
    # A response to a request whose id could not be read carries "id": null.
    if message["id"] is not None and not _valid_id(message["id"]):
        raise MalformedMessage('a response has an "id" that is neither an integer, a string nor null')
    if ("result" in message) == ("error" in message):
        raise MalformedMessage('a response must carry exactly one of "result" and "error"')
    return MessageKind.RESPONSE


def request(id: RequestId, method: str, params: Any = None) -> dict[str, Any]:
    """Build a request. ``params=None`` omits the member (some servers reject ``"params": null``)."""
    message: dict[str, Any] = {"jsonrpc": _VERSION, "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Any = None) -> dict[str, Any]:
    """Build a notification. ``params=None`` omits the member."""
    message: dict[str, Any] = {"jsonrpc": _VERSION, "method": method}
    if params is not None:
        message["params"] = params
    return message


def response(id: RequestId | None, result: Any) -> dict[str, Any]:
    """Build a successful response; ``result=None`` is sent as ``"result": null`` as JSON-RPC requires."""
    return {"jsonrpc": _VERSION, "id": id, "result": result}


def error_response(id: RequestId | None, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """Build an error response; ``id=None`` answers a request whose id could not be read.

    ``data=None`` omits the member. ``code`` is usually an :class:`ErrorCode`.
    """
    error: dict[str, Any] = {"code": int(code), "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": _VERSION, "id": id, "error": error}
