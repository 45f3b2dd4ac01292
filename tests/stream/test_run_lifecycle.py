"""``kandev-lsp run`` and ``serve`` against signals and editors that leave (issue 7, items 6, 7 and 9).

The server is a stand-in planted on the task's PATH as ``pyright-langserver`` (outside the workspace, so
it is trusted): it ignores its stdin and keeps a grandchild in a session of its own, the way a server
with workers does. Whatever stops ``run`` must take both with it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest
from kandev_lsp.cli.run import run_stdio
from kandev_lsp.resolver import Resolver
from stream_testkit import TAG_VARIABLE, RealServers, StreamKit, tagged_alive, write_executable
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

CLI = [sys.executable, "-m", "kandev_lsp.cli"]

STUBBORN_SERVER = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-IS", "-c", "import time; time.sleep(120)"], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(120)
"""


def _plant_server(kit: StreamKit) -> str:
    folder = kit.root / "bin"
    write_executable(folder / "pyright-langserver", STUBBORN_SERVER)
    return f"{folder}:/usr/bin:/bin"


def _task_args(kit: StreamKit, path: str) -> list[str]:
    return [
        "--workspace",
        str(kit.workspace),
        "--settings",
        str(kit.settings_path),
        f"--env=HOME={kit.home}",
        f"--env=PATH={path}",
        f"--env={TAG_VARIABLE}={kit.tag}",
    ]


async def _until(predicate: object, timeout: float = 15.0) -> None:
    assert callable(predicate)
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.05)


# Items 6 and 9: run stops the tree on SIGINT/SIGTERM/SIGHUP, then dies by that signal -------------------
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT])
def test_run_stops_the_server_tree_on_a_signal_then_dies_by_it(kit: StreamKit, signum: int) -> None:
    async def scenario() -> None:
        process = await asyncio.create_subprocess_exec(
            *CLI,
            "run",
            "python",
            *_task_args(kit, _plant_server(kit)),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            await _until(lambda: len(tagged_alive(kit.tag)) == 2)  # the server and its grandchild
            process.send_signal(signum)
            async with asyncio.timeout(15):
                status = await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        # Died by the signal, as the server started directly would (not exit status 128+N).
        assert status == -signum
        assert not tagged_alive(kit.tag)
        assert process.stdout is not None
        assert await process.stdout.read() == b""

    asyncio.run(scenario())


def test_serve_closes_1001_and_stops_servers_on_sighup(kit: StreamKit) -> None:
    async def scenario() -> None:
        environ = {key: value for key, value in os.environ.items() if key != "KANDEV_LSP_TOKEN"}
        environ["KANDEV_LSP_TOKEN"] = "hup-token-0123456789abcdef"
        process = await asyncio.create_subprocess_exec(
            *CLI,
            "serve",
            *_task_args(kit, _plant_server(kit)),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environ,
        )
        try:
            assert process.stdout is not None
            async with asyncio.timeout(20):
                line = json.loads(await process.stdout.readline())
            headers = {"Authorization": "Bearer hup-token-0123456789abcdef"}
            async with connect(line["url"] + "?language=python", additional_headers=headers) as ws:
                assert json.loads(await ws.recv())["status"] == "ready"
                await _until(lambda: len(tagged_alive(kit.tag)) == 2)
                process.send_signal(signal.SIGHUP)
                with pytest.raises(ConnectionClosed) as closed:
                    async with asyncio.timeout(20):
                        await ws.recv()
                assert closed.value.rcvd is not None
                assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1001, "going away")
            async with asyncio.timeout(20):
                assert await process.wait() == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert not tagged_alive(kit.tag)

    asyncio.run(scenario())


# Item 7: the editor leaving during a cold install cancels it ---------------------------------------------
def _staging(home: Path, language: str) -> list[str]:
    folder = home / ".kandev" / "lsp-servers" / language
    return [str(path) for path in folder.rglob("*staging*")] if folder.exists() else []


@pytest.mark.parametrize("closes", ["stdin", "stdout"])
def test_run_install_is_cancelled_when_the_editor_closes_its_input(kit: StreamKit, closes: str) -> None:
    """In process, with the test kit's stalled release download: the editor sends initialize, then
    closes its input (or its end of run's output, keeping the input open) while the install waits;
    ``run`` cancels the install and returns at once."""

    async def scenario() -> None:
        plugins = kit.plugins()
        task = kit.task()
        resolution = Resolver(plugins).resolve("fake-slow", task)
        assert not resolution.found and resolution.installable
        editor_out, run_in = os.pipe()
        run_out, editor_in = os.pipe()
        stdin, stdout = os.fdopen(editor_out, "rb", 0), os.fdopen(editor_in, "wb", 0)
        run = asyncio.ensure_future(run_stdio(plugins, task, resolution, None, stdin=stdin, stdout=stdout))
        try:
            assert kit.release is not None
            await _until(lambda: "/1.0.0/slow-ls" in kit.release.requests)
            assert _staging(kit.home, "fake-slow")
            body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}'
            os.write(run_in, b"Content-Length: %d\r\n\r\n" % len(body) + body)
            os.close(run_in if closes == "stdin" else run_out)  # the editor quit (or gave up waiting)
            async with asyncio.timeout(10):
                status = await run
            assert status == 0
            assert not _staging(kit.home, "fake-slow")
            assert not (kit.home / ".kandev" / "lsp-servers" / "fake-slow" / "current").exists()
            if closes == "stdin":
                assert os.read(run_out, 100) == b""  # nothing was written to the editor
        finally:
            run.cancel()
            for handle in (stdin, stdout):
                handle.close()
            os.close(run_out if closes == "stdin" else run_in)

    asyncio.run(scenario())


@pytest.mark.real_server
@pytest.mark.network_registry
def test_real_run_install_stops_npm_when_the_editor_leaves(kit: StreamKit, real_servers: RealServers) -> None:
    """A cold ``run python --install`` with real npm: the editor closes its input as soon as the
    install reports progress. ``run`` exits within seconds, npm is gone and nothing was installed."""

    async def scenario() -> None:
        overrides = {**real_servers.overrides(), "HOME": str(kit.home), TAG_VARIABLE: kit.tag}
        process = await asyncio.create_subprocess_exec(
            *CLI,
            "run",
            "python",
            "--install",
            "--workspace",
            str(kit.workspace),
            "--settings",
            str(kit.settings_path),
            *[f"--env={key}={value}" for key, value in overrides.items()],
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stdin is not None and process.stderr is not None
        try:
            async with asyncio.timeout(60):
                while b"kandev-lsp: python: " not in await process.stderr.readline():
                    pass
            await _until(lambda: bool(tagged_alive(kit.tag)), timeout=30)  # npm runs
            process.stdin.close()
            async with asyncio.timeout(15):
                status = await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert status == 0
        assert b"install was cancelled" in await process.stderr.read()
        await _until(lambda: not tagged_alive(kit.tag), timeout=5)
        assert not (kit.home / ".kandev" / "lsp-servers" / "python" / "current").exists()
        assert not _staging(kit.home, "python")

    asyncio.run(scenario())
