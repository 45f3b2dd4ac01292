"""Page tickets: a credential a browser page can present on a WebSocket (issue 18 item 1), sans-io.

A browser cannot set ``Authorization`` on a WebSocket, and a cookie rides on every request whatever page
sent it. So the embedder's backend, which holds the broker's bearer token, mints a **ticket** for one page
(``POST /lsp/tickets``, :mod:`kandev_lsp.broker.ticket_route`) and hands it to the page, which presents it
once: as the subprotocol ``kandev-lsp.ticket.<ticket>`` next to ``kandev-lsp.v1`` (the broker selects
``kandev-lsp.v1``), or as ``?ticket=<ticket>``. The design follows what mature systems do for WebSocket
credentials (short-lived, single-use, bound to what it is for):

* **single-use**: a ticket is spent the first time it is presented, whatever that request turns out to
  be (a mismatched or expired use burns it too, so a ticket cannot be probed);
* **short-lived**: ``ttl`` seconds (30 by default) from minting;
* **bound** to the session id and the language it was minted for, to the owner it carries (whose
  settings the lease uses, K14.9), and optionally to a page origin;
* **hashed at rest**: the book keeps SHA-256 digests, never the ticket itself, so a memory dump or a
  ``repr`` shows nothing that could be presented;
* **timing-safe**: a presented ticket is found by its digest (a dict lookup), never compared with a
  stored ticket. What a lookup's timing could leak is how much of a *digest* matched, and the caller
  controls only the ticket: turning that into a ticket would take SHA-256 preimages (tickets are 256
  random bits). ``hmac.compare_digest`` over every outstanding ticket would cost more and add nothing;
* **single use under concurrency**: :meth:`TicketBook.redeem` finds and spends in one synchronous step
  (``dict.pop``) and the route calls it with no ``await`` in between, so two presentations of one
  ticket at the same instant cannot both pass (tests/broker/test_route_tickets.py races eight);
* **bounded**: at most ``capacity`` tickets are outstanding at once (1024 by default, each a 32-byte
  digest and a grant of four short strings: 0.86 MiB measured with every field at its longest, far
  less for real ones); minting beyond that is refused
  until the oldest expires (:meth:`TicketBook.retry_after`).

Everything here is a pure decision over plain values with an injected clock; nothing is logged.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from kandev_lsp.broker.contract import valid_session_id
from kandev_lsp.stream.origins import normalize_origin

__all__ = [
    "DEFAULT_TICKET_CAPACITY",
    "DEFAULT_TICKET_TTL",
    "MAX_MINT_BODY",
    "MAX_TICKET_TTL",
    "SUBPROTOCOL",
    "TICKET_PREFIX",
    "BadMintRequest",
    "MintRequest",
    "PresentedTicket",
    "RedeemFailure",
    "TicketBook",
    "TicketGrant",
    "parse_mint_body",
    "presented_ticket",
    "select_subprotocol",
]

#: The subprotocol the broker speaks; a page offers it, and the broker selects it (echoes it back).
SUBPROTOCOL: Final = "kandev-lsp.v1"
#: How a page presents a ticket in ``Sec-WebSocket-Protocol``: this prefix, then the ticket.
TICKET_PREFIX: Final = "kandev-lsp.ticket."
DEFAULT_TICKET_TTL: Final = 30.0
#: The longest lifetime ``kandev-lsp broker --ticket-ttl`` accepts: a ticket is presented right away.
MAX_TICKET_TTL: Final = 600.0
DEFAULT_TICKET_CAPACITY: Final = 1024
#: A mint body is two or four short strings; anything larger is not one.
MAX_MINT_BODY: Final = 4096

_LANGUAGE = re.compile(r"[A-Za-z0-9._+-]{1,64}")
#: Owners name settings files (``--owner-settings DIR``/<owner>.json): no separators, no dot names.
_OWNER = re.compile(r"[A-Za-z0-9._@+-]{1,128}")
#: What :func:`secrets.token_urlsafe` produces: URL-safe, and a valid subprotocol token (RFC 6455 4.1).
_TICKET = re.compile(r"[A-Za-z0-9_-]{16,128}")


def valid_owner(owner: str) -> bool:
    """Whether ``owner`` may name an owner (and so a settings file): 1-128 of ``A-Za-z0-9._@+-``, not
    ``.`` or ``..``."""
    return bool(_OWNER.fullmatch(owner)) and owner not in (".", "..")


@dataclass(frozen=True, slots=True)
class TicketGrant:
    """What a ticket stands for: a page of ``owner`` may open ``session_id`` for ``language`` (from
    ``origin`` when it is set)."""

    session_id: str
    language: str
    owner: str
    origin: str | None = None


# --- the mint request ----------------------------------------------------------------------------------


class BadMintRequest(ValueError):
    """A mint request refused with HTTP ``status`` (400, 413, 415) and a JSON ``error`` code."""

    def __init__(self, status: int, error: str, message: str) -> None:
        self.status = status
        self.error = error
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class MintRequest:
    """The body of ``POST /lsp/tickets``: ``sessionId`` and ``language`` (required), ``owner`` and
    ``origin`` (optional)."""

    session_id: str
    language: str
    owner: str | None = None
    origin: str | None = None


def _field(data: Mapping[str, Any], name: str, pattern: re.Pattern[str], what: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise BadMintRequest(400, "bad_ticket_request", f"`{name}` must be {what}")
    return value


def parse_mint_body(body: bytes, content_type: str | None) -> MintRequest:
    """Parse a mint request's body (a JSON object of strings).

    :raises BadMintRequest: 415 when the body is not ``application/json``, 413 over
        :data:`MAX_MINT_BODY` bytes, 400 ``bad_ticket_request`` naming the field that is wrong.
    """
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise BadMintRequest(
            415, "unsupported_media_type", "send the ticket request as Content-Type: application/json"
        )
    if len(body) > MAX_MINT_BODY:
        raise BadMintRequest(413, "body_too_large", f"a ticket request is at most {MAX_MINT_BODY} bytes")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # nested past json's depth raises the second
        raise BadMintRequest(400, "bad_ticket_request", "the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise BadMintRequest(
            400, "bad_ticket_request", 'the body must be an object: {"sessionId": ..., "language": ...}'
        )
    session = data.get("sessionId")
    if not isinstance(session, str) or not valid_session_id(session):
        raise BadMintRequest(
            400,
            "bad_ticket_request",
            "`sessionId` must be the session id of /lsp/{sessionId} (1-128 of A-Za-z0-9._~-, not . or .. "
            "or tickets)",
        )
    language = _field(data, "language", _LANGUAGE, "a language id, e.g. python (1-64 of A-Za-z0-9._+-)")
    owner = data.get("owner")
    if owner is not None and (not isinstance(owner, str) or not valid_owner(owner)):
        raise BadMintRequest(
            400, "bad_ticket_request", "`owner` must be 1-128 of A-Za-z0-9._@+- (not . or ..)"
        )
    origin = data.get("origin")
    if origin is not None:
        try:
            origin = normalize_origin(origin) if isinstance(origin, str) else None
        except ValueError:
            origin = None
        if origin is None:
            raise BadMintRequest(
                400, "bad_ticket_request", "`origin` must be a page origin, scheme://host[:port]"
            )
    return MintRequest(session, language, owner, origin)


# --- presenting a ticket -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PresentedTicket:
    """The ticket an upgrade request presents: ``value`` (``None``: none presented), or ``problem`` when
    the request presents more than one different ticket."""

    value: str | None = field(default=None, repr=False)
    problem: str | None = None


def offered_subprotocols(protocol_headers: Iterable[str]) -> list[str]:
    return [item.strip() for header in protocol_headers for item in header.split(",") if item.strip()]


def presented_ticket(protocol_headers: Iterable[str], query_tickets: Iterable[str]) -> PresentedTicket:
    """The ticket of an upgrade request, from its ``Sec-WebSocket-Protocol`` values (every copy of the
    header, each a comma-separated list) and its ``ticket`` query values. The same ticket given in both
    places counts once; two different ones are a problem (nothing is spent for them)."""
    found = {
        item[len(TICKET_PREFIX) :]
        for item in offered_subprotocols(protocol_headers)
        if item.startswith(TICKET_PREFIX)
    }
    found.update(query_tickets)
    if len(found) > 1:
        return PresentedTicket(problem="present exactly one ticket")
    return PresentedTicket(next(iter(found)) if found else None)


def select_subprotocol(offered: Iterable[str]) -> str | None:
    """The subprotocol the broker selects among those a client offers: :data:`SUBPROTOCOL` when offered,
    else none (a ticket is never echoed back)."""
    return SUBPROTOCOL if SUBPROTOCOL in offered else None


# --- the book ------------------------------------------------------------------------------------------


class RedeemFailure(StrEnum):
    """Why a presented ticket was not accepted (logged as ``why=``; the page only ever sees 4401)."""

    UNKNOWN = "unknown"  # never minted, already spent, or malformed
    EXPIRED = "expired"
    MISMATCH = "mismatch"  # minted for another session, language or origin


@dataclass(frozen=True, slots=True)
class _Outstanding:
    grant: TicketGrant
    expires_at: float


def _digest(ticket: str) -> bytes:
    return hashlib.sha256(ticket.encode("utf-8")).digest()


class TicketBook:
    """The outstanding tickets of one broker.

    :param ttl: seconds a ticket stays valid after it is minted.
    :param capacity: outstanding tickets at most (expired ones do not count).
    :param clock: monotonic seconds.
    :param new_secret: the ticket factory (tests inject a deterministic one).
    """

    def __init__(
        self,
        ttl: float = DEFAULT_TICKET_TTL,
        capacity: int = DEFAULT_TICKET_CAPACITY,
        *,
        clock: Callable[[], float],
        new_secret: Callable[[], str] = lambda: secrets.token_urlsafe(32),
    ) -> None:
        if ttl <= 0:
            raise ValueError(f"the ticket lifetime must be positive, not {ttl}")
        if capacity < 1:
            raise ValueError(f"the ticket capacity must be at least 1, not {capacity}")
        self.ttl = ttl
        self.capacity = capacity
        self._clock = clock
        self._new_secret = new_secret
        # Keyed by digest, in minting order: with one ttl for all, that is also expiry order.
        self._outstanding: dict[bytes, _Outstanding] = {}

    def __repr__(self) -> str:
        return f"TicketBook(ttl={self.ttl}, outstanding={len(self._outstanding)})"

    @property
    def outstanding(self) -> int:
        self._prune()
        return len(self._outstanding)

    def mint(self, grant: TicketGrant) -> str | None:
        """A new ticket for ``grant``, or ``None`` when ``capacity`` tickets are outstanding."""
        self._prune()
        if len(self._outstanding) >= self.capacity:
            return None
        ticket = self._new_secret()
        while _digest(ticket) in self._outstanding:  # an injected factory may repeat itself
            ticket = self._new_secret()
        self._outstanding[_digest(ticket)] = _Outstanding(grant, self._clock() + self.ttl)
        return ticket

    def retry_after(self) -> int:
        """Whole seconds until the oldest outstanding ticket expires (at least 1): when a refused mint
        may be tried again."""
        self._prune()
        oldest = next(iter(self._outstanding.values()), None)
        if oldest is None:
            return 1
        return max(1, int(oldest.expires_at - self._clock()) + 1)

    def redeem(
        self, ticket: str, session_id: str, language: str | None, origin: str | None
    ) -> TicketGrant | RedeemFailure:
        """Spend ``ticket`` for a request of ``session_id`` and ``language`` from ``origin`` (``None``:
        not a browser): its grant when it matches, else why not. Spent either way."""
        if not _TICKET.fullmatch(ticket):
            return RedeemFailure.UNKNOWN
        entry = self._outstanding.pop(_digest(ticket), None)
        if entry is None:
            return RedeemFailure.UNKNOWN
        if entry.expires_at <= self._clock():
            return RedeemFailure.EXPIRED
        grant = entry.grant
        if (grant.session_id, grant.language) != (session_id, language):
            return RedeemFailure.MISMATCH
        if grant.origin is not None and grant.origin != _normalized(origin):
            return RedeemFailure.MISMATCH
        return grant

    def discard(self, ticket: str) -> None:
        """Spend ``ticket`` unused (its request is refused for another reason): never valid again."""
        self._outstanding.pop(_digest(ticket), None)

    def _prune(self) -> None:
        now = self._clock()
        while self._outstanding:
            digest, entry = next(iter(self._outstanding.items()))
            if entry.expires_at > now:
                break
            del self._outstanding[digest]


def _normalized(origin: str | None) -> str | None:
    if origin is None:
        return None
    try:
        return normalize_origin(origin)
    except ValueError:
        return None
