"""The route with browser continuity on: leases over a real ``serve`` running Debian's gopls, through real
127.0.0.1 WebSockets (K12, K14, K16.1, K17.3, K17.4, K19).

The process list is the oracle for "the same server": gopls runs under serve with the test's tag in its
environment, so its pid is read from /proc, not from anything the broker says.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from kandev_lsp.broker.directory import FileExecutionDirectory
from routekit import (
    SERVE_TOKEN,
    SpyDirectory,
    attached,
    broker,
    client,
    closed_with,
    execution_for,
    fake_upstream,
    frame_with,
    initialize,
    messages_until_stop,
    metrics,
    needs_gopls,
    one_session,
    ready,
    real_serve,
    stand_in,
    tagged_named,
    until,
)
from websockets.asyncio.server import ServerConnection

pytestmark = needs_gopls


def gopls(tag: str) -> list[int]:
    """The tagged gopls processes (gopls runs `go list` children of its own, which come and go)."""
    return tagged_named(tag, "gopls")


def test_a_reload_comes_back_to_the_same_warm_server_and_stop_is_acknowledged_after_cleanup(
    tmp_path: Path, tag: str
) -> None:
    async def scenario() -> None:
        async with (
            real_serve(tmp_path, tag) as upstream,
            broker(one_session(upstream.url), continuity=True) as server,
        ):
            async with client(server, "/lsp/s1?language=go") as ws:
                first = await ready(ws)
                assert first["resumed"] is False and first["capabilities"] is None
                answer = await initialize(ws, first["workspaceUri"])
                pids = gopls(tag)
                assert len(pids) == 1
            # The tab reloads: the server stays, detached.
            await asyncio.sleep(0.3)
            assert gopls(tag) == pids
            assert "lsp_lease_detached 1.0" in await metrics(server)
            async with client(server, f"/lsp/s1?language=go&lease={first['lease']}") as ws:
                again = await ready(ws)
                assert again["resumed"] is True and again["lease"] == first["lease"]
                assert again["capabilities"] == answer["result"]["capabilities"]
                assert again["initialized"] is True and isinstance(again["initializeSentAt"], int)
                # A generic client sends initialize again: answered from the retained result.
                assert (await initialize(ws, first["workspaceUri"], number=9))["result"] == answer["result"]
                assert gopls(tag) == pids  # the same gopls
                await ws.send(json.dumps({"control": "stop", "id": "s"}))
                ack = await frame_with(ws, "ack")
                assert ack == {"ack": "stop", "id": "s", "ok": True, "confirmed": True}
                assert gopls(tag) == []  # reaped before the ack
                assert await closed_with(ws) == (1000, "stopped")  # the reason after a stop's ack
            text = await metrics(server)
            assert 'lsp_lease_released_total{reason="stop"} 1.0' in text
            assert "lsp_lease_active 0.0" in text

    asyncio.run(scenario())


def test_two_windows_keep_two_leases_and_a_full_cap_of_attached_leases_is_4005(
    tmp_path: Path, tag: str
) -> None:
    async def scenario() -> None:
        async with real_serve(tmp_path, tag) as upstream:
            async with attached(upstream.url, continuity=True, capacity=2) as (server, one):
                lease = (await ready(one))["lease"]
                # A duplicated tab carrying the same hint gets its own lease (K12.10).
                async with client(server, f"/lsp/s1?language=go&lease={lease}") as two:
                    other = await ready(two)
                    assert other["lease"] != lease and other["resumed"] is False
                    await until(lambda: len(gopls(tag)) == 2)
                    async with client(server, "/lsp/s1?language=go") as three:
                        assert await closed_with(three) == (4005, "too many language servers")
                    assert len(gopls(tag)) == 2  # nothing started for the third
            await until(lambda: gopls(tag) == [])  # broker shutdown: backend_stop

    asyncio.run(scenario())


def test_eviction_releases_the_least_recently_detached_lease_and_expiry_ends_the_rest(
    tmp_path: Path, tag: str
) -> None:
    async def scenario() -> None:
        async with real_serve(tmp_path, tag) as upstream:
            directory = SpyDirectory(
                {"s1": execution_for(upstream.url), "s2": execution_for(upstream.url, execution_id="x2")}
            )
            async with broker(directory, continuity=True, capacity=1, detach_timeout=1.5) as server:
                async with client(server, "/lsp/s1?language=go") as ws:
                    await ready(ws)
                    await until(lambda: len(gopls(tag)) == 1)
                    old = gopls(tag)
                async with client(server, "/lsp/s2?language=go") as ws:  # another execution: no claim
                    fresh = await ready(ws)
                    assert fresh["resumed"] is False
                    await until(lambda: len(gopls(tag)) == 1 and gopls(tag) != old)
                text = await metrics(server)
                assert "lsp_lease_evicted_total 1.0" in text
                assert 'lsp_lease_released_total{reason="capacity"} 1.0' in text
                # Left detached: the shortened hour passes and the server goes (detached_timeout).
                await until(lambda: gopls(tag) == [], timeout=15)
                async with asyncio.timeout(10):  # the release follows serve's close, after the reaping
                    while 'lsp_lease_released_total{reason="detached_timeout"} 1.0' not in await metrics(
                        server
                    ):
                        await asyncio.sleep(0.05)
                assert "lsp_lease_active 0.0" in await metrics(server)

    asyncio.run(scenario())


def test_an_execution_removed_from_the_directory_ends_its_leases_with_4002(tmp_path: Path, tag: str) -> None:
    async def scenario() -> None:
        async with real_serve(tmp_path, tag) as upstream:
            path = tmp_path / "directory.json"
            entry = {"executor": "local", "streamUrl": upstream.url, "token": SERVE_TOKEN, "workspace": "/w"}
            path.write_text(json.dumps({"sessions": {"s1": "x1"}, "executions": {"x1": entry}}))
            directory = FileExecutionDirectory(path)
            async with broker(directory, continuity=True, directory_poll_interval=0.1) as server:
                async with client(server, "/lsp/s1?language=go") as ws:
                    await ready(ws)
                    await until(lambda: len(gopls(tag)) == 1)
                    path.write_text(json.dumps({"sessions": {}, "executions": {}}))  # the task stopped
                    assert await closed_with(ws) == (4002, "session unavailable")
                await until(lambda: gopls(tag) == [])
                async with asyncio.timeout(10):
                    while 'lsp_lease_released_total{reason="runtime_stop"} 1.0' not in await metrics(server):
                        await asyncio.sleep(0.05)

    asyncio.run(scenario())


# --- faults and control frames (fakes for what a real serve does not do on demand) -----------------


@pytest.mark.parametrize(
    ("behaviour", "code"),
    [("drop", 4009), ("4006", 4006), ("1001", 4002), ("1011", 4009), ("4008", 4008)],
)
def test_an_upstream_that_ends_maps_to_the_clients_close_and_releases_once(behaviour: str, code: int) -> None:
    async def scenario() -> None:
        async with fake_upstream(behaviour) as url, attached(url, continuity=True) as (server, ws):
            await ready(ws)
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            assert (await closed_with(ws))[0] == code
            async with asyncio.timeout(10):
                while 'lsp_lease_released_total{reason="server_exit"} 1.0' not in await metrics(server):
                    await asyncio.sleep(0.05)
            assert "lsp_lease_active 0.0" in await metrics(server)

    asyncio.run(scenario())


def test_control_frames_are_acknowledged_and_unknown_ones_refused() -> None:
    async def scenario() -> None:
        async with fake_upstream("lsp") as url, attached(url, continuity=True) as (server, ws):
            await ready(ws)
            await ws.send(json.dumps({"control": "attachment-ready", "id": 1}))
            assert await frame_with(ws, "ack") == {"ack": "attachment-ready", "id": 1, "ok": True}
            await ws.send(json.dumps({"control": "reboot", "id": 2}))
            assert await frame_with(ws, "ack") == {
                "ack": "reboot",
                "id": 2,
                "ok": False,
                "error": "unknown_control",
            }
            await ws.send(json.dumps({"control": "release", "reason": "editor_idle", "id": 3}))
            ack = await frame_with(ws, "ack")
            assert ack == {
                "ack": "release",
                "id": 3,
                "ok": True,
                "confirmed": True,
            }  # the fake exits on `exit`
            assert await closed_with(ws) == (1000, "released")  # the reason after a release's ack
            assert 'lsp_lease_released_total{reason="editor_idle"} 1.0' in await metrics(server)

    asyncio.run(scenario())


def test_a_full_cap_evicts_a_detached_lease_and_the_newcomer_starts_after_its_cleanup() -> None:
    async def scenario() -> None:
        async with fake_upstream("lsp") as url:
            directory = SpyDirectory({"s1": execution_for(url), "s2": execution_for(url, execution_id="x2")})
            async with broker(directory, continuity=True, capacity=1) as server:
                async with client(server, "/lsp/s1?language=go") as ws:
                    first = await ready(ws)
                async with client(server, "/lsp/s2?language=go") as ws:
                    second = await ready(ws)
                    assert second["lease"] != first["lease"] and second["resumed"] is False
                text = await metrics(server)
                assert "lsp_lease_evicted_total 1.0" in text
                assert 'lsp_lease_released_total{reason="capacity"} 1.0' in text
                async with client(server, f"/lsp/s1?language=go&lease={first['lease']}") as ws:
                    # The evicted hint is a fresh start (K12.15), after evicting the second lease in turn.
                    assert (await ready(ws))["resumed"] is False

    asyncio.run(scenario())


def test_a_tab_closed_while_it_waits_for_an_eviction_gives_its_place_up() -> None:
    """A newcomer at a full cap waits for the evicted lease's cleanup; a tab closed (or reloaded) during
    that wait must leave nothing behind. Before, its queued lease stayed in the book, marked attached:
    once the victim was cleaned up it started a server for nobody that no detach deadline would ever
    end, and at capacity 1 every later tab was refused 4005."""

    async def scenario() -> None:
        async with fake_upstream("deaf") as url:  # never answers shutdown: the eviction takes the bound
            directory = SpyDirectory({"s1": execution_for(url), "s2": execution_for(url, execution_id="x2")})
            async with broker(directory, continuity=True, capacity=1, shutdown_timeout=2.0) as server:
                async with client(server, "/lsp/s1?language=go") as ws:
                    await initialize(ws, (await ready(ws))["workspaceUri"])
                async with client(server, "/lsp/s2?language=go"):  # evicts s1's lease and waits for it
                    async with asyncio.timeout(20):
                        while "lsp_lease_evicted_total 1.0" not in await metrics(server):
                            await asyncio.sleep(0.05)
                # The tab left before the evicted lease was cleaned up (2 s of the deaf server's shutdown).
                async with asyncio.timeout(30):
                    while 'lsp_lease_released_total{reason="capacity"} 1.0' not in await metrics(server):
                        await asyncio.sleep(0.05)
                text = await metrics(server)
                assert "lsp_lease_active 0.0" in text  # nothing started for the tab that left
                async with client(server, "/lsp/s2?language=go") as ws:
                    assert (await ready(ws))["resumed"] is False  # the slot is free: not 4005

    asyncio.run(scenario())


def test_a_client_that_stops_reading_is_detached_with_4009_and_the_lease_lives_on() -> None:
    async def scenario() -> None:
        async with (
            fake_upstream("flood") as url,
            broker(one_session(url), continuity=True, write_timeout=0.5) as server,
        ):
            slow = await client(server, "/lsp/s1?language=go", max_size=None, max_queue=1)
            first = json.loads(await slow.recv())  # ready; then it stops reading
            assert first["status"] == "ready"
            async with asyncio.timeout(20):  # the stall is seen; the server is not touched
                while "lsp_lease_detached 1.0" not in await metrics(server):
                    await asyncio.sleep(0.05)
            slow.transport.abort()
            async with client(server, f"/lsp/s1?language=go&lease={first['lease']}", max_size=None) as ws:
                again = await ready(ws)
                assert again["lease"] == first["lease"]  # the same lease, hence the same server
                assert "lsp_lease_active 1.0" in await metrics(server)
            assert 'lsp_lease_released_total{reason="server_exit"} 0.0' in await metrics(server)

    asyncio.run(scenario())


def test_a_client_that_reads_a_burst_of_thousands_of_small_messages_stays_attached() -> None:
    """A server publishes thousands of small messages at once (a workspace's diagnostics, its log): the
    broker reads them from serve faster than its writer sends them, which is no stall. Before, the
    client's queue was bounded at 1024 messages, so a client reading as fast as it could was detached
    with 4009 (here: none of 5 000 messages received); a stall is a write past the deadline, or more
    queued than two messages of the largest size (docs/broker-contract.md, K15.10)."""
    burst = 5_000

    async def upstream(ws: ServerConnection) -> None:  # serve, passing on a server's burst
        async for message in messages_until_stop(ws):
            if message.get("method") in ("initialize", "shutdown"):
                result = {"capabilities": {}} if message["method"] == "initialize" else None
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))
            if message.get("method") == "initialized":
                for number in range(burst):
                    log = {"type": 3, "message": f"line {number}"}
                    await ws.send(
                        json.dumps({"jsonrpc": "2.0", "method": "window/logMessage", "params": log})
                    )

    async def scenario() -> None:
        async with stand_in(upstream) as url, attached(url, continuity=True) as (server, ws):
            await initialize(ws, (await ready(ws))["workspaceUri"])
            lines = []
            async with asyncio.timeout(60):
                while len(lines) < burst:
                    lines.append(json.loads(await ws.recv())["params"]["message"])
            assert lines == [f"line {number}" for number in range(burst)]  # all, in order
            assert "lsp_lease_detached 0.0" in await metrics(server)

    asyncio.run(scenario())


def test_client_frames_wait_for_the_install_and_a_detach_during_it_leaves_it_running() -> None:
    async def scenario() -> None:
        async with (
            fake_upstream("install") as url,
            broker(one_session(url), continuity=True) as server,
        ):
            async with client(server, "/lsp/s1?language=go") as ws:
                assert json.loads(await ws.recv()) == {"status": "installing", "language": "go"}
            # The tab left during the install: the upstream stays, the install goes on.
            async with client(server, "/lsp/s1?language=go") as ws:  # claims the detached lease
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
                frame = await ready(ws)  # the early initialize did not cancel the install
                assert frame["resumed"] is False  # the server was never initialized: initialize it
                answer = json.loads(await ws.recv())
                assert answer == {"jsonrpc": "2.0", "id": 1, "result": {"capabilities": {}}}
                assert "lsp_lease_active 1.0" in await metrics(server)  # one lease, one install
            assert 'lsp_lease_released_total{reason="server_exit"} 0.0' in await metrics(server)

    asyncio.run(scenario())


def test_a_tab_that_attaches_during_the_install_is_told_it_is_installing() -> None:
    """A tab reloaded during a long install claims the detached lease, whose install goes on. Before, it
    saw nothing until ready: serve's installing frame had gone to the first tab only, so the reloaded page
    showed no install for the rest of it (a cold npm install of pyright takes tens of seconds)."""
    finish_install = asyncio.Event()

    async def upstream(ws: ServerConnection) -> None:  # serve, installing until the test says
        await ws.send(json.dumps({"status": "installing", "language": "go"}))
        await finish_install.wait()
        await ws.send(json.dumps({"status": "installed", "language": "go"}))
        async for _ in messages_until_stop(ws):
            pass

    async def scenario() -> None:
        async with stand_in(upstream) as url, broker(one_session(url), continuity=True) as server:
            try:
                async with client(server, "/lsp/s1?language=go") as ws:
                    assert json.loads(await ws.recv()) == {"status": "installing", "language": "go"}
                async with client(server, "/lsp/s1?language=go") as ws:  # the reload claims the lease
                    async with asyncio.timeout(10):  # the install is held: only the broker can say it
                        assert json.loads(await ws.recv()) == {"status": "installing", "language": "go"}
                    finish_install.set()
                    assert json.loads(await ws.recv()) == {"status": "installed", "language": "go"}
                    assert (await ready(ws))["resumed"] is False
                    assert "lsp_lease_active 1.0" in await metrics(server)  # one lease, one install
            finally:
                finish_install.set()  # a failed run must not leave the stand-in waiting forever

    asyncio.run(scenario())


def test_a_server_that_never_answers_shutdown_still_gets_exit_after_the_bound() -> None:
    async def scenario() -> None:
        async with (
            fake_upstream("deaf") as url,
            attached(url, continuity=True, shutdown_timeout=0.3) as (_, ws),
        ):
            root = (await ready(ws))["workspaceUri"]
            await initialize(ws, root)
            await ws.send(json.dumps({"control": "stop", "id": 1}))
            async with asyncio.timeout(5):  # the 0.3 s bound, not the 10 s cleanup wait
                ack = await frame_with(ws, "ack")
            assert ack == {"ack": "stop", "id": 1, "ok": True, "confirmed": True}

    asyncio.run(scenario())


def test_gopls_left_detached_keeps_going_and_the_next_client_gets_its_progress(
    tmp_path: Path, tag: str
) -> None:
    async def scenario() -> None:
        async with real_serve(tmp_path, tag) as upstream:
            source = tmp_path / "workspace" / "main.go"
            source.write_text("package main\n\nfunc main() {}\n")
            async with broker(one_session(upstream.url), continuity=True) as server:
                async with client(server, "/lsp/s1?language=go") as ws:
                    first = await ready(ws)
                    # A client that knows nothing of progress, gone right after initialize.
                    params = {"processId": None, "rootUri": first["workspaceUri"], "capabilities": {}}
                    await ws.send(
                        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
                    )
                    await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
                    opened = {
                        "uri": source.as_uri(),
                        "languageId": "go",
                        "version": 1,
                        "text": source.read_text(),
                    }
                    await ws.send(
                        json.dumps(
                            {
                                "jsonrpc": "2.0",
                                "method": "textDocument/didOpen",
                                "params": {"textDocument": opened},
                            }
                        )
                    )
                # Nobody attached: gopls's create and progress are answered and tracked by the broker.
                deadline = asyncio.get_running_loop().time() + 20
                while True:
                    async with client(server, f"/lsp/s1?language=go&lease={first['lease']}") as ws:
                        progress = (await ready(ws))["progress"]
                    if progress["seenAny"] or asyncio.get_running_loop().time() > deadline:
                        break
                    await asyncio.sleep(0.2)
                assert progress["seenAny"] is True
                assert progress["active"] or progress["lastEnded"]

    asyncio.run(scenario())
