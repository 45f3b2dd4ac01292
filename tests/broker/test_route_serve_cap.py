"""A ``serve`` whose session cap is reached answers 4005 before starting anything; the broker passes that
verdict on as 4005 ``too many language servers`` in both modes (lease mode used to turn it into 4009,
"the connection failed while the server may still run", which sends a client reconnecting in a loop)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kandev_lsp.broker.closecodes import client_close_for_upstream
from kandev_lsp.host import PluginHost
from kandev_lsp.stream.auth import StreamToken
from kandev_lsp.stream.server import StreamConfig, StreamServer
from kandev_lsp.taskenv import Task, TaskEnvironment
from routekit import SERVE_TOKEN, TAG, broker, client, closed_with, needs_gopls, one_session, ready


def test_serve_at_capacity_is_relayed_as_4005() -> None:
    assert client_close_for_upstream(4005) == 4005


@contextlib.asynccontextmanager
async def capped_serve(tmp_path: Path, tag: str) -> AsyncIterator[StreamServer]:
    """A real serve (Debian's gopls) that runs one session at a time."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "go.mod").write_text("module example.com/w\n\ngo 1.19\n")
    environment = TaskEnvironment.from_agent({"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", TAG: tag})
    async with StreamServer(
        plugins=PluginHost.load(environ={}),
        task=Task(str(workspace), environment),
        token=StreamToken(SERVE_TOKEN),
        config=StreamConfig(close_timeout=2.0, max_sessions=1),
    ) as server:
        yield server


@needs_gopls
@pytest.mark.parametrize("continuity", [False, True], ids=["proxy", "leases"])
def test_a_full_serve_closes_the_next_client_with_4005(tmp_path: Path, tag: str, continuity: bool) -> None:
    async def scenario() -> None:
        async with (
            capped_serve(tmp_path, tag) as serve,
            broker(one_session(serve.url), continuity=continuity) as server,
            client(server, "/lsp/s1?language=go") as first,
        ):
            await ready(first)
            async with client(server, "/lsp/s1?language=go") as second:
                assert await closed_with(second) == (4005, "too many language servers")
            assert serve.sessions == 1

    asyncio.run(scenario())
