"""The reclaim API on the broker object, for an orchestrator that reclaims idle task hosts (K13.1-K13.5,
K12.20): a lease (or, with continuity off, a proxied connection) pins its execution, a held fence refuses
admission with 4002, an explicit task stop closes every lease of the execution and returns after their
servers are gone. Over a real serve running Debian's gopls; the process list is the oracle."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kandev_lsp.broker.leases import ReleaseReason
from routekit import (
    SpyDirectory,
    broker,
    client,
    closed_with,
    execution_for,
    fake_upstream,
    needs_gopls,
    real_serve,
)
from test_route_leases import gopls, initialize, ready, until


@needs_gopls
def test_a_lease_pins_its_execution_and_an_explicit_stop_closes_it_and_its_server(
    tmp_path: Path, tag: str
) -> None:
    async def scenario() -> None:
        async with real_serve(tmp_path, tag) as upstream:
            directory = SpyDirectory({"s1": execution_for(upstream.url, execution_id="x1")})
            async with broker(directory, continuity=True) as server:
                assert not server.is_pinned("x1")
                async with client(server, "/lsp/s1?language=go") as ws:
                    frame = await ready(ws)
                    await initialize(ws, frame["workspaceUri"])
                    assert server.is_pinned("x1") and not server.is_pinned("x2")
                    assert server.begin_reclaim("x1") is None  # refused: an attached lease pins it
                await until(lambda: server.metrics.exposition().find(b"lsp_lease_detached 1.0") >= 0)
                assert server.is_pinned("x1")  # detached, it still pins the whole task host (K13.1, K13.2)
                assert server.begin_reclaim("x1") is None
                assert len(gopls(tag)) == 1

                # An explicit stop wins, an attached client included (K13.4): it gets 4002.
                async with client(server, "/lsp/s1?language=go") as ws:
                    assert (await ready(ws))["resumed"] is True
                    closed = asyncio.ensure_future(closed_with(ws))
                    assert await server.close_execution("x1") == 1
                    assert gopls(tag) == []  # returned after the server was stopped and reaped
                    assert (await closed)[0] == 4002
                assert not server.is_pinned("x1")  # ending the lease removed the pin (K13.5)
                assert (
                    'lsp_lease_released_total{reason="runtime_stop"} 1.0'
                    in server.metrics.exposition().decode()
                )

                # A held fence refuses admission before anything starts (K13.3); its end lifts it.
                ticket = server.begin_reclaim("x1")
                assert ticket is not None
                async with client(server, "/lsp/s1?language=go") as ws:
                    assert (await closed_with(ws))[0] == 4002
                assert gopls(tag) == []
                assert server.confirm_reclaim(ticket)
                server.end_reclaim(ticket)
                assert not server.confirm_reclaim(ticket)  # a stale ticket confirms nothing
                async with client(server, "/lsp/s1?language=go") as ws:
                    assert (await ready(ws))["resumed"] is False

    asyncio.run(scenario())


def test_a_stale_ticket_does_not_drop_a_newer_fence() -> None:
    async def scenario() -> None:
        async with (
            fake_upstream("lsp") as url,
            broker(SpyDirectory({"s1": execution_for(url)}), continuity=True) as server,
        ):
            old = server.begin_reclaim("x1")
            assert old is not None
            server.end_reclaim(old)
            new = server.begin_reclaim("x1")
            assert new is not None
            server.end_reclaim(old)  # stale: does nothing
            assert server.confirm_reclaim(new) and not server.confirm_reclaim(old)
            async with client(server, "/lsp/s1?language=go") as ws:
                assert (await closed_with(ws))[0] == 4002

    asyncio.run(scenario())


@pytest.mark.parametrize("continuity", [True, False])
def test_closing_an_execution_with_no_client_closes_nothing(continuity: bool) -> None:
    async def scenario() -> None:
        async with (
            fake_upstream("lsp") as url,
            broker(SpyDirectory({"s1": execution_for(url)}), continuity=continuity) as server,
        ):
            assert await server.close_execution("x1", ReleaseReason.RUNTIME_STOP) == 0
            assert not server.is_pinned("x1")

    asyncio.run(scenario())


def test_with_continuity_off_an_open_proxied_connection_pins_and_a_stop_closes_it_with_4002() -> None:
    async def scenario() -> None:
        async with fake_upstream("lsp") as url, broker(SpyDirectory({"s1": execution_for(url)})) as server:
            assert server.leases is None
            async with client(server, "/lsp/s1?language=go") as ws:
                assert "status" in (await ws.recv())
                assert server.is_pinned("x1")
                assert server.begin_reclaim("x1") is None
                closed = asyncio.ensure_future(closed_with(ws))
                assert await server.close_execution("x1") == 1
                assert (await closed)[0] == 4002
            assert not server.is_pinned("x1")
            ticket = server.begin_reclaim("x1")
            assert ticket is not None
            async with client(server, "/lsp/s1?language=go") as ws:  # fenced: refused before the upstream
                assert (await closed_with(ws))[0] == 4002
            server.end_reclaim(ticket)
            async with client(server, "/lsp/s1?language=go") as ws:
                assert "ready" in (await ws.recv())

    asyncio.run(scenario())
