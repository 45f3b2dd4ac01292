"""What the stream route (``serve``) and the broker route read from an upgrade request's headers, and
how both refuse a request before the upgrade.

**One value per header a route acts on.** HTTP lets a client repeat a header; for ``Authorization`` (and
``Cookie``, which RFC 6265 section 5.4 also allows only once) a second copy has no defined meaning. Left
to the library, the two routes disagreed: ``serve`` crashed on websockets' ``MultipleValuesError``
(HTTP 500 and a logged traceback for every such unauthenticated request), and the broker folded the
headers into a dict where the last copy won (bad then good: accepted). Here a repeated credential header
is refused (401, a reason naming the header) before any token comparison or authorizer call, and an
authorizer is only ever shown headers that were sent once (:func:`single_headers`): it never has to pick
between two values, and one that reads a header sent twice sees it as absent, which refuses.

**One refusal shape.** :class:`Refusal` is the decision (status, error code, message) and
:func:`refuse` turns it into websockets' response: a JSON body, and ``WWW-Authenticate: Bearer`` on a
401. Both routes use it, so the body and headers of a refusal are the same wherever it comes from.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # pure module: importing it (the CLI's option parsing does) costs no websockets
    from websockets.asyncio.server import ServerConnection
    from websockets.datastructures import Headers
    from websockets.http11 import Response

__all__ = [
    "BEARER_HINT",
    "Refusal",
    "RepeatedHeader",
    "json_response",
    "refuse",
    "repeated_refusal",
    "single_headers",
    "single_value",
    "unauthorized",
]

#: What a 401 tells a caller to send.
BEARER_HINT: Final = "send Authorization: Bearer <token>"


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request refused before the upgrade: the HTTP status and the JSON body's ``error`` and
    ``message`` (what was wrong and what to send instead; never a secret or an echoed value)."""

    status: HTTPStatus
    error: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error, "message": self.message}


class RepeatedHeader(ValueError):
    """A header that must be sent at most once was sent ``count`` times."""

    def __init__(self, name: str, count: int) -> None:
        self.name = name
        self.count = count
        super().__init__(f"send exactly one {name} header (this request has {count})")


def single_value(headers: Headers, name: str) -> str | None:
    """The value of ``name`` (case-insensitive), or ``None`` when absent.

    :raises RepeatedHeader: ``name`` was sent more than once.
    """
    values = headers.get_all(name)
    if len(values) > 1:
        raise RepeatedHeader(name, len(values))
    return values[0] if values else None


def repeated_refusal(headers: Headers, names: Iterable[str]) -> Refusal | None:
    """401 for the first of ``names`` (credential headers) sent more than once, else ``None``."""
    for name in names:
        try:
            single_value(headers, name)
        except RepeatedHeader as exc:
            return unauthorized(str(exc))
    return None


def single_headers(headers: Headers) -> dict[str, str]:
    """Every header sent exactly once, by lower-cased name; a repeated header is left out entirely (an
    authorizer reading it sees it as absent rather than one of two values chosen by position)."""
    counts: dict[str, int] = {}
    values: dict[str, str] = {}
    for name, value in headers.raw_items():
        key = name.lower()
        counts[key] = counts.get(key, 0) + 1
        values[key] = value
    return {key: value for key, value in values.items() if counts[key] == 1}


def unauthorized(message: str = BEARER_HINT) -> Refusal:
    return Refusal(HTTPStatus.UNAUTHORIZED, "unauthorized", message)


def json_response(connection: ServerConnection, status: HTTPStatus, data: dict[str, Any]) -> Response:
    """An HTTP response with ``data`` as its JSON body (websockets' ``respond`` makes a text/plain one)."""
    response = connection.respond(status, json.dumps(data) + "\n")
    del response.headers["Content-Type"]
    response.headers["Content-Type"] = "application/json"
    return response


def refuse(connection: ServerConnection, refusal: Refusal) -> Response:
    """The response for ``refusal``; a 401 also carries ``WWW-Authenticate: Bearer`` (RFC 9110 11.6.1)."""
    response = json_response(connection, refusal.status, refusal.to_json())
    if refusal.status == HTTPStatus.UNAUTHORIZED:
        response.headers["WWW-Authenticate"] = "Bearer"
    return response
