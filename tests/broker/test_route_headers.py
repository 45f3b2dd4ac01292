"""Repeated credential headers on the broker's route: refused (401, a reason naming the header) before
the authorizer runs, the same rule as serve's route; an authorizer only sees headers sent once.

Before the fix the route folded the headers into a dict, so the last copy won: a bad token followed by a
good one was accepted (101), the reverse refused, while serve answered 500 to both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kandev_lsp.broker.auth import Authorizer, BearerAuthorizer, Caller, CallerRequest
from kandev_lsp.broker.route import BrokerConfig, BrokerServer
from kandev_lsp.stream.auth import StreamToken
from routekit import BROKER_TOKEN, SpyDirectory
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

GOOD = f"Bearer {BROKER_TOKEN}"
BAD = "Bearer wrong-token-0123456789"


class Recording:
    """Wraps an authorizer and keeps every request it was shown."""

    def __init__(self, inner: Authorizer) -> None:
        self.inner = inner
        self.seen: list[CallerRequest] = []

    async def authorize(self, request: CallerRequest) -> Caller | None:
        self.seen.append(request)
        return await self.inner.authorize(request)


class HeaderAuthorizer:
    """An embedder's authorizer: accepts when ``header`` (lower-case) has exactly ``value``."""

    def __init__(self, header: str, value: str) -> None:
        self.header = header
        self.value = value

    async def authorize(self, request: CallerRequest) -> Caller | None:
        return Caller("web") if request.headers.get(self.header) == self.value else None


@contextlib.asynccontextmanager
async def broker_with(authorizer: Authorizer) -> AsyncIterator[tuple[BrokerServer, SpyDirectory]]:
    directory = SpyDirectory({})  # no session: an accepted upgrade is closed 4002 right after
    async with BrokerServer(
        directory=directory, authorizer=authorizer, config=BrokerConfig(close_timeout=2.0)
    ) as server:
        yield server, directory


async def handshake(
    server: BrokerServer, headers: list[tuple[str, str]], target: str = "/lsp/s1?language=go"
) -> Any:
    """The refusal's response, or ``101`` when the upgrade was accepted."""
    try:
        async with connect(f"{server.url}{target}", additional_headers=headers):
            return 101
    except InvalidStatus as exc:
        return exc.response


@pytest.mark.parametrize(
    ("values", "target"),
    [
        ((BAD, GOOD), "/lsp/s1?language=go"),  # was accepted: the last copy won
        ((GOOD, BAD), "/lsp/s1?language=go"),
        ((GOOD, GOOD), "/lsp/s1?language=go"),  # was accepted
        ((GOOD, GOOD), "/metrics"),  # was served
    ],
    ids=["bad-good", "good-bad", "same", "metrics"],
)
def test_repeated_authorization_is_401_before_the_authorizer(values: tuple[str, ...], target: str) -> None:
    async def scenario() -> None:
        authorizer = Recording(BearerAuthorizer(StreamToken(BROKER_TOKEN)))
        async with broker_with(authorizer) as (server, directory):
            response = await handshake(server, [("Authorization", value) for value in values], target)
            assert response != 101
            assert response.status_code == 401
            assert response.headers["WWW-Authenticate"] == "Bearer"
            body = json.loads(response.body)
            assert body == {
                "error": "unauthorized",
                "message": "send exactly one Authorization header (this request has 2)",
            }
            assert authorizer.seen == []  # refused before the authorizer was asked
            assert directory.lookups == 0

    asyncio.run(scenario())


def test_one_authorization_header_is_accepted() -> None:
    async def scenario() -> None:
        async with broker_with(BearerAuthorizer(StreamToken(BROKER_TOKEN))) as (server, directory):
            assert await handshake(server, [("Authorization", GOOD)]) == 101
            assert directory.lookups == 1

    asyncio.run(scenario())


def test_repeated_cookie_is_401_for_a_cookie_authorizer() -> None:
    """An embedder's cookie authorizer never has to choose between two Cookie headers (RFC 6265 5.4
    allows one)."""

    async def scenario() -> None:
        authorizer = Recording(HeaderAuthorizer("cookie", "sid=good"))
        async with broker_with(authorizer) as (server, _):
            assert await handshake(server, [("Cookie", "sid=good")]) == 101
            response = await handshake(server, [("Cookie", "sid=bad"), ("Cookie", "sid=good")])
            assert response != 101  # was accepted: the last copy won
            assert response.status_code == 401
            assert (
                json.loads(response.body)["message"] == "send exactly one Cookie header (this request has 2)"
            )
            assert len(authorizer.seen) == 1  # only the first request reached it

    asyncio.run(scenario())


def test_an_authorizer_never_sees_a_repeated_header() -> None:
    """A custom header sent twice is absent from what the authorizer sees (it refuses), not the last copy."""

    async def scenario() -> None:
        authorizer = Recording(HeaderAuthorizer("x-kandev-user", "alice"))
        async with broker_with(authorizer) as (server, _):
            assert await handshake(server, [("X-Kandev-User", "alice")]) == 101
            response = await handshake(server, [("X-Kandev-User", "mallory"), ("x-kandev-user", "alice")])
            assert response != 101  # was accepted: the last copy won
            assert response.status_code == 401
            shown = authorizer.seen[-1].headers
            assert "x-kandev-user" not in shown
            assert shown["host"]  # headers sent once are all there, by lower-case name

    asyncio.run(scenario())
