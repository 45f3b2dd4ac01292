"""serve's concurrent-session cap: each authenticated connection starts a language server, so one beyond
``max_sessions`` (default 16) is closed with 4005 ``too many language servers`` before anything is
resolved or started, and a slot comes back once a session's server is reaped."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from typing import Any

import pytest
from kandev_lsp.cli import build_parser
from kandev_lsp.cli.serve import stream_config
from kandev_lsp.stream.auth import StreamToken
from kandev_lsp.stream.server import DEFAULT_MAX_SESSIONS, StreamConfig, StreamServer
from stream_testkit import TOKEN, StreamKit, tagged_alive
from websockets.exceptions import ConnectionClosed


async def _closed(ws: Any) -> tuple[int, str]:
    async with asyncio.timeout(10):
        with pytest.raises(ConnectionClosed) as caught:
            while True:
                await ws.recv()
    assert caught.value.rcvd is not None
    return caught.value.rcvd.code, caught.value.rcvd.reason


def test_one_session_over_the_default_cap_is_4005_and_starts_nothing(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve() as server, contextlib.AsyncExitStack() as stack:
            for _ in range(DEFAULT_MAX_SESSIONS):
                ws = await stack.enter_async_context(kit.connect(server, "fake-echo"))
                assert json.loads(await ws.recv())["status"] == "ready"
            assert len(tagged_alive(kit.tag)) == DEFAULT_MAX_SESSIONS
            assert kit.plugin is not None
            resolved = kit.plugin.discover_calls
            async with kit.connect(server, "fake-echo") as extra:
                assert await _closed(extra) == (4005, "too many language servers")
            assert kit.plugin.discover_calls == resolved  # not even resolved
            assert len(tagged_alive(kit.tag)) == DEFAULT_MAX_SESSIONS
            assert server.sessions == DEFAULT_MAX_SESSIONS

    asyncio.run(scenario())


def test_a_slot_comes_back_when_a_session_ends(kit: StreamKit) -> None:
    async def scenario() -> None:
        server = StreamServer(
            plugins=kit.plugins(),
            task=kit.task(),
            token=StreamToken(TOKEN),
            config=StreamConfig(close_timeout=2.0, max_sessions=1),
        )
        async with server:
            async with kit.connect(server, "fake-echo") as first:
                assert json.loads(await first.recv())["status"] == "ready"
                async with kit.connect(server, "fake-echo") as second:
                    assert await _closed(second) == (4005, "too many language servers")
            # the first client left: its server is stopped and reaped, then its slot is free again
            async with asyncio.timeout(10):
                while server.sessions:
                    await asyncio.sleep(0.02)
            assert not tagged_alive(kit.tag)
            async with kit.connect(server, "fake-echo") as third:
                assert json.loads(await third.recv())["status"] == "ready"

    asyncio.run(scenario())


def test_max_sessions_must_be_positive(kit: StreamKit) -> None:
    with pytest.raises(ValueError, match="max_sessions"):
        StreamServer(
            plugins=kit.plugins(),
            task=kit.task(),
            token=StreamToken(TOKEN),
            config=StreamConfig(max_sessions=0),
        )


def test_serve_flags_reach_the_config() -> None:
    parse = build_parser("serve").parse_args
    default = stream_config(parse(["serve"]))
    assert default.max_sessions == DEFAULT_MAX_SESSIONS
    assert default.allowed_origins == ("*",)
    flagged = stream_config(
        parse(["serve", "--max-sessions", "3", "--allow-origin", "HTTPS://Kandev.Example:443/"])
    )
    assert flagged.max_sessions == 3
    assert flagged.allowed_origins == ("https://kandev.example",)
    for bad in ("0", "-1", "x"):
        with pytest.raises(SystemExit) as exited:
            parse(["serve", "--max-sessions", bad])
        assert exited.value.code == 2
    assert isinstance(default, StreamConfig) and isinstance(parse(["serve"]), argparse.Namespace)
