"""Faults a local server cannot easily produce, injected through httpx.MockTransport.

The main behaviour is tested against a real server in test_download.py; these cover a connect timeout,
redirect loops, and the response-header deadline for a transport that reports no connection events.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from pathlib import Path

import httpx
import pytest
from kandev_lsp.install.download import (
    DownloadConnectionError,
    DownloadTimeoutError,
    DownloadTimeouts,
    HttpStatusError,
    download_release_asset,
)
from kandev_lsp.language import ReleaseAsset, ReleaseRecipe

ASSET = ReleaseAsset("tool.gz", sha256=hashlib.sha256(b"x").hexdigest())
RECIPE = ReleaseRecipe(
    version="1.0", base_url="https://mirror.test/r", assets={"linux-x86_64": ASSET}, bin="tool"
)


def fetch(handler: httpx.MockTransport, dest: Path, timeouts: DownloadTimeouts | None = None) -> None:
    async def scenario() -> None:
        async with httpx.AsyncClient(transport=handler) as client:
            await download_release_asset(
                RECIPE, ASSET, dest, client=client, timeouts=timeouts or DownloadTimeouts(connect=1.5)
            )

    asyncio.run(scenario())


def test_connect_timeout_names_the_phase_and_host(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectTimeout("timed out", request=request)

    with pytest.raises(DownloadTimeoutError) as caught:
        fetch(httpx.MockTransport(handler), tmp_path / "tool")

    assert caught.value.phase == "connect"
    assert "timed out after 1.5 s connecting to mirror.test" in str(caught.value)
    assert "proxy" in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_redirect_loop_is_reported(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"Location": str(request.url.copy_with(query=b"sig=SECRET"))})

    with pytest.raises(DownloadConnectionError, match="too many redirects") as caught:
        fetch(httpx.MockTransport(handler), tmp_path / "tool")
    assert "SECRET" not in str(caught.value)


@pytest.mark.parametrize("status", [401, 403, 429, 500, 502])
def test_unexpected_statuses_carry_status_and_url(tmp_path: Path, status: int) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(status, content=b"no"))

    with pytest.raises(HttpStatusError) as caught:
        fetch(transport, tmp_path / "tool")

    assert caught.value.status == status
    assert f"HTTP {status}" in str(caught.value)
    assert "https://mirror.test/r/1.0/tool.gz" in str(caught.value)


def test_header_deadline_holds_for_a_transport_without_trace_events(tmp_path: Path) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(30)
        return httpx.Response(200)

    started = time.monotonic()
    with pytest.raises(DownloadTimeoutError) as caught:
        fetch(httpx.MockTransport(handler), tmp_path / "tool", DownloadTimeouts(connect=0.2, headers=0.3))

    assert caught.value.phase == "response headers"
    assert 0.45 <= time.monotonic() - started < 3


def test_in_memory_responses_of_a_mock_transport_are_accepted(tmp_path: Path) -> None:
    # httpx reads a response built from bytes at once; installers tested with MockTransport rely on this.
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=b"x"))
    asset = ReleaseAsset("tool", compression="none", sha256=hashlib.sha256(b"x").hexdigest())

    async def scenario() -> None:
        async with httpx.AsyncClient(transport=transport) as client:
            await download_release_asset(RECIPE, asset, tmp_path / "tool", client=client)

    asyncio.run(scenario())
    assert (tmp_path / "tool").read_bytes() == b"x"
