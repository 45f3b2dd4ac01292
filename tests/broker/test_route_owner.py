"""The authorized caller's owner reaches the leases it creates: each lease's serve is sent its owner's
settings, in the settings frame, before any client message (K14.8, K14.9; issue 18 item 9)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.broker.auth import Caller, CallerRequest
from kandev_lsp.broker.route import BrokerConfig, BrokerServer
from routekit import (
    SpyDirectory,
    broker,
    client,
    execution_for,
    fake_upstream,
    initialize,
    metrics,
    needs_gopls,
    one_session,
    real_serve,
    request,
)
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


@needs_gopls
def test_an_owner_settings_request_too_large_for_serve_is_refused_and_gopls_runs_on(
    tmp_path: Path, tag: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An owner whose settings for a language are over serve's 256 KiB settings-request limit: the
    broker's push was passed on by serve to gopls as an LSP message, and gopls exited on it (the lease
    ended at start, 4006). serve now refuses it (too_large), the broker logs settings_refused, and the
    server runs with the task host's settings."""

    class Large:
        def language_settings(self, owner: str, language: str) -> Mapping[str, Any]:
            return {"gopls": {"buildFlags": ["-tags=" + "x" * (300 * 1024)]}}

    async def scenario() -> None:
        async with (
            real_serve(tmp_path, tag) as upstream,
            broker(one_session(upstream.url), continuity=True, owner_settings=Large()) as server,
            client(server, "/lsp/s1?language=go") as ws,
        ):
            await initialize(ws, (await ready(ws))["workspaceUri"])
            answer = await request(ws, 2, "workspace/symbol", {"query": "main"})
            assert "result" in answer  # gopls answered: it is still running
            assert 'lsp_lease_released_total{reason="server_exit"} 0.0' in await metrics(server)

    with caplog.at_level(logging.INFO, logger="kandev_lsp"):
        asyncio.run(scenario())
    assert "event=settings_refused error=too_large" in caplog.text
    assert "reason=server_exit" not in caplog.text
