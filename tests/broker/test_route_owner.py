"""The authorized caller's owner reaches the leases it creates, so the owner's settings answer the
server's ``workspace/configuration`` (K14.8, K14.9)."""

from __future__ import annotations

import asyncio
from typing import Any

from kandev_lsp.broker.auth import Caller, CallerRequest
from kandev_lsp.broker.route import BrokerConfig, BrokerServer
from routekit import SpyDirectory, execution_for, fake_upstream
from test_route_leases import ready
from websockets.asyncio.client import connect


class HeaderAuthorizer:
    """An embedder's authorizer: the user comes from a header (a session cookie in real life)."""

    async def authorize(self, request: CallerRequest) -> Caller | None:
        user = request.headers.get("x-user")
        return Caller(user) if user else None


def test_each_lease_gets_the_configuration_of_the_caller_that_created_it() -> None:
    built: list[tuple[str, str]] = []

    def configuration(owner: str, language: str) -> Any:
        built.append((owner, language))
        return lambda params: [{"owner": owner}]

    async def scenario() -> None:
        async with fake_upstream("lsp") as url:
            server = BrokerServer(
                directory=SpyDirectory({"s1": execution_for(url)}),
                authorizer=HeaderAuthorizer(),
                config=BrokerConfig(continuity=True, close_timeout=2.0),
                configuration=configuration,
            )
            async with server:
                target = f"{server.url}/lsp/s1?language=go"
                async with connect(target, additional_headers={"X-User": "alice"}) as one:
                    await ready(one)
                    async with connect(target, additional_headers={"X-User": "bob"}) as two:
                        await ready(two)
        assert built == [("alice", "go"), ("bob", "go")]

    asyncio.run(scenario())
