"""Cross-site WebSocket hijacking on the broker's route: a browser page from an origin the broker does not
list is refused before the authorizer is asked, even with valid credentials (its upgrade is accepted and
closed at once with 4403 ``forbidden_origin``, so the page can tell it from a network failure: issue 18
item 2); clients that send no ``Origin`` (editors, shims, the broker's own upstreams) are unaffected.

Before the fix the broker upgraded ``Origin: https://evil.example`` with a valid token, so an embedder's
cookie authorizer (what the contract tells embedders to write for browsers) accepted any page the user
visited.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.broker.auth import BearerAuthorizer, Caller, CallerRequest
from kandev_lsp.broker.route import BrokerConfig, BrokerServer
from kandev_lsp.stream.auth import StreamToken
from routekit import BROKER_TOKEN, SpyDirectory, broker_with, closed_with
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

KANDEV = "https://kandev.example"
EVIL = "https://evil.example"
BEARER = [("Authorization", f"Bearer {BROKER_TOKEN}")]


class CookieAuthorizer:
    """An embedder's browser authorizer: a session cookie; it records every request it is shown."""

    def __init__(self) -> None:
        self.seen: list[CallerRequest] = []

    async def authorize(self, request: CallerRequest) -> Caller | None:
        self.seen.append(request)
        return Caller("alice") if request.headers.get("cookie") == "sid=alice-session" else None


async def handshake(url: str, headers: list[tuple[str, str]], origin: str | None = None) -> Any:
    """``101`` when the upgrade was accepted and carried on, the close of a browser request refused after
    its upgrade (``(4403, "forbidden_origin")``), else the HTTP refusal's response."""
    try:
        async with connect(f"{url}/lsp/s1?language=go", additional_headers=headers, origin=origin) as ws:  # type: ignore[arg-type]
            code, reason = await closed_with(ws)
            return (code, reason) if code in (4400, 4401, 4403, 4404) else 101
    except InvalidStatus as exc:
        return exc.response


def _forbidden(response: Any) -> str:
    """A request refused for its origin: a browser's closed 4403 after its upgrade, any other's 403."""
    assert response != 101, "the upgrade was accepted"
    if isinstance(response, tuple):
        assert response == (4403, "forbidden_origin")
        return ""
    assert response.status_code == 403
    assert response.headers["Content-Type"] == "application/json"
    body = json.loads(response.body)
    assert body["error"] == "forbidden_origin"
    assert EVIL not in body["message"]  # the caller's value is not echoed
    return str(body["message"])


def test_by_default_a_browser_origin_is_refused_even_with_a_valid_token() -> None:
    async def scenario() -> None:
        async with broker_with() as (server, directory):
            _forbidden(await handshake(server.url, BEARER, EVIL))
            assert directory.lookups == 0
            assert await handshake(server.url, BEARER) == 101  # no Origin: not a browser, unaffected
            assert directory.lookups == 1

    asyncio.run(scenario())


def test_a_cookie_authorizer_is_never_asked_about_a_cross_site_page() -> None:
    async def scenario() -> None:
        cookie = [("Cookie", "sid=alice-session")]
        authorizer = CookieAuthorizer()
        async with broker_with(authorizer=authorizer, allowed_origins=(KANDEV,)) as (server, directory):
            _forbidden(await handshake(server.url, cookie, EVIL))  # the hijack: alice's cookie, evil's page
            assert authorizer.seen == []
            assert directory.lookups == 0
            assert await handshake(server.url, cookie, KANDEV) == 101  # alice on kandev's page
            assert authorizer.seen[-1].origin == KANDEV  # the authorizer can see where the page is from

    asyncio.run(scenario())


def test_listed_origins_any_origin_and_repeated_origins() -> None:
    async def scenario() -> None:
        async with broker_with(allowed_origins=(KANDEV, "http://localhost:3000")) as (server, _):
            assert await handshake(server.url, BEARER, KANDEV) == 101
            assert await handshake(server.url, BEARER, "http://localhost:3000") == 101
            _forbidden(await handshake(server.url, BEARER, "http://localhost:3001"))
            _forbidden(await handshake(server.url, BEARER, "null"))  # a sandboxed frame
            repeated = _forbidden(  # no browser's request: it keeps the HTTP answer
                await handshake(server.url, [*BEARER, ("Origin", KANDEV), ("Origin", EVIL)])
            )
            assert repeated == "send at most one Origin header (this request has 2)"
            # refused before the credentials are looked at: no 401 oracle for a cross-site page
            _forbidden(await handshake(server.url, [], EVIL))
        async with broker_with(allowed_origins=("*",)) as (server, _):
            assert await handshake(server.url, BEARER, EVIL) == 101

    asyncio.run(scenario())


@pytest.mark.parametrize("value", ["https://kandev.example/app", "null", "kandev.example"])
def test_an_unusable_allowed_origin_is_refused_at_construction(value: str) -> None:
    with pytest.raises(ValueError, match="origin"):
        BrokerServer(
            directory=SpyDirectory({}),
            authorizer=BearerAuthorizer(StreamToken(BROKER_TOKEN)),
            config=BrokerConfig(allowed_origins=(value,)),
        )


def test_broker_command_allow_origin(tmp_path: Path) -> None:
    """``kandev-lsp broker --allow-origin ORIGIN`` (repeatable) as a process; a bad value exits 2."""
    directory = tmp_path / "directory.json"
    directory.write_text(json.dumps({"sessions": {}, "executions": {}}))
    environ = {
        key: value
        for key, value in os.environ.items()
        if key not in ("KANDEV_LSP_BROKER_TOKEN",) and not key.startswith("KANDEV_FEATURES")
    }
    environ["KANDEV_LSP_BROKER_TOKEN"] = BROKER_TOKEN
    command = [sys.executable, "-m", "kandev_lsp.cli", "broker", "--directory", str(directory)]

    async def scenario() -> None:
        process = await asyncio.create_subprocess_exec(
            *command,
            "--allow-origin",
            KANDEV,
            "--allow-origin=http://localhost:3000",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environ,
        )
        try:
            assert process.stdout is not None
            async with asyncio.timeout(30):
                line = json.loads(await process.stdout.readline())
            assert await handshake(line["url"], BEARER, KANDEV) == 101
            assert await handshake(line["url"], BEARER, "http://localhost:3000") == 101
            _forbidden(await handshake(line["url"], BEARER, EVIL))
        finally:
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(30):
                assert await process.wait() == 0

        bad = await asyncio.create_subprocess_exec(
            *command,
            "--allow-origin",
            "https://kandev.example/app",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environ,
        )
        async with asyncio.timeout(30):
            out, err = await bad.communicate()
        assert bad.returncode == 2
        assert out == b""  # nothing listened
        assert b"is not an origin" in err

    asyncio.run(scenario())
