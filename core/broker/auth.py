"""Who may use the broker's route: the ``Authorizer`` interface and the built-in bearer token (K11.5).

The route asks the authorizer before anything else is looked up: no directory lookup, lease search or
upstream connection happens for a caller it refuses. Embedders (a backend that authenticates browsers
with a session cookie) supply their own, and must then list their web app's origin in
``BrokerConfig.allowed_origins``: a browser attaches cookies to a WebSocket opened by any page, and only
the origin check (which runs before the authorizer) tells the pages apart. ``kandev-lsp broker`` uses
:class:`BearerAuthorizer`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

from kandev_lsp.stream.auth import TOKEN_ENV as _STREAM_TOKEN_ENV
from kandev_lsp.stream.auth import StreamToken, TokenError, check_bearer, load_token
from kandev_lsp.stream.handshake import Refusal, repeated_refusal
from kandev_lsp.stream.origins import OriginPolicy
from websockets.datastructures import Headers

__all__ = [
    "CREDENTIAL_HEADERS",
    "TOKEN_ENV",
    "Authorizer",
    "BearerAuthorizer",
    "Caller",
    "CallerRequest",
    "load_broker_token",
    "refusal_before_credentials",
]

TOKEN_ENV: Final = "KANDEV_LSP_BROKER_TOKEN"
#: Headers that carry a caller's credentials: sent twice, a request is refused before any is looked at.
CREDENTIAL_HEADERS: Final = ("Authorization", "Cookie")


def refusal_before_credentials(
    headers: Headers, origins: OriginPolicy
) -> tuple[Refusal, dict[str, object]] | None:
    """What every broker route (``/lsp/{sessionId}``, ``/metrics``, ``POST /lsp/tickets``) checks before
    it looks at any credential, in this order: the ``Origin`` against the allowed origins (a cookie rides
    on every request, whatever page sent it), then a repeated ``Authorization`` or ``Cookie``. The
    refusal and its log fields (``error``, and the refused origin's first 128 characters), or ``None``."""
    sent = headers.get_all("Origin")
    refusal = origins.refusal(sent)
    if refusal is not None:
        return refusal, {"error": refusal.error, "origin": sent[0][:128]}
    refusal = repeated_refusal(headers, CREDENTIAL_HEADERS)
    if refusal is not None:
        return refusal, {"error": "repeated_header"}
    return None


@dataclass(frozen=True, slots=True)
class CallerRequest:
    """What an authorizer sees: the session asked for and the request headers (lower-cased names).

    ``headers`` holds only the headers sent exactly once: a repeated header is left out, so reading it
    gives ``None`` rather than one of two values picked by position (a repeated ``Authorization`` or
    ``Cookie`` is refused before any authorizer is asked)."""

    session_id: str
    headers: Mapping[str, str] = field(repr=False)

    @property
    def origin(self) -> str | None:
        """The browser page's origin (``Origin``), already checked against the broker's allowed origins;
        ``None`` for a client that is not a browser. A cookie-based authorizer may narrow it further."""
        return self.headers.get("origin")


@dataclass(frozen=True, slots=True)
class Caller:
    """An authorized caller. ``owner`` names whose settings apply to the leases it creates (K14.9).

    ``names_owners``: the caller is a trusted backend that may mint page tickets for any owner (the
    ``owner`` field of ``POST /lsp/tickets``); other callers mint tickets for their own ``owner`` only."""

    owner: str
    names_owners: bool = False


class Authorizer(Protocol):
    async def authorize(self, request: CallerRequest) -> Caller | None:
        """The caller, or ``None`` to refuse (HTTP 401). Decide only whether this caller may use this
        session; do not resolve the session (the directory does that, after this)."""
        ...


class BearerAuthorizer:
    """``Authorization: Bearer <token>`` with one shared token, compared in constant time; every
    accepted caller is the same ``owner``. Whoever holds the token is the embedder's backend, so it may
    mint page tickets naming any owner (``Caller.names_owners``)."""

    def __init__(self, token: StreamToken, owner: str = "local") -> None:
        self._token = token
        self._owner = owner

    async def authorize(self, request: CallerRequest) -> Caller | None:
        if check_bearer(request.headers.get("authorization"), self._token.value):
            return Caller(self._owner, names_owners=True)
        return None


def load_broker_token(token_file: str | None = None, environ: Mapping[str, str] | None = None) -> StreamToken:
    """The broker's token: ``token_file``, else ``$KANDEV_LSP_BROKER_TOKEN``, else a generated one (to
    print once), with serve's rules for a usable token.

    :raises kandev_lsp.stream.auth.TokenError: unreadable file or unusable token.
    """
    environ = os.environ if environ is None else environ
    value = environ.get(TOKEN_ENV)
    try:
        return load_token(token_file, {} if value is None else {_STREAM_TOKEN_ENV: value})
    except TokenError as exc:  # name the variable the user actually set
        raise TokenError(str(exc).replace(f"${_STREAM_TOKEN_ENV}", f"${TOKEN_ENV}")) from None
