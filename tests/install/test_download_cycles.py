"""Many cancelled downloads leave no temporary files and no open file descriptors behind."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import os
import random
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from kandev_lsp.install.download import DownloadTimeouts, download_release_asset
from kandev_lsp.language import ReleaseAsset, ReleaseRecipe

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd (Linux)")

PACKED = gzip.compress(random.Random(3).randbytes(256 * 1024), mtime=0)
ASSET = ReleaseAsset("tool.gz", sha256=hashlib.sha256(PACKED).hexdigest())
TIMEOUTS = DownloadTimeouts(connect=2, headers=2, stalled_read=2)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def settle(baseline: int) -> int:
    """The fd count once the server's handler threads closed their sockets (they do so within ms)."""
    deadline = time.monotonic() + 5
    count = open_fds()
    while count > baseline and time.monotonic() < deadline:
        time.sleep(0.01)
        count = open_fds()
    return count


async def cancel_midway(server: Any, dest: Path, client: httpx.AsyncClient | None) -> None:
    recipe = ReleaseRecipe(version="1", base_url=server.url, assets={"linux-x86_64": ASSET}, bin="tool")
    moving = asyncio.Event()

    def progress(done: int, total: int | None) -> None:
        if done:
            moving.set()

    task = asyncio.create_task(
        download_release_asset(recipe, ASSET, dest, timeouts=TIMEOUTS, progress=progress, client=client)
    )
    await asyncio.wait_for(moving.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def serve_trickle(server: Any) -> None:
    # 64 KiB at once (so progress fires at once), then 1 KiB every 5 ms: always mid-body when cancelled.
    server.publish("1", "tool.gz", PACKED, chunk_size=64 * 1024, chunk_delay=0.005)


def test_100_cancelled_downloads_with_a_shared_client(release_server: Any, tmp_path: Path) -> None:
    serve_trickle(release_server)
    dest = tmp_path / "tool"

    async def scenario() -> tuple[int, int]:
        async with httpx.AsyncClient() as client:
            await cancel_midway(release_server, dest, client)  # warm-up: lazy imports, pools
            await asyncio.sleep(0.2)  # the server thread of the warm-up closes its socket
            baseline = open_fds()
            for _ in range(100):
                await cancel_midway(release_server, dest, client)
            return baseline, settle(baseline)

    baseline, after = asyncio.run(scenario())

    assert after <= baseline
    assert list(tmp_path.iterdir()) == []
    assert len(release_server.requests) == 101


def test_cancelled_downloads_with_their_own_clients(release_server: Any, tmp_path: Path) -> None:
    serve_trickle(release_server)
    dest = tmp_path / "tool"

    async def scenario() -> None:
        for _ in range(10):
            await cancel_midway(release_server, dest, None)

    asyncio.run(scenario())  # warm-up
    time.sleep(0.2)
    baseline = open_fds()
    asyncio.run(scenario())

    assert settle(baseline) <= baseline
    assert list(tmp_path.iterdir()) == []
