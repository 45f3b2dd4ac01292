"""``kandev-lsp broker`` as a process, in front of a real ``kandev-lsp serve`` process running Debian's
gopls: the listening line, the token, the directory file, a lease resumed to the same server process,
``/metrics``, and SIGTERM closing every lease (backend_stop) with nothing left running (K11, K12, K18, K19)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.testing import processes_tagged
from routekit import closed_with, needs_gopls, request
from test_route_leases import gopls
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

CLI = [sys.executable, "-m", "kandev_lsp.cli"]
TAG = "KANDEV_TEST_TAG"
SERVE_TOKEN = "serve-cli-token-0123456789abcdef"
MAIN_GO = "package main\n\nfunc main() {}\n\nfunc helper() int { return 1 }\n"


def _environ(**extra: str) -> dict[str, str]:
    environ = {
        key: value
        for key, value in os.environ.items()
        if key not in ("KANDEV_LSP_TOKEN", "KANDEV_LSP_BROKER_TOKEN")
        and not key.startswith("KANDEV_FEATURES")
    }
    environ.update(extra)
    return environ


async def _start(*args: str, environ: dict[str, str]) -> tuple[Any, dict[str, Any]]:
    process = await asyncio.create_subprocess_exec(
        *CLI,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environ,
    )
    assert process.stdout is not None
    async with asyncio.timeout(30):
        line = await process.stdout.readline()
    assert line, (await process.stderr.read()).decode() if process.stderr else "no listening line"
    return process, json.loads(line)


async def _stop(process: Any) -> int:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
    async with asyncio.timeout(30):
        return int(await process.wait())


async def _ready(ws: Any) -> dict[str, Any]:
    async with asyncio.timeout(30):
        while True:
            frame = json.loads(await ws.recv())
            if frame.get("status") == "ready":
                return dict(frame)


async def _metrics(port: int, token: str) -> str:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    body = await reader.readexactly(length)
    writer.close()
    return body.decode()


async def _serve_with_directory(
    tmp_path: Path, workspace: Path, tag: str, task_env: dict[str, str] | None = None
) -> tuple[Any, Path]:
    """``kandev-lsp serve`` for ``workspace`` (its task environment: ``task_env``, else a PATH of
    /usr/bin:/bin and ``tmp_path`` as HOME; always the test's tag) and a directory file mapping the
    session ``sess-1`` to it."""
    overrides = task_env or {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    flags = [f"--env={key}={value}" for key, value in {**overrides, TAG: tag}.items()]
    serve, line = await _start(
        "serve", "--workspace", str(workspace), *flags, environ=_environ(KANDEV_LSP_TOKEN=SERVE_TOKEN)
    )
    execution = {
        "executor": "local",
        "streamUrl": line["url"],
        "token": SERVE_TOKEN,
        "workspace": str(workspace),
    }
    directory = tmp_path / "directory.json"
    directory.write_text(json.dumps({"sessions": {"sess-1": "exec-1"}, "executions": {"exec-1": execution}}))
    return serve, directory


def _server_pid(tag: str) -> int:
    pids = gopls(tag)  # gopls runs `go list` children of its own, which come and go
    assert len(pids) == 1, pids
    return pids[0]


@needs_gopls
def test_broker_command_resumes_a_lease_to_the_same_gopls_and_sigterm_stops_it(
    tmp_path: Path, tag: str
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "go.mod").write_text("module example.com/w\n\ngo 1.19\n")
    (workspace / "main.go").write_text(MAIN_GO)
    uri = (workspace / "main.go").as_uri()

    async def scenario() -> None:
        serve, directory = await _serve_with_directory(tmp_path, workspace, tag)
        broker, line = await _start(
            "broker",
            "--directory",
            str(directory),
            environ=_environ(KANDEV_FEATURES_LSP_BROWSER_CONTINUITY="1", KANDEV_LSP_MAX_CONNECTIONS="3"),
        )
        try:
            assert line["event"] == "listening" and line["port"] > 0
            assert line["continuity"] is True and line["capacity"] == 3
            token = line["token"]  # generated and printed once
            url = f"{line['url']}/lsp/sess-1?language=go"
            with pytest.raises(InvalidStatus) as caught:
                async with connect(url):
                    pass
            assert caught.value.response.status_code == 401
            headers = {"Authorization": f"Bearer {token}"}

            async with connect(url, additional_headers=headers) as ws:
                ready = await _ready(ws)
                assert ready["resumed"] is False
                lease = ready["lease"]
                await request(
                    ws,
                    1,
                    "initialize",
                    {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}},
                )
                await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
                await ws.send(
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "method": "textDocument/didOpen",
                            "params": {
                                "textDocument": {
                                    "uri": uri,
                                    "languageId": "go",
                                    "version": 1,
                                    "text": MAIN_GO,
                                }
                            },
                        }
                    )
                )
                symbols = await request(ws, 2, "textDocument/documentSymbol", {"textDocument": {"uri": uri}})
                assert {symbol["name"] for symbol in symbols["result"]} >= {"main", "helper"}
                pid = _server_pid(tag)

            async with connect(f"{url}&lease={lease}", additional_headers=headers) as ws:
                ready = await _ready(ws)
                assert ready["resumed"] is True and ready["lease"] == lease
                assert _server_pid(tag) == pid  # the same warm gopls
                text = await _metrics(line["port"], token)
                assert "lsp_lease_active 1.0" in text
                process_gone = asyncio.ensure_future(closed_with(ws, timeout=30))
                assert await _stop(broker) == 0
                code, _ = await process_gone
                assert code == 1001
        finally:
            if broker.returncode is None:
                broker.kill()
                await broker.wait()
            assert await _stop(serve) == 0
        assert broker.stderr is not None
        log = (await broker.stderr.read()).decode()
        assert "event=broker_listening" in log and "event=broker_stopped" in log
        assert "reason=backend_stop" in log
        assert token not in log and lease not in log and SERVE_TOKEN not in log
        assert processes_tagged(TAG, tag) == []  # the lease's gopls was stopped and reaped

    asyncio.run(scenario())


def test_broker_refuses_an_unusable_directory_file(tmp_path: Path) -> None:
    async def scenario() -> None:
        directory = tmp_path / "directory.json"
        directory.write_text("{not json")
        process = await asyncio.create_subprocess_exec(
            *CLI,
            "broker",
            "--directory",
            str(directory),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=_environ(),
        )
        out, err = await process.communicate()
        assert process.returncode == 1
        assert out == b""
        assert b"directory" in err and b"unusable" in err

    asyncio.run(scenario())


def test_broker_reads_its_token_from_a_file_and_does_not_print_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        directory = tmp_path / "directory.json"
        directory.write_text(json.dumps({"sessions": {}, "executions": {}}))
        token_file = tmp_path / "token"
        token_file.write_text(f"file-token-{uuid.uuid4().hex}\n")
        process, line = await _start(
            "broker", "--directory", str(directory), "--token-file", str(token_file), environ=_environ()
        )
        try:
            assert "token" not in line
            assert line["continuity"] is False and line["capacity"] == 8  # the switches' defaults
            token = token_file.read_text().strip()
            assert "lsp_lease_active" in await _metrics(line["port"], token)
        finally:
            assert await _stop(process) == 0

    asyncio.run(scenario())


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGHUP])
def test_sigint_and_sighup_stop_the_broker_cleanly(tmp_path: Path, signum: int) -> None:
    async def scenario() -> None:
        directory = tmp_path / "directory.json"
        directory.write_text(json.dumps({"sessions": {}, "executions": {}}))
        process, _ = await _start("broker", "--directory", str(directory), environ=_environ())
        process.send_signal(signum)
        async with asyncio.timeout(30):
            assert await process.wait() == 0
        assert process.stderr is not None
        log = (await process.stderr.read()).decode()
        assert "event=broker_stopped" in log and "Traceback" not in log

    asyncio.run(scenario())
