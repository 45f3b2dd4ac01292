"""``serve``'s allowed origins: with a list (``StreamConfig.allowed_origins``, ``--allow-origin``), a
browser page from another origin is refused (403) before its token is looked at; clients without
``Origin`` are unaffected. Without a list ``serve`` accepts any origin: its only credential is a bearer
header, which a browser page cannot attach to a WebSocket, so a cross-site page never gets past the 401.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any

import pytest
from kandev_lsp.stream.auth import StreamToken
from kandev_lsp.stream.server import StreamConfig, StreamServer
from stream_testkit import TAG_VARIABLE, TOKEN, StreamKit, tagged_alive
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

KANDEV = "https://kandev.example"
EVIL = "https://evil.example"
BEARER = [("Authorization", f"Bearer {TOKEN}")]


async def handshake(url: str, headers: list[tuple[str, str]], origin: str | None = None) -> Any:
    """The first status frame's ``status`` when the upgrade was accepted, else the refusal's response."""
    try:
        async with connect(f"{url}?language=fake-echo", additional_headers=headers, origin=origin) as ws:  # type: ignore[arg-type]
            return json.loads(await ws.recv())["status"]
    except InvalidStatus as exc:
        return exc.response


def _forbidden(response: Any) -> str:
    assert not isinstance(response, str), f"the upgrade was accepted ({response})"
    assert response.status_code == 403
    body = json.loads(response.body)
    assert body["error"] == "forbidden_origin"
    return str(body["message"])


def test_listed_origins_refuse_other_pages_before_the_token(kit: StreamKit) -> None:
    async def scenario() -> None:
        server = StreamServer(
            plugins=kit.plugins(),
            task=kit.task(),
            token=StreamToken(TOKEN),
            config=StreamConfig(close_timeout=2.0, allowed_origins=(KANDEV,)),
        )
        async with server:
            assert "--allow-origin" in _forbidden(await handshake(server.url, BEARER, EVIL))
            _forbidden(await handshake(server.url, [], EVIL))  # 403, not 401: the token is not looked at
            repeated = _forbidden(
                await handshake(server.url, [*BEARER, ("Origin", KANDEV), ("Origin", KANDEV)])
            )
            assert repeated == "send at most one Origin header (this request has 2)"
            assert kit.plugin is not None and kit.plugin.discover_calls == 0  # nothing resolved or started
            assert not tagged_alive(kit.tag)
            assert await handshake(server.url, BEARER, KANDEV) == "ready"
            assert await handshake(server.url, BEARER) == "ready"  # no Origin: not a browser

    asyncio.run(scenario())


def test_without_a_list_any_origin_is_accepted_and_the_token_still_required(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve() as server:
            assert await handshake(server.url, BEARER, EVIL) == "ready"
            response = await handshake(server.url, [], EVIL)
            assert response.status_code == 401

    asyncio.run(scenario())


def test_an_unusable_allowed_origin_is_refused_at_construction(kit: StreamKit) -> None:
    with pytest.raises(ValueError, match="not an origin"):
        StreamServer(
            plugins=kit.plugins(),
            task=kit.task(),
            token=StreamToken(TOKEN),
            config=StreamConfig(allowed_origins=("https://kandev.example/app",)),
        )


def test_serve_command_allow_origin(kit: StreamKit) -> None:
    """``kandev-lsp serve --allow-origin ORIGIN`` as a process; a bad value exits 2 before listening."""
    environ = {key: value for key, value in os.environ.items() if key != "KANDEV_LSP_TOKEN"}
    environ["KANDEV_LSP_TOKEN"] = TOKEN
    command = [
        sys.executable,
        "-m",
        "kandev_lsp.cli",
        "serve",
        "--workspace",
        str(kit.workspace),
        "--settings",
        str(kit.settings_path),
        f"--env={TAG_VARIABLE}={kit.tag}",
    ]

    async def scenario() -> None:
        process = await asyncio.create_subprocess_exec(
            *command,
            "--allow-origin",
            KANDEV,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environ,
        )
        try:
            assert process.stdout is not None
            async with asyncio.timeout(30):
                line = json.loads(await process.stdout.readline())
            _forbidden(await handshake(line["url"], BEARER, EVIL))
            # past the origin check: the built-in plugins do not know the tests' fake language
            response = await handshake(line["url"], BEARER, KANDEV)
            assert response.status_code == 400
        finally:
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(30):
                assert await process.wait() == 0

        bad = await asyncio.create_subprocess_exec(
            *command,
            "--allow-origin",
            "null",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environ,
        )
        async with asyncio.timeout(30):
            out, err = await bad.communicate()
        assert bad.returncode == 2
        assert out == b""
        assert b"'null' cannot be allowed" in err

    asyncio.run(scenario())
