"""The authorized caller's owner reaches the leases it creates: each lease's serve is sent its owner's
settings, in the settings frame, before any client message (K14.8, K14.9; issue 18 item 9)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from kandev_lsp.broker.auth import Caller, CallerRequest
from kandev_lsp.broker.route import BrokerConfig, BrokerServer
from routekit import SpyDirectory, execution_for, fake_upstream, initialize
from test_route_leases import ready
from websockets.asyncio.client import connect


class HeaderAuthorizer:
    """An embedder's authorizer: the user comes from a header (a session cookie in real life)."""

    async def authorize(self, request: CallerRequest) -> Caller | None:
        user = request.headers.get("x-user")
        return Caller(user) if user else None


class Store:
    """An embedder's settings store: each owner's configuration per language."""

    def __init__(self) -> None:
        self.saved: dict[str, dict[str, Any]] = {"alice": {"gopls": {"staticcheck": True}}, "bob": {}}

    def language_settings(self, owner: str, language: str) -> Mapping[str, Any]:
        return self.saved.get(owner, {})


def test_each_lease_gets_the_settings_of_the_owner_that_created_it() -> None:
    received: list[dict[str, Any]] = []

    async def scenario() -> None:
        async with fake_upstream("lsp", received) as url:
            server = BrokerServer(
                directory=SpyDirectory({"s1": execution_for(url)}),
                authorizer=HeaderAuthorizer(),
                config=BrokerConfig(continuity=True, close_timeout=2.0),
                owner_settings=Store(),
            )
            async with server:
                target = f"{server.url}/lsp/s1?language=go"
                async with connect(target, additional_headers={"X-User": "alice"}) as one:
                    await initialize(one, (await ready(one))["workspaceUri"])
                    async with connect(target, additional_headers={"X-User": "bob"}) as two:
                        await initialize(two, (await ready(two))["workspaceUri"])
        settings = [message for message in received if message.get("control") == "settings"]
        assert [frame["settings"] for frame in settings] == [{"gopls": {"staticcheck": True}}, {}]
        # each before its lease's first client message (the initialize that carries the owner's options)
        assert received.index(settings[0]) < next(
            i for i, m in enumerate(received) if m.get("method") == "initialize"
        )

    asyncio.run(scenario())
