"""Before the upgrade (auth, route, query) and the missing-server paths: nothing starts unless allowed."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from stream_testkit import TOKEN, StreamKit, tagged_alive
from websockets.exceptions import ConnectionClosed, InvalidStatus


async def _rejection(kit: StreamKit, server: Any, language: str = "fake-echo", **options: Any) -> Any:
    with pytest.raises(InvalidStatus) as caught:
        async with kit.connect(server, language, **options):
            pass
    return caught.value.response


async def _close_code(ws: Any) -> int:
    async with asyncio.timeout(10):
        try:
            while True:
                await ws.recv()
        except ConnectionClosed as exc:
            assert exc.rcvd is not None
            return exc.rcvd.code


@pytest.mark.parametrize("token", [None, "wrong-token-0123456789abcdef", TOKEN + "x", TOKEN[:-1]])
def test_missing_or_wrong_token_is_401_and_nothing_runs(kit: StreamKit, token: str | None) -> None:
    async def scenario() -> None:
        async with kit.serve() as server:
            response = await _rejection(kit, server, token=token)
            assert response.status_code == 401
            assert response.headers["WWW-Authenticate"] == "Bearer"
            assert json.loads(response.body)["error"] == "unauthorized"
            assert kit.plugin is not None and kit.plugin.discover_calls == 0  # not even resolved
            assert not tagged_alive(kit.tag)

    asyncio.run(scenario())


def test_other_auth_schemes_are_refused(kit: StreamKit) -> None:
    async def scenario() -> None:
        from websockets.asyncio.client import connect

        async with kit.serve() as server:
            with pytest.raises(InvalidStatus) as caught:
                async with connect(
                    f"{server.url}?language=fake-echo", additional_headers={"Authorization": f"Basic {TOKEN}"}
                ):
                    pass
            assert caught.value.response.status_code == 401

    asyncio.run(scenario())


def test_bearer_scheme_is_case_insensitive(kit: StreamKit) -> None:
    async def scenario() -> None:
        from websockets.asyncio.client import connect

        async with (
            kit.serve() as server,
            connect(
                f"{server.url}?language=fake-echo", additional_headers={"Authorization": f"bearer {TOKEN}"}
            ) as ws,
        ):
            assert json.loads(await ws.recv())["status"] == "ready"

    asyncio.run(scenario())


def test_unknown_language_is_400_json_before_the_upgrade(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve() as server:
            response = await _rejection(kit, server, "cobol")
            assert response.status_code == 400
            assert response.headers["Content-Type"] == "application/json"
            body = json.loads(response.body)
            assert body["error"] == "unknown_language"
            assert body["language"] == "cobol"
            assert "fake-echo" in body["languages"]

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("", "missing_language"),
        ("language=", "missing_language"),
        ("language=fake-echo&language=fake-mute", "missing_language"),
        ("language=fake-echo&autoInstall=yes", "bad_auto_install"),
    ],
)
def test_bad_queries_are_400(kit: StreamKit, query: str, error: str) -> None:
    async def scenario() -> None:
        async with kit.serve() as server:
            response = await _rejection(kit, server, query=query)
            assert response.status_code == 400
            assert json.loads(response.body)["error"] == error

    asyncio.run(scenario())


def test_other_paths_are_404_even_with_a_token(kit: StreamKit) -> None:
    async def scenario() -> None:
        from websockets.asyncio.client import connect

        async with kit.serve() as server:
            base = server.url.rsplit("/api/", 1)[0]
            for path in ("/", "/api/v1/lsp", "/api/v1/lsp/stream/x"):
                with pytest.raises(InvalidStatus) as caught:
                    async with connect(
                        base + path + "?language=fake-echo",
                        additional_headers={"Authorization": f"Bearer {TOKEN}"},
                    ):
                        pass
                assert caught.value.response.status_code == 404

    asyncio.run(scenario())


def test_kotlin_missing_closes_4007_even_with_auto_install(kit: StreamKit) -> None:
    async def scenario() -> None:
        plugins = kit.plugins(builtins=True)
        task = kit.task(PATH="/usr/bin:/bin")
        async with kit.serve(plugins, task=task) as server:
            for auto_install in (False, True):
                async with kit.connect(server, "kotlin", auto_install=auto_install) as ws:
                    assert await _close_code(ws) == 4007

    asyncio.run(scenario())


def test_installable_server_missing_without_auto_install_closes_4001(kit: StreamKit) -> None:
    async def scenario() -> None:
        plugins = kit.plugins(builtins=True)
        task = kit.task(PATH="/usr/bin:/bin")  # node is there, pyright is not; HOME is an empty folder
        async with kit.serve(plugins, task=task) as server:
            for query in (
                "language=python",
                "language=python&autoInstall=0",
                "language=python&autoInstall=false",
            ):
                async with kit.connect(server, "python", query=query) as ws:
                    assert await _close_code(ws) == 4001
            assert not os.path.exists(kit.home / ".kandev")  # nothing was installed or even prepared

    asyncio.run(scenario())
