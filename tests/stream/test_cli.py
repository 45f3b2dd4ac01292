"""``kandev-lsp serve`` and ``kandev-lsp run`` as processes: the listening line, tokens, signals, exit codes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any

import pytest
from stream_testkit import TAG_VARIABLE, RealServers, StreamKit, tagged_alive
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

CLI = [sys.executable, "-m", "kandev_lsp.cli"]


def _clean_environ(**extra: str) -> dict[str, str]:
    environ = {key: value for key, value in os.environ.items() if key != "KANDEV_LSP_TOKEN"}
    environ.update(extra)
    return environ


async def _serve(
    kit: StreamKit, *args: str, environ: dict[str, str] | None = None
) -> tuple[Any, dict[str, Any]]:
    process = await asyncio.create_subprocess_exec(
        *CLI,
        "serve",
        "--workspace",
        str(kit.workspace),
        "--settings",
        str(kit.settings_path),
        f"--env={TAG_VARIABLE}={kit.tag}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environ or _clean_environ(),
    )
    assert process.stdout is not None
    async with asyncio.timeout(20):
        line = await process.stdout.readline()
    return process, json.loads(line)


async def _stop(process: Any) -> int:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
    async with asyncio.timeout(20):
        return int(await process.wait())


def test_serve_prints_a_generated_token_once_and_requires_it(kit: StreamKit) -> None:
    async def scenario() -> None:
        process, line = await _serve(kit, "--env=PATH=/usr/bin:/bin")
        try:
            assert line["event"] == "listening"
            assert line["url"] == f"ws://127.0.0.1:{line['port']}/api/v1/lsp/stream"
            assert line["port"] > 0
            token = line["token"]
            assert len(token) >= 32
            with pytest.raises(InvalidStatus) as caught:
                async with connect(line["url"] + "?language=kotlin"):
                    pass
            assert caught.value.response.status_code == 401
            headers = {"Authorization": f"Bearer {token}"}
            async with connect(line["url"] + "?language=kotlin", additional_headers=headers) as ws:
                with pytest.raises(ConnectionClosed) as closed:
                    await ws.recv()
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 4007
        finally:
            assert await _stop(process) == 0
        assert process.stderr is not None
        log = (await process.stderr.read()).decode()
        assert "event=connection_close" in log and "code=4007" in log
        assert token not in log  # the token is printed once on stdout, never logged

    asyncio.run(scenario())


def test_serve_reads_the_token_from_a_file_and_does_not_print_it(kit: StreamKit) -> None:
    async def scenario() -> None:
        token_file = kit.root / "token"
        token_file.write_text("file-token-0123456789abcdefghij\n", encoding="utf-8")
        process, line = await _serve(kit, "--token-file", str(token_file))
        try:
            assert "token" not in line
            headers = {"Authorization": "Bearer file-token-0123456789abcdefghij"}
            with pytest.raises(InvalidStatus) as caught:  # 400 proves the token was accepted
                async with connect(line["url"] + "?language=cobol", additional_headers=headers):
                    pass
            assert caught.value.response.status_code == 400
        finally:
            assert await _stop(process) == 0

    asyncio.run(scenario())


def test_sigterm_closes_connections_with_1001_and_stops_servers(
    kit: StreamKit, real_servers: RealServers
) -> None:
    async def scenario() -> None:
        env_args = [f"--env={key}={value}" for key, value in real_servers.overrides().items()]
        process, line = await _serve(
            kit, *env_args, environ=_clean_environ(KANDEV_LSP_TOKEN="env-token-0123456789abcdef")
        )
        headers = {"Authorization": "Bearer env-token-0123456789abcdef"}
        try:
            async with connect(line["url"] + "?language=python", additional_headers=headers) as ws:
                assert json.loads(await ws.recv())["status"] == "ready"
                assert tagged_alive(kit.tag)
                process.send_signal(signal.SIGTERM)
                with pytest.raises(ConnectionClosed) as closed:
                    async with asyncio.timeout(20):
                        await ws.recv()
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        finally:
            assert await _stop(process) == 0
        assert not tagged_alive(kit.tag)

    asyncio.run(scenario())


def test_serve_refuses_a_missing_workspace(kit: StreamKit) -> None:
    async def scenario() -> None:
        process = await asyncio.create_subprocess_exec(
            *CLI,
            "serve",
            "--workspace",
            str(kit.root / "nope"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        assert process.returncode == 1
        assert out == b""
        assert b"not an existing folder" in err

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("language", "status", "says"),
    [("python", 10, b"--install"), ("kotlin", 11, b"kotlin"), ("cobol", 13, b"unknown language")],
)
def test_run_without_a_server_exits_with_the_resolve_codes(
    kit: StreamKit, language: str, status: int, says: bytes
) -> None:
    async def scenario() -> None:
        process = await asyncio.create_subprocess_exec(
            *CLI,
            "run",
            language,
            "--workspace",
            str(kit.workspace),
            f"--env=HOME={kit.home}",
            "--env=PATH=/usr/bin:/bin",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        assert process.returncode == status
        assert out == b""  # stdout belongs to the editor's LSP traffic
        assert says in err

    asyncio.run(scenario())
