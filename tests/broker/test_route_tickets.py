"""Page tickets on the broker's listener (issue 18 items 1-2): ``POST /lsp/tickets`` mints them, an
upgrade presents one (subprotocol or query) and the broker selects ``kandev-lsp.v1``; a refused browser
request is upgraded and closed at once with 4400 / 4401 / 4403 / 4404, nothing looked up, while a client
without ``Origin`` keeps its HTTP answer.

Before the fix a page had no credential it could send: every token placement a browser can use got an
HTTP 401, which a page sees as close 1006 with no reason (the same as a network failure, retried by K18).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

import httpx
import pytest
import routekit
from kandev_lsp.broker.auth import Authorizer, BearerAuthorizer, Caller, CallerRequest
from kandev_lsp.broker.route import BrokerConfig, BrokerServer
from kandev_lsp.stream.auth import StreamToken
from routekit import BROKER_TOKEN, SpyDirectory, closed_with, execution_for, fake_upstream, ready
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

KANDEV = "https://kandev.example"
OTHER = "https://other.kandev.example"
BEARER = {"Authorization": f"Bearer {BROKER_TOKEN}"}
REFUSALS = (4400, 4401, 4403, 4404)


def broker_with(
    directory: SpyDirectory | None = None, authorizer: Authorizer | None = None, **config: Any
) -> contextlib.AbstractAsyncContextManager[tuple[BrokerServer, SpyDirectory]]:
    """routekit's broker, with the two page origins allowed unless ``config`` says otherwise."""
    config.setdefault("allowed_origins", (KANDEV, OTHER))
    return routekit.broker_with(directory, authorizer, **config)


async def mint(server: BrokerServer, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.post(
            server.url.replace("ws://", "http://") + "/lsp/tickets",
            json=body,
            headers=BEARER if headers is None else headers,
        )


async def ticket_for(server: BrokerServer, session: str = "s1", language: str = "go", **extra: str) -> str:
    answer = await mint(server, {"sessionId": session, "language": language, **extra})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["ticket"])


async def page(
    server: BrokerServer,
    ticket: str | None,
    target: str = "/lsp/s1?language=go",
    origin: str | None = KANDEV,
    in_query: bool = False,
) -> tuple[str | None, int | None, str | None]:
    """A browser page's connection: (selected subprotocol, close code, close reason)."""
    protocols = ["kandev-lsp.v1"]
    if ticket is not None and not in_query:
        protocols.append(f"kandev-lsp.ticket.{ticket}")
    if ticket is not None and in_query:
        target = f"{target}&ticket={ticket}"
    async with connect(
        f"{server.url}{target}",
        subprotocols=protocols,  # type: ignore[arg-type]
        origin=origin,  # type: ignore[arg-type]
    ) as ws:
        code, reason = await closed_with(ws)
        return ws.subprotocol, code, reason


def test_the_mint_route_answers_as_documented() -> None:
    async def scenario() -> None:
        async with broker_with() as (server, directory):
            answer = await mint(server, {"sessionId": "s1", "language": "go"})
            assert answer.status_code == 201
            assert answer.headers["Cache-Control"] == "no-store"
            assert answer.json()["expiresIn"] == 30 and len(answer.json()["ticket"]) >= 32
            refused = await mint(server, {"sessionId": "s1", "language": "go"}, headers={})
            assert refused.status_code == 401 and refused.headers["WWW-Authenticate"] == "Bearer"
            assert refused.json()["error"] == "unauthorized"
            wrong = await mint(
                server, {"sessionId": "s1", "language": "go"}, {"Authorization": "Bearer nope"}
            )
            assert wrong.status_code == 401
            bad = await mint(server, {"sessionId": "s1"})
            assert bad.status_code == 400 and "`language`" in bad.json()["message"]
            async with httpx.AsyncClient() as http:
                base = server.url.replace("ws://", "http://")
                typed = await http.post(f"{base}/lsp/tickets", content=b"sessionId=s1", headers=BEARER)
                assert typed.status_code == 415
                elsewhere = await http.post(f"{base}/lsp/s1", json={}, headers=BEARER)
                assert elsewhere.status_code == 404
                page_mint = await http.post(
                    f"{base}/lsp/tickets",
                    json={"sessionId": "s1", "language": "go"},
                    headers={**BEARER, "Origin": "https://evil.example"},
                )
                assert page_mint.status_code == 403 and page_mint.json()["error"] == "forbidden_origin"
                connect_route = await http.get(f"{base}/lsp/tickets", headers=BEARER)
                assert connect_route.status_code == 404  # "tickets" is not a session id
            assert directory.lookups == 0  # minting looks nothing up

    asyncio.run(scenario())


def test_a_page_connects_once_with_its_ticket_and_is_told_every_refusal() -> None:
    async def scenario() -> None:
        async with broker_with() as (server, directory):
            ticket = await ticket_for(server)
            # Accepted: the broker selects kandev-lsp.v1 and looks the session up (none here: 4002).
            assert await page(server, ticket) == ("kandev-lsp.v1", 4002, "session unavailable")
            assert directory.lookups == 1
            # The same ticket again: spent.
            assert await page(server, ticket) == ("kandev-lsp.v1", 4401, "unauthorized")
            # No ticket, another session's or language's ticket, a ticket in the query.
            assert await page(server, None) == ("kandev-lsp.v1", 4401, "unauthorized")
            assert (await page(server, await ticket_for(server, session="s2")))[1:] == (4401, "unauthorized")
            assert (await page(server, await ticket_for(server, language="python")))[1:] == (
                4401,
                "unauthorized",
            )
            assert (await page(server, await ticket_for(server), in_query=True))[1] == 4002
            # Refused before any credential: another origin; a bad path; a bad query.
            assert (await page(server, await ticket_for(server), origin="https://evil.example"))[1:] == (
                4403,
                "forbidden_origin",
            )
            assert (await page(server, await ticket_for(server), target="/lsp/"))[1:] == (4404, "not_found")
            bad_hint = "/lsp/s1?language=go&lease=no%20spaces"
            assert (await page(server, await ticket_for(server), target=bad_hint))[1:] == (
                4400,
                "bad_lease_hint",
            )
            assert directory.lookups == 2  # only the two accepted pages reached the directory

    asyncio.run(scenario())


def test_a_ticket_minted_from_a_page_is_good_for_that_pages_origin_only() -> None:
    async def scenario() -> None:
        async with broker_with() as (server, directory):
            from_kandev = await mint(
                server, {"sessionId": "s1", "language": "go"}, {**BEARER, "Origin": KANDEV}
            )
            assert (await page(server, from_kandev.json()["ticket"], origin=OTHER))[1] == 4401
            named = await ticket_for(server, origin=OTHER)  # the backend names the page's origin
            assert (await page(server, named, origin=KANDEV))[1] == 4401
            named = await ticket_for(server, origin=OTHER)
            assert (await page(server, named, origin=OTHER))[1] == 4002
            assert directory.lookups == 1

    asyncio.run(scenario())


def test_a_client_without_origin_keeps_http_answers_and_its_bearer_path() -> None:
    async def scenario() -> None:
        async with broker_with() as (server, directory):
            ticket = await ticket_for(server)
            async with connect(f"{server.url}/lsp/s1?language=go&ticket={ticket}") as ws:  # a shim
                assert (await closed_with(ws))[0] == 4002
            with pytest.raises(InvalidStatus) as caught:
                async with connect(f"{server.url}/lsp/s1?language=go&ticket={ticket}"):
                    pass
            response = caught.value.response
            assert response.status_code == 401
            assert "mint a new one" in json.loads(response.body)["message"]
            async with connect(f"{server.url}/lsp/s1?language=go", additional_headers=BEARER) as ws:
                assert ws.subprotocol is None  # nothing offered, nothing selected
                assert (await closed_with(ws))[0] == 4002
            assert directory.lookups == 2

    asyncio.run(scenario())


class OwnAccounts:
    """An embedder's authorizer for its own users: each mints tickets for itself only."""

    async def authorize(self, request: CallerRequest) -> Caller | None:
        user = request.headers.get("x-user")
        return Caller(user) if user else None


def test_only_a_caller_that_names_owners_may_mint_for_another_owner_and_the_lease_is_the_tickets() -> None:
    owners: list[str] = []

    class Settings:
        def language_settings(self, owner: str, language: str) -> dict[str, Any]:
            owners.append(owner)
            return {}

    async def scenario() -> None:
        async with fake_upstream("lsp") as url:
            directory = SpyDirectory({"s1": execution_for(url)})
            async with BrokerServer(
                directory=directory,
                authorizer=BearerAuthorizer(StreamToken(BROKER_TOKEN)),
                config=BrokerConfig(close_timeout=2.0, continuity=True, allowed_origins=(KANDEV,)),
                owner_settings=Settings(),
            ) as server:
                ticket = await ticket_for(server, owner="bob")
                async with connect(
                    f"{server.url}/lsp/s1?language=go",
                    subprotocols=["kandev-lsp.v1", f"kandev-lsp.ticket.{ticket}"],  # type: ignore[list-item]
                    origin=KANDEV,  # type: ignore[arg-type]
                ) as ws:
                    assert (await ready(ws))["status"] == "ready"
                assert set(owners) == {"bob"}  # the lease belongs to the ticket's owner (K14.9)
        async with broker_with(authorizer=OwnAccounts()) as (server, _):
            mine = await mint(
                server, {"sessionId": "s1", "language": "go", "owner": "alice"}, {"X-User": "alice"}
            )
            assert mine.status_code == 201
            theirs = await mint(
                server, {"sessionId": "s1", "language": "go", "owner": "bob"}, {"X-User": "alice"}
            )
            assert theirs.status_code == 403 and theirs.json()["error"] == "owner_not_allowed"

    asyncio.run(scenario())


def test_outstanding_tickets_are_capped_and_no_ticket_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> list[str]:
        async with broker_with(ticket_capacity=2) as (server, _):
            tickets = [await ticket_for(server), await ticket_for(server)]
            full = await mint(server, {"sessionId": "s1", "language": "go"})
            assert full.status_code == 429 and full.json()["error"] == "too_many_tickets"
            assert 1 <= int(full.headers["Retry-After"]) <= 31
            assert (await page(server, tickets[0]))[1] == 4002  # spending one frees its place
            tickets.append(await ticket_for(server))
            assert (await page(server, tickets[0]))[1] == 4401
            return tickets

    with caplog.at_level(logging.INFO, logger="kandev_lsp"):
        tickets = asyncio.run(scenario())
    text = caplog.text
    assert "event=ticket_minted" in text and "why=unknown" in text
    assert not any(ticket in text for ticket in tickets)


def test_one_ticket_presented_by_many_pages_at_the_same_instant_lets_exactly_one_through() -> None:
    """Single use under concurrency: the check spends a ticket with no await between looking it up and
    spending it, so of eight handshakes racing with one ticket, one is let through and seven are told
    4401, whatever order the event loop runs them in."""

    async def scenario() -> None:
        async with broker_with() as (server, directory):
            ticket = await ticket_for(server)
            outcomes = await asyncio.gather(*(page(server, ticket) for _ in range(8)))
            codes = sorted(code for _, code, _ in outcomes)
            assert codes == [4002] + [4401] * 7
            assert directory.lookups == 1

    asyncio.run(scenario())


def test_a_page_that_offers_no_kandev_subprotocol_is_told_so_and_its_ticket_is_spent() -> None:
    """A page that offers only ``kandev-lsp.ticket.<T>`` (an embedder's own glue, not the reference page)
    got the upgrade with no subprotocol selected, and a browser fails such a handshake (Chromium: "Sent
    non-empty 'Sec-WebSocket-Protocol' header but no response was received"): close 1006, retried by K18
    with a fresh ticket each time, and the lease its ticket created started a server nobody could use.
    Now it is refused 4400 ``bad_subprotocol``, nothing looked up, its ticket spent, and the broker
    selects the value the page offered (the spent ticket: nothing it did not send) so the close reaches
    it. A client without ``Origin`` is not a browser and keeps working without a selection."""

    async def scenario() -> None:
        async with broker_with() as (server, directory):
            ticket = await ticket_for(server)
            only_ticket = [f"kandev-lsp.ticket.{ticket}"]
            async with connect(
                f"{server.url}/lsp/s1?language=go",
                subprotocols=only_ticket,  # type: ignore[arg-type]
                origin=KANDEV,  # type: ignore[arg-type]
            ) as ws:
                assert ws.subprotocol == only_ticket[0]  # one the page offered: a browser accepts it
                assert await closed_with(ws) == (4400, "bad_subprotocol")
            assert directory.lookups == 0
            assert server.tickets.outstanding == 0  # spent: the echoed value is good for nothing
            # Without Origin (not a browser) the same offer is accepted, as before.
            async with connect(
                f"{server.url}/lsp/s1?language=go",
                subprotocols=[f"kandev-lsp.ticket.{await ticket_for(server)}"],  # type: ignore[list-item]
            ) as ws:
                assert ws.subprotocol is None and (await closed_with(ws))[0] == 4002
            assert directory.lookups == 1

    asyncio.run(scenario())
