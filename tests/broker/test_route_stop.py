"""The broker's stop over a real ``serve`` whose server ignores ``exit``: the broker sends serve's
``{"control":"stop"}`` frame after ``shutdown`` and ``exit``, serve reaps the tree and only then closes
1000, so the ack says ``confirmed: true`` and the server is gone when it arrives (K16.2, K12.14)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path

from kandev_lsp.broker.lease_mode import plugin_suppressed_providers
from kandev_lsp.host import PluginHost
from kandev_lsp.session import BridgeLimits
from kandev_lsp.stream.server import StreamServer
from kandev_lsp.testing import processes_tagged
from routekit import (
    TAG,
    attached,
    broker,
    client,
    closed_with,
    frame_with,
    initialize,
    one_session,
    ready,
    real_serve,
    request,
)

sys.path.insert(0, str(Path(__file__).parents[1] / "stream"))
from stream_testkit import FakePlugin, fake_server_source, pid_alive, write_executable


def fake_plugins(tmp_path: Path) -> PluginHost:
    fake = write_executable(tmp_path / "fake-lsp", fake_server_source())
    plugins = PluginHost()
    assert plugins.register(FakePlugin(fake, fake, None), "fake"), plugins.problems
    return plugins


def stubborn_serve(
    tmp_path: Path, tag: str, plugins: PluginHost | None = None
) -> contextlib.AbstractAsyncContextManager[StreamServer]:
    """A real serve whose ``fake-stubborn`` server answers shutdown, ignores exit, EOF and SIGINT."""
    limits = BridgeLimits(exit_grace=0.3, stop_grace=0.5, shutdown_timeout=0.5)
    return real_serve(tmp_path, tag, plugins=plugins or fake_plugins(tmp_path), limits=limits)


def test_a_stop_of_a_server_that_ignores_exit_is_confirmed_after_its_tree_is_reaped(
    tmp_path: Path, tag: str
) -> None:
    async def scenario() -> None:
        # A cleanup bound the stubborn server would outlast without serve's confirmation.
        async with (
            stubborn_serve(tmp_path, tag) as upstream,
            attached(
                upstream.url,
                "/lsp/s1?language=fake-stubborn",
                continuity=True,
                shutdown_timeout=1.0,
                cleanup_timeout=5.0,
            ) as (_, ws),
        ):
            first = await ready(ws)
            await initialize(ws, first["workspaceUri"])
            pids = processes_tagged(TAG, tag)
            assert len(pids) == 1
            await ws.send(json.dumps({"control": "stop", "id": "s"}))
            async with asyncio.timeout(8):
                ack = await frame_with(ws, "ack")
            assert not any(pid_alive(pid) for pid in pids), "acknowledged before the tree was reaped"
            assert ack == {"ack": "stop", "id": "s", "ok": True, "confirmed": True}
            assert await closed_with(ws) == (1000, "stopped")  # the ack's reason (item 11)

    asyncio.run(scenario())


def test_the_ready_frame_names_the_suppressed_providers_from_the_plugins_hook(
    tmp_path: Path, tag: str
) -> None:
    """serve's ready frame comes before initialize, so the broker computes them from the retained
    capabilities with the same hook (the fake plugin suppresses hover when the server offers it)."""

    async def scenario() -> None:
        plugins = fake_plugins(tmp_path)
        async with stubborn_serve(tmp_path, tag, plugins) as upstream:
            suppressed = plugin_suppressed_providers(plugins)
            async with broker(
                one_session(upstream.url),
                continuity=True,
                shutdown_timeout=1.0,
                suppressed_providers=suppressed,
            ) as server:
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
