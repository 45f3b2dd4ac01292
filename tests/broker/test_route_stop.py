"""The broker's stop over a real ``serve`` whose server ignores ``exit``: the broker sends serve's
``{"control":"stop"}`` frame after ``shutdown`` and ``exit``, serve reaps the tree and only then closes
1000, so the ack says ``confirmed: true`` and the server is gone when it arrives (K16.2, K12.14)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kandev_lsp.broker.auth import BearerAuthorizer
from kandev_lsp.broker.lease_mode import plugin_suppressed_providers
from kandev_lsp.broker.route import BrokerConfig, BrokerServer
from kandev_lsp.host import PluginHost
from kandev_lsp.session import BridgeLimits
from kandev_lsp.stream.auth import StreamToken
from kandev_lsp.stream.server import StreamConfig, StreamServer
from kandev_lsp.taskenv import Task, TaskEnvironment
from kandev_lsp.testing import processes_tagged
from routekit import (
    BROKER_TOKEN,
    SERVE_TOKEN,
    TAG,
    SpyDirectory,
    broker,
    client,
    closed_with,
    execution_for,
    request,
)
from websockets.asyncio.client import ClientConnection

sys.path.insert(0, str(Path(__file__).parents[1] / "stream"))
from stream_testkit import FakePlugin, fake_server_source, pid_alive, write_executable


async def ready(ws: ClientConnection) -> dict[str, Any]:
    async with asyncio.timeout(20):
        while True:
            frame = json.loads(await ws.recv())
            if frame.get("status") == "ready":
                return dict(frame)


async def frame_with(ws: ClientConnection, key: str) -> dict[str, Any]:
    """The next broker frame carrying ``key``, skipping the LSP traffic in between."""
    async with asyncio.timeout(20):
        while True:
            frame = json.loads(await ws.recv())
            if key in frame and "jsonrpc" not in frame:
                return dict(frame)


def fake_plugins(tmp_path: Path) -> PluginHost:
    fake = write_executable(tmp_path / "fake-lsp", fake_server_source())
    plugins = PluginHost()
    assert plugins.register(FakePlugin(fake, fake, None), "fake"), plugins.problems
    return plugins


@contextlib.asynccontextmanager
async def stubborn_serve(
    tmp_path: Path, tag: str, plugins: PluginHost | None = None
) -> AsyncIterator[StreamServer]:
    """A real serve whose ``fake-stubborn`` server answers shutdown, ignores exit, EOF and SIGINT."""
    plugins = plugins or fake_plugins(tmp_path)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = TaskEnvironment.from_agent({"HOME": str(tmp_path), TAG: tag})
    limits = BridgeLimits(exit_grace=0.3, stop_grace=0.5, shutdown_timeout=0.5)
    server = StreamServer(
        plugins=plugins,
        task=Task(str(workspace), env),
        token=StreamToken(SERVE_TOKEN),
        config=StreamConfig(close_timeout=2.0, limits=limits),
    )
    async with server:
        yield server


def test_a_stop_of_a_server_that_ignores_exit_is_confirmed_after_its_tree_is_reaped(
    tmp_path: Path, tag: str
) -> None:
    async def scenario() -> None:
        async with stubborn_serve(tmp_path, tag) as upstream:
            directory = SpyDirectory({"s1": execution_for(upstream.url)})
            # A cleanup bound the stubborn server would outlast without serve's confirmation.
            async with (
                broker(directory, continuity=True, shutdown_timeout=1.0, cleanup_timeout=5.0) as server,
                client(server, "/lsp/s1?language=fake-stubborn") as ws,
            ):
                first = await ready(ws)
                params = {"processId": None, "rootUri": first["workspaceUri"], "capabilities": {}}
                await request(ws, 1, "initialize", params)
                await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
                pids = processes_tagged(TAG, tag)
                assert len(pids) == 1
                await ws.send(json.dumps({"control": "stop", "id": "s"}))
                async with asyncio.timeout(8):
                    ack = await frame_with(ws, "ack")
                assert not any(pid_alive(pid) for pid in pids), "acknowledged before the tree was reaped"
                assert ack == {"ack": "stop", "id": "s", "ok": True, "confirmed": True}
                assert await closed_with(ws) == (1000, "")

    asyncio.run(scenario())


def test_the_ready_frame_names_the_suppressed_providers_from_the_plugins_hook(
    tmp_path: Path, tag: str
) -> None:
    """serve's ready frame comes before initialize, so the broker computes them from the retained
    capabilities with the same hook (the fake plugin suppresses hover when the server offers it)."""

    async def scenario() -> None:
        plugins = fake_plugins(tmp_path)
        async with stubborn_serve(tmp_path, tag, plugins) as upstream:
            directory = SpyDirectory({"s1": execution_for(upstream.url)})
            broker = BrokerServer(
                directory=directory,
                authorizer=BearerAuthorizer(StreamToken(BROKER_TOKEN)),
                config=BrokerConfig(close_timeout=2.0, continuity=True, shutdown_timeout=1.0),
                suppressed_providers=plugin_suppressed_providers(plugins),
            )
            async with broker as server:
                async with client(server, "/lsp/s1?language=fake-stubborn") as ws:
                    first = await ready(ws)
                    assert first["suppressedProviders"] == []  # no capabilities yet
                    params = {"processId": None, "rootUri": first["workspaceUri"], "capabilities": {}}
                    await request(ws, 1, "initialize", params)
                async with client(server, f"/lsp/s1?language=fake-stubborn&lease={first['lease']}") as ws:
                    again = await ready(ws)
                    assert again["resumed"] is True
                    assert again["suppressedProviders"] == ["hover"]
                    await ws.send(json.dumps({"control": "stop"}))
                    assert (await frame_with(ws, "ack"))["confirmed"] is True

    asyncio.run(scenario())
