"""Shared pieces of the route tests: a real ``serve`` with Debian's gopls, a broker over one session, a
client, the editor's first steps (``ready``, ``initialize``) and small readers (imported by name: conftest
puts this folder on sys.path)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import pytest
from kandev_lsp.broker.auth import Authorizer, BearerAuthorizer
from kandev_lsp.broker.directory import DirectoryError, Execution
from kandev_lsp.broker.lease_mode import SuppressedProviders
from kandev_lsp.broker.owner_settings import OwnerSettings
from kandev_lsp.broker.route import BrokerConfig, BrokerServer
from kandev_lsp.host import PluginHost
from kandev_lsp.session import BridgeLimits
from kandev_lsp.settings import SettingsFile
from kandev_lsp.stream.auth import StreamToken
from kandev_lsp.stream.server import StreamConfig, StreamServer
from kandev_lsp.taskenv import Task, TaskEnvironment
from kandev_lsp.testing import processes_tagged
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

BROKER_TOKEN = "broker-test-token-0123456789"
SERVE_TOKEN = "serve-test-token-0123456789ab"
TAG = "KANDEV_TEST_TAG"
GOPLS = shutil.which("gopls", path="/usr/bin")

needs_gopls = pytest.mark.skipif(GOPLS is None, reason="Debian's gopls is not installed")


class SpyDirectory:
    """A directory that counts lookups: proves the authorizer runs first."""

    def __init__(self, executions: dict[str, Execution]) -> None:
        self.executions = executions
        self.lookups = 0

    def resolve(self, session_id: str) -> Execution:
        self.lookups += 1
        if session_id not in self.executions:
            raise DirectoryError(4002, "unknown session")
        return self.executions[session_id]


@contextlib.asynccontextmanager
async def real_serve(
    tmp_path: Path,
    tag: str,
    *,
    plugins: PluginHost | None = None,
    settings: SettingsFile | None = None,
    limits: BridgeLimits | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[StreamServer]:
    """serve with the built-in plugins (or ``plugins``), optionally a user settings file, bridge limits
    and extra task environment variables."""
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    (workspace / "go.mod").write_text("module example.com/w\n\ngo 1.19\n")
    task_env = TaskEnvironment.from_agent(
        {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", TAG: tag, **(env or {})}
    )
    server = StreamServer(
        plugins=plugins or PluginHost.load(environ={}),
        task=Task(str(workspace), task_env),
        token=StreamToken(SERVE_TOKEN),
        config=StreamConfig(close_timeout=2.0, limits=limits or BridgeLimits()),
        settings=settings,
    )
    async with server:
        yield server


#: The ready frame a stand-in serve sends: a go server on ``/w`` that takes settings and stop frames.
READY_FRAME: Final = {
    "status": "ready",
    "language": "go",
    "workspacePath": "/w",
    "workspaceUri": "file:///w",
    "controls": ["settings", "stop"],
}


def tagged_named(tag: str, name: str) -> list[int]:
    """The tagged processes named ``name``: the server itself, not its short-lived children (see
    :func:`~kandev_lsp.testing.processes_tagged`)."""
    return processes_tagged(TAG, tag, named=name)


def execution_for(url: str, executor: str = "local", execution_id: str = "x1") -> Execution:
    return Execution(execution_id, executor, url, SERVE_TOKEN, "/work/task")


def one_session(url: str) -> SpyDirectory:
    """A directory holding one session, ``s1``, whose execution's serve is at ``url``."""
    return SpyDirectory({"s1": execution_for(url)})


@contextlib.asynccontextmanager
async def broker(
    directory: Any,
    *,
    suppressed_providers: SuppressedProviders | None = None,
    owner_settings: OwnerSettings | None = None,
    **config: Any,
) -> AsyncIterator[BrokerServer]:
    """A broker over ``directory``; ``config`` goes to its :class:`BrokerConfig`."""
    server = BrokerServer(
        directory=directory,
        authorizer=BearerAuthorizer(StreamToken(BROKER_TOKEN)),
        config=BrokerConfig(close_timeout=2.0, **config),
        suppressed_providers=suppressed_providers,
        owner_settings=owner_settings,
    )
    async with server:
        yield server


@contextlib.asynccontextmanager
async def broker_with(
    directory: SpyDirectory | None = None, authorizer: Authorizer | None = None, **config: Any
) -> AsyncIterator[tuple[BrokerServer, SpyDirectory]]:
    """A broker over ``directory`` (by default one that knows no session: an accepted upgrade is closed
    4002 right after it) with ``authorizer`` (by default the bearer token), and that directory, to count
    its lookups; ``config`` goes to its :class:`BrokerConfig`."""
    directory = directory or SpyDirectory({})
    async with BrokerServer(
        directory=directory,
        authorizer=authorizer or BearerAuthorizer(StreamToken(BROKER_TOKEN)),
        config=BrokerConfig(close_timeout=2.0, **config),
    ) as server:
        yield server, directory


@contextlib.asynccontextmanager
async def attached(
    url: str, target: str = "/lsp/s1?language=go", **config: Any
) -> AsyncIterator[tuple[BrokerServer, ClientConnection]]:
    """A broker over :func:`one_session` at ``url`` (``config`` as for :func:`broker`) and a client
    connected to ``target`` through it."""
    async with broker(one_session(url), **config) as server, client(server, target) as ws:
        yield server, ws


def client(server: BrokerServer, target: str, token: str | None = BROKER_TOKEN, **options: Any) -> connect:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return connect(f"{server.url}{target}", additional_headers=headers, **options)


async def closed_with(ws: ClientConnection, timeout: float = 10.0) -> tuple[int | None, str | None]:
    with contextlib.suppress(ConnectionClosed):
        async with asyncio.timeout(timeout):
            while True:
                await ws.recv()
    return ws.close_code, ws.close_reason


async def request(ws: ClientConnection, number: int, method: str, params: Any) -> dict[str, Any]:
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params}))
    async with asyncio.timeout(20):
        while True:
            message = json.loads(await ws.recv())
            if message.get("id") == number and "method" not in message:
                return dict(message)


async def ready(ws: ClientConnection) -> dict[str, Any]:
    """The broker's ``ready`` frame, skipping whatever comes before it (install frames)."""
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


async def initialize(ws: ClientConnection, root: str, number: int = 1) -> dict[str, Any]:
    """An editor's ``initialize`` (as request ``number``) then ``initialized``; the answer."""
    answer = await request(ws, number, "initialize", {"processId": None, "rootUri": root, "capabilities": {}})
    await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    return answer


async def until(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.05)


async def metrics(server: BrokerServer) -> str:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(f"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {BROKER_TOKEN}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    length = int(
        next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")).split(b":")[
            1
        ]
    )
    body = await reader.readexactly(length)
    writer.close()
    return body.decode()


@contextlib.asynccontextmanager
async def stand_in(
    handler: Callable[[ServerConnection], Awaitable[None]], **options: Any
) -> AsyncIterator[str]:
    """A stand-in serve on 127.0.0.1 whose connections ``handler`` serves: its stream URL."""
    async with serve(handler, "127.0.0.1", 0, **options) as server:
        yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/api/v1/lsp/stream"


async def messages_until_stop(ws: ServerConnection) -> AsyncIterator[dict[str, Any]]:
    """A stand-in serve's side of a lease: the ready frame, then each message the broker sends, parsed,
    until its stop frame, which is answered as serve does (close 1000 ``stopped``)."""
    await ws.send(json.dumps(READY_FRAME))
    async for raw in ws:
        message = json.loads(raw)
        if message.get("control") == "stop":
            await ws.close(1000, "stopped")
            return
        yield message


@contextlib.asynccontextmanager
async def fake_upstream(behaviour: str, record: list[dict[str, Any]] | None = None) -> AsyncIterator[str]:
    """A stand-in for serve, for faults a real one does not produce on demand. It sends ``ready``, then:
    ``drop`` drops the TCP connection after the first message (no close frame: 1006); a number closes
    with that code after the first message; ``lsp`` answers ``initialize`` and ``shutdown`` and closes
    with 1000 when it
    receives ``exit`` (a server that exits when asked); ``install`` is ``lsp`` after half a second of
    install frames, cancelled (1001) by any frame that arrives meanwhile, as serve does; ``flood`` is
    ``lsp`` after 64 notifications of 1 MiB; ``deaf`` is ``lsp`` that never answers ``shutdown``. Its
    ready frame offers serve's control frames and the ``lsp`` kinds ack a settings frame as serve does;
    every message they receive is appended to ``record``."""

    async def handler(ws: ServerConnection) -> None:
        if behaviour == "install":
            await ws.send(json.dumps({"status": "installing", "language": "go"}))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):
                    await ws.recv()
                    await ws.close(1001, "going away")
                    return
            await ws.send(json.dumps({"status": "installed", "language": "go"}))
        await ws.send(json.dumps(READY_FRAME))
        if behaviour == "flood":
            log = {"type": 3, "message": "x" * (1024 * 1024)}
            for _ in range(64):
                await ws.send(json.dumps({"jsonrpc": "2.0", "method": "window/logMessage", "params": log}))
        if behaviour in ("lsp", "install", "flood", "deaf"):
            async for raw in ws:
                message = json.loads(raw)
                if record is not None:
                    record.append(message)
                if message.get("control") == "settings":
                    await ws.send(json.dumps({"ack": "settings", "changed": True}))
                    continue
                if message.get("method") == "exit":
                    await ws.close(1000, "")
                    return
                if message.get("method") == "shutdown" and behaviour != "deaf":
                    await ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": None}))
                if message.get("method") == "initialize":
                    answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}}
                    await ws.send(json.dumps(answer))
            return
        await ws.recv()
        if behaviour == "drop":
            ws.transport.abort()
        else:
            await ws.close(int(behaviour), "server stopped")

    async with stand_in(handler, max_size=None) as url:
        yield url
