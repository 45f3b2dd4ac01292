"""autoInstall through the stream, against a real HTTP release server on 127.0.0.1: status frames, a
failed install (4003), cancellation by the client (1001, nothing left), and the hand-off rule."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from stream_testkit import StreamKit, tagged_alive
from websockets.exceptions import ConnectionClosed


async def _status(ws: Any) -> dict[str, Any]:
    async with asyncio.timeout(30):
        frame: dict[str, Any] = json.loads(await ws.recv())
    return frame


async def _close_code(ws: Any) -> int:
    async with asyncio.timeout(15):
        try:
            while True:
                await ws.recv()
        except ConnectionClosed as exc:
            assert exc.rcvd is not None
            return exc.rcvd.code


def _leftovers(home: Path, language: str) -> list[str]:
    """Staging folders and partial downloads in the managed cache."""
    folder = home / ".kandev" / "lsp-servers" / language
    if not folder.exists():
        return []
    found = []
    for root, dirs, files in os.walk(folder):
        found += [os.path.join(root, d) for d in dirs if "staging" in d]
        found += [os.path.join(root, f) for f in files if f.endswith((".tmp", ".part")) or ".tmp" in f]
    return found


def test_auto_install_sends_installing_installed_ready_then_bridges(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve() as server:
            async with kit.connect(server, "fake-release", auto_install=True) as ws:
                assert await _status(ws) == {"status": "installing", "language": "fake-release"}
                assert await _status(ws) == {"status": "installed", "language": "fake-release"}
                ready = await _status(ws)
                assert ready["status"] == "ready"
                await ws.send('{"jsonrpc":"2.0","method":"hello"}')
                assert json.loads(await ws.recv())["method"] == "hello"
            # Installed for good: the next connection needs no install.
            async with kit.connect(server, "fake-release") as ws:
                assert (await _status(ws))["status"] == "ready"
            assert kit.release is not None
            assert kit.release.requests.count("/1.0.0/fake-ls") == 1

    asyncio.run(scenario())


def test_failed_install_sends_install_failed_then_4003(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve() as server, kit.connect(server, "fake-broken", auto_install=True) as ws:
            assert (await _status(ws))["status"] == "installing"
            failed = await _status(ws)
            assert failed["status"] == "install_failed"
            assert failed["language"] == "fake-broken"
            assert "404" in failed["error"]  # says what happened...
            assert (
                "lsp_release_base_urls" in failed["error"] or "kandev-lsp install" in failed["error"]
            )  # ...and what to do
            assert await _close_code(ws) == 4003
        assert _leftovers(kit.home, "fake-broken") == []

    asyncio.run(scenario())


def test_client_disconnect_cancels_the_install(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve() as server:
            ws = await kit.connect(server, "fake-slow", auto_install=True).__aenter__()
            assert (await _status(ws))["status"] == "installing"
            assert kit.release is not None
            async with asyncio.timeout(10):  # the download has started and stalls
                while "/1.0.0/slow-ls" not in kit.release.requests:
                    await asyncio.sleep(0.02)
            assert _leftovers(kit.home, "fake-slow")  # a staging folder exists while it downloads
            await ws.close()
            async with asyncio.timeout(10):
                while _leftovers(kit.home, "fake-slow"):
                    await asyncio.sleep(0.05)
            assert server.context.lifecycle._installer is not None  # the install ran through the lifecycle
            assert not tagged_alive(kit.tag)
        current = kit.home / ".kandev" / "lsp-servers" / "fake-slow" / "current"
        assert not current.exists()

    asyncio.run(scenario())


def test_client_message_during_install_cancels_it_with_1001(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve() as server, kit.connect(server, "fake-slow", auto_install=True) as ws:
            assert (await _status(ws))["status"] == "installing"
            assert kit.release is not None
            async with asyncio.timeout(10):
                while "/1.0.0/slow-ls" not in kit.release.requests:
                    await asyncio.sleep(0.02)
            await ws.send('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')
            assert await _close_code(ws) == 1001
            async with asyncio.timeout(10):
                while _leftovers(kit.home, "fake-slow"):
                    await asyncio.sleep(0.05)

    asyncio.run(scenario())


def test_message_sent_right_after_installed_is_delivered(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve() as server, kit.connect(server, "fake-release", auto_install=True) as ws:
            assert (await _status(ws))["status"] == "installing"
            assert (await _status(ws))["status"] == "installed"
            # Sent before "ready" arrives: it must reach the server once it runs, not be lost.
            await ws.send('{"jsonrpc":"2.0","method":"handoff","params":1}')
            await ws.send('{"jsonrpc":"2.0","method":"handoff","params":2}')
            assert (await _status(ws))["status"] == "ready"
            got = [json.loads(await ws.recv())["params"] for _ in range(2)]
            assert got == [1, 2]

    asyncio.run(scenario())


def test_serve_shutdown_during_an_install_closes_1001_and_cancels_it(kit: StreamKit) -> None:
    async def scenario() -> None:
        serving = kit.serve()
        server = await serving.__aenter__()
        ws = await kit.connect(server, "fake-slow", auto_install=True).__aenter__()
        assert (await _status(ws))["status"] == "installing"
        assert kit.release is not None
        async with asyncio.timeout(10):
            while "/1.0.0/slow-ls" not in kit.release.requests:
                await asyncio.sleep(0.02)
        await serving.__aexit__(None, None, None)
        assert await _close_code(ws) == 1001
        assert _leftovers(kit.home, "fake-slow") == []
        assert not tagged_alive(kit.tag)
        await ws.close()

    asyncio.run(scenario())
