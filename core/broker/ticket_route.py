"""``POST /lsp/tickets``: the embedder's backend mints a page ticket (issue 18 item 1; the credential
itself is :mod:`kandev_lsp.broker.tickets`).

Checked in this order, each refusal a JSON body as the WebSocket route's are: the path (404), a browser's
``Origin`` against the allowed origins (403, before any credential is looked at, as on every route),
a repeated credential header (401), the body (415 / 413 / 400: its format is public, and the session it
names is what the authorizer is asked about), the authorizer (401), an ``owner`` the caller may not name
(403), the ticket capacity (429 with ``Retry-After``). A minted ticket is answered ``201`` with
``Cache-Control: no-store`` and never logged.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Final

from kandev_lsp.broker.auth import Authorizer, CallerRequest, refusal_before_credentials
from kandev_lsp.broker.listener import PlainRequest, PlainResponse
from kandev_lsp.broker.tickets import BadMintRequest, TicketBook, TicketGrant, parse_mint_body
from kandev_lsp.session import log_event
from kandev_lsp.stream.handshake import Refusal, single_headers, unauthorized
from kandev_lsp.stream.origins import OriginPolicy, normalize_origin

__all__ = ["TICKETS_ROUTE", "TicketRoute"]

log = logging.getLogger("kandev_lsp.broker")

TICKETS_ROUTE: Final = "/lsp/tickets"


def _answer(status: HTTPStatus, error: str, message: str, *headers: tuple[str, str]) -> PlainResponse:
    return PlainResponse(status, {"error": error, "message": message}, headers)


def _refused(refusal: Refusal, **fields: object) -> PlainResponse:
    """The answer to a refused mint, logged ``ticket_refused`` with ``fields`` (``error``: the
    refusal's unless they name one)."""
    logged = {"error": refusal.error, **fields}
    log_event(log, "ticket_refused", logging.WARNING, status=int(refusal.status), **logged)
    extra = [("WWW-Authenticate", "Bearer")] if refusal.status == HTTPStatus.UNAUTHORIZED else []
    return _answer(refusal.status, refusal.error, refusal.message, *extra)


class TicketRoute:
    """Mints tickets into ``book`` for callers ``authorizer`` accepts."""

    def __init__(self, book: TicketBook, authorizer: Authorizer, origins: OriginPolicy) -> None:
        self.book = book
        self._authorizer = authorizer
        self._origins = origins

    async def answer(self, request: PlainRequest) -> PlainResponse:
        path = request.target.split("?", 1)[0]
        if path != TICKETS_ROUTE:
            return _answer(
                HTTPStatus.NOT_FOUND,
                "not_found",
                "the broker answers POST /lsp/tickets; editors connect with GET /lsp/{sessionId}",
            )
        refused = refusal_before_credentials(request.headers, self._origins)
        if refused is not None:
            refusal, fields = refused
            return _refused(refusal, **fields)
        origins = request.headers.get_all("Origin")
        try:
            wanted = parse_mint_body(request.body, request.headers.get("Content-Type"))
        except BadMintRequest as exc:
            log_event(log, "ticket_refused", logging.WARNING, status=exc.status, error=exc.error)
            return _answer(HTTPStatus(exc.status), exc.error, str(exc))
        caller = await self._authorizer.authorize(
            CallerRequest(wanted.session_id, single_headers(request.headers))
        )
        if caller is None:
            return _refused(unauthorized())
        if wanted.owner is not None and wanted.owner != caller.owner and not caller.names_owners:
            return _refused(
                Refusal(
                    HTTPStatus.FORBIDDEN,
                    "owner_not_allowed",
                    "this caller mints tickets for its own owner only; leave `owner` out",
                )
            )
        # A ticket minted from a browser page is good for that page's origin only.
        page_origin = None
        if origins:
            try:
                page_origin = normalize_origin(origins[0])
            except ValueError:  # `null` under an allow-list of `*`: nothing to bind the ticket to
                return _refused(
                    Refusal(
                        HTTPStatus.FORBIDDEN,
                        "forbidden_origin",
                        "a page with an opaque origin (null) cannot mint a ticket",
                    )
                )
        origin = wanted.origin or page_origin
        grant = TicketGrant(wanted.session_id, wanted.language, wanted.owner or caller.owner, origin)
        ticket = self.book.mint(grant)
        if ticket is None:
            retry = self.book.retry_after()
            log_event(log, "ticket_refused", logging.WARNING, status=429, error="too_many_tickets")
            return _answer(
                HTTPStatus.TOO_MANY_REQUESTS,
                "too_many_tickets",
                f"{self.book.capacity} tickets are outstanding; each expires {self.book.ttl:g} s after "
                f"it was minted: retry in {retry} s",
                ("Retry-After", str(retry)),
            )
        log_event(
            log,
            "ticket_minted",
            language=wanted.language[:32],
            bound_origin=int(origin is not None),
            outstanding=self.book.outstanding,
        )
        expires = int(self.book.ttl) if float(self.book.ttl).is_integer() else self.book.ttl
        return PlainResponse(
            HTTPStatus.CREATED, {"ticket": ticket, "expiresIn": expires}, (("Cache-Control", "no-store"),)
        )
