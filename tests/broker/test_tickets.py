"""Page tickets as plain values (issue 18 item 1): single use, lifetime, binding, capacity, nothing kept
that could be presented, the mint body and where a request presents its ticket."""

from __future__ import annotations

import itertools

import pytest
from kandev_lsp.broker.tickets import (
    MAX_MINT_BODY,
    SUBPROTOCOL,
    BadMintRequest,
    MintRequest,
    PresentedTicket,
    RedeemFailure,
    TicketBook,
    TicketGrant,
    parse_mint_body,
    presented_ticket,
    select_subprotocol,
)
from leasekit import FakeClock

GRANT = TicketGrant("s1", "python", "alice")


def book_with(ttl: float = 30.0, capacity: int = 8) -> tuple[TicketBook, FakeClock]:
    clock = FakeClock()
    serial = itertools.count(1)
    return TicketBook(ttl, capacity, clock=clock, new_secret=lambda: f"ticket-{next(serial):08d}-x"), clock


def test_a_ticket_is_good_once_for_its_session_and_language() -> None:
    book, _ = book_with()
    ticket = book.mint(GRANT)
    assert ticket is not None
    assert book.redeem(ticket, "s1", "python", None) == GRANT
    assert book.redeem(ticket, "s1", "python", None) is RedeemFailure.UNKNOWN  # spent


@pytest.mark.parametrize(("session", "language"), [("s2", "python"), ("s1", "go"), ("s1", None)])
def test_a_mismatched_use_is_refused_and_burns_the_ticket(session: str, language: str | None) -> None:
    book, _ = book_with()
    ticket = book.mint(GRANT)
    assert ticket is not None
    assert book.redeem(ticket, session, language, None) is RedeemFailure.MISMATCH
    assert book.redeem(ticket, "s1", "python", None) is RedeemFailure.UNKNOWN  # cannot be probed


def test_a_ticket_expires_after_its_lifetime() -> None:
    book, clock = book_with(ttl=30.0)
    early, late = book.mint(GRANT), book.mint(GRANT)
    assert early is not None and late is not None
    clock.advance(29.9)
    assert book.redeem(early, "s1", "python", None) == GRANT
    clock.advance(0.1)
    assert book.redeem(late, "s1", "python", None) is RedeemFailure.EXPIRED


def test_a_ticket_bound_to_an_origin_is_good_from_that_origin_only() -> None:
    book, _ = book_with()
    bound = TicketGrant("s1", "python", "alice", "https://kandev.example")
    first, second, third = book.mint(bound), book.mint(bound), book.mint(bound)
    assert first is not None and second is not None and third is not None
    assert book.redeem(first, "s1", "python", "HTTPS://Kandev.Example:443") == bound  # as browsers send it
    assert book.redeem(second, "s1", "python", "https://evil.example") is RedeemFailure.MISMATCH
    assert book.redeem(third, "s1", "python", None) is RedeemFailure.MISMATCH


def test_capacity_counts_outstanding_tickets_and_says_when_to_retry() -> None:
    book, clock = book_with(ttl=30.0, capacity=2)
    assert book.mint(GRANT) is not None
    clock.advance(10)
    assert book.mint(GRANT) is not None
    assert book.mint(GRANT) is None  # full
    assert book.retry_after() == 21  # the oldest expires in 20 s
    clock.advance(20)
    assert book.outstanding == 1  # the oldest expired and stopped counting
    assert book.mint(GRANT) is not None


def test_the_book_keeps_no_ticket_it_could_be_shown() -> None:
    book = TicketBook(clock=FakeClock())
    ticket = book.mint(GRANT)
    assert ticket is not None and len(ticket) >= 32
    assert ticket not in repr(book)
    assert all(ticket.encode() not in key for key in book._outstanding)  # digests only
    assert book.redeem("not a ticket!", "s1", "python", None) is RedeemFailure.UNKNOWN


def test_tickets_are_url_and_subprotocol_safe() -> None:
    book = TicketBook(clock=FakeClock())
    for _ in range(50):
        ticket = book.mint(GRANT)
        assert ticket is not None
        assert set(ticket) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_the_mint_body() -> None:
    json_type = "application/json; charset=utf-8"
    assert parse_mint_body(b'{"sessionId": "s1", "language": "python"}', json_type) == MintRequest(
        "s1", "python"
    )
    full = b'{"sessionId": "s1", "language": "go", "owner": "bob", "origin": "HTTPS://K.example:443"}'
    assert parse_mint_body(full, "application/json") == MintRequest("s1", "go", "bob", "https://k.example")
    cases = [
        (b'{"sessionId": "s1", "language": "go"}', "text/plain", 415, "unsupported_media_type"),
        (b"x" * (MAX_MINT_BODY + 1), "application/json", 413, "body_too_large"),
        (b"{not json", "application/json", 400, "bad_ticket_request"),
        (b'["s1"]', "application/json", 400, "bad_ticket_request"),
        (b'{"language": "go"}', "application/json", 400, "bad_ticket_request"),
        (b'{"sessionId": "a/b", "language": "go"}', "application/json", 400, "bad_ticket_request"),
        (b'{"sessionId": "..", "language": "go"}', "application/json", 400, "bad_ticket_request"),
        (b'{"sessionId": "tickets", "language": "go"}', "application/json", 400, "bad_ticket_request"),
        (b'{"sessionId": "s1", "language": 3}', "application/json", 400, "bad_ticket_request"),
        (
            b'{"sessionId": "s1", "language": "go", "owner": "../x"}',
            "application/json",
            400,
            "bad_ticket_request",
        ),
        (
            b'{"sessionId": "s1", "language": "go", "origin": "null"}',
            "application/json",
            400,
            "bad_ticket_request",
        ),
    ]
    for body, content_type, status, error in cases:
        with pytest.raises(BadMintRequest) as caught:
            parse_mint_body(body, content_type)
        assert (caught.value.status, caught.value.error) == (status, error), body


def test_where_a_request_presents_its_ticket() -> None:
    offered = ["kandev-lsp.v1, kandev-lsp.ticket.abc123abc123abc123"]
    assert presented_ticket(offered, []) == PresentedTicket("abc123abc123abc123")
    assert presented_ticket([], ["abc123abc123abc123"]) == PresentedTicket("abc123abc123abc123")
    assert presented_ticket(offered, ["abc123abc123abc123"]).value == "abc123abc123abc123"  # same, once
    two = presented_ticket(["kandev-lsp.ticket.one1one1one1one1", "kandev-lsp.ticket.two2two2two2two2"], [])
    assert two.value is None and two.problem == "present exactly one ticket"
    assert presented_ticket(["kandev-lsp.v1"], []) == PresentedTicket()
    assert select_subprotocol(["kandev-lsp.ticket.abc", SUBPROTOCOL]) == SUBPROTOCOL
    assert select_subprotocol(["kandev-lsp.ticket.abc"]) is None  # a ticket is never echoed


def test_a_mint_body_nested_past_the_parsers_depth_is_a_400_not_a_crash() -> None:
    """3 KB of brackets (within the 4 KiB body bound) made json.loads raise RecursionError, not
    ValueError: the listener answered 500 internal_error and logged a traceback, for a request that had
    not been authenticated yet (the body is read before the authorizer is asked)."""
    body = b"[" * 1500 + b"]" * 1500
    with pytest.raises(BadMintRequest) as refused:
        parse_mint_body(body, "application/json")
    assert (refused.value.status, refused.value.error) == (400, "bad_ticket_request")
