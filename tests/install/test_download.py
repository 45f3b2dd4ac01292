"""Release downloads against a real HTTP server on 127.0.0.1 (the ``release_server`` fixture).

Each test checks what a user would see: the file and its mode after success, and after every failure
an untouched folder (no target, no temporary file) plus an error that says what happened and where.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import os
import random
import socket
import stat
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from kandev_lsp.install.download import (
    AssetNotFoundError,
    AssetTooLargeError,
    CorruptAssetError,
    DigestMismatch,
    DigestUnavailableError,
    DownloadConnectionError,
    DownloadError,
    DownloadTimeoutError,
    DownloadTimeouts,
    HttpStatusError,
    UnsupportedAssetError,
    download_release_asset,
)
from kandev_lsp.language import ReleaseAsset, ReleaseRecipe

T = TypeVar("T")

VERSION = "2025-11-24"
ASSET = "rust-analyzer-x86_64-unknown-linux-gnu.gz"
FAST = DownloadTimeouts(connect=2.0, headers=0.5, stalled_read=0.5)
# Not a valid place to download from: tests that pass base_url prove the override is used.
UNUSED_BASE = "http://127.0.0.1:9/never-used"

# Incompressible, so the gzip asset is ~300 KiB on the wire and cancellation can land mid-body.
PAYLOAD = b"#!/bin/sh\necho rust-analyzer 0.0.0\n" + random.Random(7).randbytes(300 * 1024)
PACKED = gzip.compress(PAYLOAD, mtime=0)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def recipe(asset: ReleaseAsset, base_url: str = UNUSED_BASE) -> ReleaseRecipe:
    return ReleaseRecipe(
        version=VERSION, base_url=base_url, assets={"linux-x86_64": asset}, bin="rust-analyzer"
    )


def names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def download(server: Any, asset: ReleaseAsset, dest: Path, **kw: Any) -> Any:
    kw.setdefault("timeouts", FAST)
    return run(download_release_asset(recipe(asset), asset, dest, base_url=server.url, **kw))


# --------------------------------------------------------------------------------------------------
# Success


def test_pinned_digest_installs_the_decompressed_executable(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED)
    dest = tmp_path / "bin" / "rust-analyzer"

    result = download(release_server, ReleaseAsset(ASSET, sha256=sha(PACKED)), dest)

    assert dest.read_bytes() == PAYLOAD
    assert stat.S_IMODE(dest.stat().st_mode) == 0o755
    assert names(dest.parent) == ["rust-analyzer"]
    assert result.path == dest
    assert result.sha256 == sha(PACKED)
    assert result.size == len(PACKED)
    assert result.unpacked_size == len(PAYLOAD)
    assert result.digest_source == "pinned"
    assert result.url == f"{release_server.url}/{VERSION}/{ASSET}"
    # A pinned digest needs no .sha256 file, and the server is asked not to re-encode the body.
    assert release_server.paths_requested() == [f"/{VERSION}/{ASSET}"]
    assert release_server.requests[0].headers["accept-encoding"] == "identity"


def test_recipe_base_url_is_used_when_no_override(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED)
    asset = ReleaseAsset(ASSET, sha256=sha(PACKED))
    dest = tmp_path / "rust-analyzer"

    run(download_release_asset(recipe(asset, base_url=release_server.url + "/"), asset, dest, timeouts=FAST))

    assert dest.read_bytes() == PAYLOAD


@pytest.mark.parametrize(
    "published",
    [
        "{hex}\n",
        "{hex}  {name}\n",
        "{hex} *{name}\n",
        "{HEX}  ./dist/{name}",
        "SHA256 ({name}) = {hex}\n",
        "# digests\n{other}  other.gz\n{hex}  {name}\n",
    ],
    ids=["bare", "sha256sum", "binary-mode", "upper-case-with-path", "bsd-tag", "several-files"],
)
def test_published_digest_is_used_when_none_is_pinned(
    release_server: Any, tmp_path: Path, published: str
) -> None:
    text = published.format(hex=sha(PACKED), HEX=sha(PACKED).upper(), name=ASSET, other="0" * 64)
    release_server.publish(VERSION, ASSET, PACKED, sha256_text=text)
    dest = tmp_path / "rust-analyzer"

    result = download(release_server, ReleaseAsset(ASSET), dest)

    assert dest.read_bytes() == PAYLOAD
    assert result.digest_source == "published"
    # The digest is fetched first, so a missing one fails before a long download.
    assert release_server.paths_requested() == [f"/{VERSION}/{ASSET}.sha256", f"/{VERSION}/{ASSET}"]


def test_uncompressed_asset_is_written_as_is_and_executable(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, "tool", PAYLOAD)
    dest = tmp_path / "tool"

    result = download(release_server, ReleaseAsset("tool", compression="none", sha256=sha(PAYLOAD)), dest)

    assert dest.read_bytes() == PAYLOAD
    assert stat.S_IMODE(dest.stat().st_mode) == 0o755
    assert result.unpacked_size == result.size == len(PAYLOAD)


def test_archive_asset_is_stored_unextracted_and_not_executable(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, "tool.tar.gz", PACKED)
    dest = tmp_path / "download" / "tool.tar.gz"

    download(release_server, ReleaseAsset("tool.tar.gz", compression="tar.gz", sha256=sha(PACKED)), dest)

    assert dest.read_bytes() == PACKED
    assert stat.S_IMODE(dest.stat().st_mode) == 0o644


def test_redirect_with_signed_query_is_followed(release_server: Any, tmp_path: Path) -> None:
    release_server.route(f"/{VERSION}/{ASSET}", status=302, headers={"Location": "/blob/1?token=SECRET"})
    release_server.route("/blob/1", PACKED)
    dest = tmp_path / "rust-analyzer"

    result = download(release_server, ReleaseAsset(ASSET, sha256=sha(PACKED)), dest)

    assert dest.read_bytes() == PAYLOAD
    assert "SECRET" not in result.url


def test_body_without_content_length_reports_unknown_total(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED, content_length=None, chunk_size=8192)
    calls: list[tuple[int, int | None]] = []

    download(
        release_server,
        ReleaseAsset(ASSET, sha256=sha(PACKED)),
        tmp_path / "ra",
        progress=lambda *a: calls.append(a),
    )

    assert {total for _, total in calls} == {None}
    assert calls[-1] == (len(PACKED), None)


def test_progress_is_monotone_throttled_and_ends_at_total(release_server: Any, tmp_path: Path) -> None:
    body = os.urandom(1024 * 1024)  # incompressible: 1 MiB on the wire
    packed = gzip.compress(body, mtime=0)
    release_server.publish(VERSION, ASSET, packed, chunk_size=1024)
    calls: list[tuple[int, int | None]] = []

    started = time.monotonic()
    download(
        release_server,
        ReleaseAsset(ASSET, sha256=sha(packed)),
        tmp_path / "ra",
        progress=lambda *a: calls.append(a),
    )
    elapsed = time.monotonic() - started

    done = [value for value, _ in calls]
    assert calls[0] == (0, len(packed))
    assert calls[-1] == (len(packed), len(packed))
    assert {total for _, total in calls} == {len(packed)}
    assert done == sorted(done) and len(set(done)) == len(done)
    # At most one report per 64 KiB, plus one per 100 ms of a slow transfer, plus first and last.
    assert len(calls) <= len(packed) // (64 * 1024) + int(elapsed / 0.1) + 3
    # ...and not one per 1 KiB chunk the server wrote.
    assert len(calls) < len(packed) // 1024 // 4


def test_given_client_is_used_and_left_open(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED)
    asset = ReleaseAsset(ASSET, sha256=sha(PACKED))

    async def scenario() -> bool:
        async with httpx.AsyncClient(headers={"X-Mirror-Key": "k"}) as client:
            await download_release_asset(
                recipe(asset),
                asset,
                tmp_path / "ra",
                base_url=release_server.url,
                client=client,
                timeouts=FAST,
            )
            return client.is_closed

    assert run(scenario()) is False
    assert release_server.requests[0].headers["x-mirror-key"] == "k"
    assert (tmp_path / "ra").read_bytes() == PAYLOAD


# --------------------------------------------------------------------------------------------------
# Digest failures publish nothing


def test_pinned_digest_mismatch_leaves_no_file(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED)
    wrong = sha(b"something else")

    with pytest.raises(DigestMismatch) as caught:
        download(release_server, ReleaseAsset(ASSET, sha256=wrong), tmp_path / "rust-analyzer")

    message = str(caught.value)
    assert wrong in message and sha(PACKED) in message
    assert f"{release_server.url}/{VERSION}/{ASSET}" in message
    assert (caught.value.expected, caught.value.got) == (wrong, sha(PACKED))
    assert names(tmp_path) == []


def test_mismatch_never_replaces_an_existing_file(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED, sha256_text=sha(b"tampered"))
    dest = tmp_path / "rust-analyzer"
    dest.write_bytes(b"previous version")

    with pytest.raises(DigestMismatch):
        download(release_server, ReleaseAsset(ASSET), dest)

    assert dest.read_bytes() == b"previous version"
    assert names(tmp_path) == ["rust-analyzer"]


def test_no_pinned_and_no_published_digest_fails_before_downloading(
    release_server: Any, tmp_path: Path
) -> None:
    release_server.publish(VERSION, ASSET, PACKED)

    with pytest.raises(DigestUnavailableError) as caught:
        download(release_server, ReleaseAsset(ASSET), tmp_path / "rust-analyzer")

    message = str(caught.value)
    assert f"{release_server.url}/{VERSION}/{ASSET}.sha256" in message
    assert "--sha256" in message and "publishes <asset>.sha256" in message
    assert release_server.paths_requested() == [f"/{VERSION}/{ASSET}.sha256"]
    assert names(tmp_path) == []


def test_unreadable_published_digest_is_reported(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED, sha256_text="<html>Welcome to our mirror</html>")

    with pytest.raises(DigestUnavailableError, match=r"holds no usable digest: line 1"):
        download(release_server, ReleaseAsset(ASSET), tmp_path / "rust-analyzer")
    assert names(tmp_path) == []


def test_corrupt_gzip_with_matching_digest_is_refused(release_server: Any, tmp_path: Path) -> None:
    broken = PACKED[:10] + b"\xff" * 5000  # a gzip header, then a reserved deflate block type
    release_server.publish(VERSION, ASSET, broken)

    with pytest.raises(CorruptAssetError, match="not a valid gzip stream"):
        download(release_server, ReleaseAsset(ASSET, sha256=sha(broken)), tmp_path / "rust-analyzer")
    assert names(tmp_path) == []


def test_corrupt_download_is_reported_as_digest_mismatch(release_server: Any, tmp_path: Path) -> None:
    # A damaged transfer fails gzip too; the digest is the more useful thing to report.
    broken = PACKED[:10] + b"\xff" * 5000
    release_server.publish(VERSION, ASSET, broken)

    with pytest.raises(DigestMismatch):
        download(release_server, ReleaseAsset(ASSET, sha256=sha(PACKED)), tmp_path / "rust-analyzer")
    assert names(tmp_path) == []


def test_truncated_gzip_is_refused(release_server: Any, tmp_path: Path) -> None:
    cut = PACKED[: len(PACKED) // 2]
    release_server.publish(VERSION, ASSET, cut)

    with pytest.raises(CorruptAssetError, match="truncated"):
        download(release_server, ReleaseAsset(ASSET, sha256=sha(cut)), tmp_path / "rust-analyzer")
    assert names(tmp_path) == []


def test_decompression_bomb_is_stopped_at_the_limit(release_server: Any, tmp_path: Path) -> None:
    bomb = gzip.compress(bytes(8 * 1024 * 1024), mtime=0)  # 8 MiB of zeros in ~8 KiB
    release_server.publish(VERSION, ASSET, bomb)

    with pytest.raises(AssetTooLargeError, match="decompresses to more than 1048576 bytes"):
        download(
            release_server, ReleaseAsset(ASSET, sha256=sha(bomb)), tmp_path / "ra", max_bytes=1024 * 1024
        )
    assert names(tmp_path) == []


def test_oversized_content_length_is_refused_before_the_body(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED)

    with pytest.raises(AssetTooLargeError):
        download(release_server, ReleaseAsset(ASSET, sha256=sha(PACKED)), tmp_path / "ra", max_bytes=1000)
    assert names(tmp_path) == []


# --------------------------------------------------------------------------------------------------
# HTTP and network failures


def test_404_names_url_version_and_what_to_check(release_server: Any, tmp_path: Path) -> None:
    with pytest.raises(AssetNotFoundError) as caught:
        download(release_server, ReleaseAsset(ASSET, sha256=sha(PACKED)), tmp_path / "rust-analyzer")

    message = str(caught.value)
    assert f"{release_server.url}/{VERSION}/{ASSET}" in message
    assert "HTTP 404" in message and f"version {VERSION}" in message and "mirror" in message
    assert names(tmp_path) == []


def test_other_status_reports_status_and_url(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, b"oops", status=503)

    with pytest.raises(HttpStatusError) as caught:
        download(release_server, ReleaseAsset(ASSET, sha256=sha(PACKED)), tmp_path / "rust-analyzer")

    assert caught.value.status == 503
    assert "HTTP 503" in str(caught.value) and f"/{VERSION}/{ASSET}" in str(caught.value)
    assert names(tmp_path) == []


def test_credentials_and_tokens_never_appear_in_errors(release_server: Any, tmp_path: Path) -> None:
    release_server.route(f"/{VERSION}/{ASSET}", status=302, headers={"Location": "/blob/1?X-Token=SECRET"})
    release_server.route("/blob/1", b"denied", status=403)
    base = release_server.url.replace("http://", "http://mirror-user:PASSWORD@")
    asset = ReleaseAsset(ASSET, sha256=sha(PACKED))

    with pytest.raises(HttpStatusError) as caught:
        run(download_release_asset(recipe(asset), asset, tmp_path / "ra", base_url=base, timeouts=FAST))

    message = str(caught.value)
    assert "SECRET" not in message and "PASSWORD" not in message and "mirror-user" not in message
    assert "SECRET" not in caught.value.url and "PASSWORD" not in caught.value.url
    assert "HTTP 403" in message
    # The credentials were really sent, so their absence from the message is the redaction at work.
    assert release_server.requests[0].headers["authorization"].startswith("Basic ")


def test_connection_refused_says_where_and_what_to_check(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    asset = ReleaseAsset(ASSET, sha256=sha(PACKED))

    with pytest.raises(DownloadConnectionError) as caught:
        run(
            download_release_asset(
                recipe(asset), asset, tmp_path / "ra", base_url=f"http://127.0.0.1:{port}", timeouts=FAST
            )
        )

    assert "could not connect to 127.0.0.1" in str(caught.value)
    assert "network" in str(caught.value)
    assert names(tmp_path) == []


def test_stalled_response_headers_time_out(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED, hold_headers=True)

    timeouts = DownloadTimeouts(connect=10.0, headers=0.5, stalled_read=0.5)

    started = time.monotonic()
    with pytest.raises(DownloadTimeoutError) as caught:
        download(release_server, ReleaseAsset(ASSET, sha256=sha(PACKED)), tmp_path / "ra", timeouts=timeouts)
    elapsed = time.monotonic() - started

    assert caught.value.phase == "response headers"
    assert "no response headers within 0.5 s" in str(caught.value)
    # Well under 10.5 s: the deadline starts when the request is sent (httpcore's trace events), not the
    # connect + headers fallback used for transports that report no events.
    assert 0.45 <= elapsed < 5
    assert names(tmp_path) == []


def test_stalled_body_times_out_and_leaves_nothing(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED, stall_after=1000)

    with pytest.raises(DownloadTimeoutError) as caught:
        download(release_server, ReleaseAsset(ASSET, sha256=sha(PACKED)), tmp_path / "rust-analyzer")

    assert caught.value.phase == "body"
    assert "stalled: no data for 0.5 s after 1000 bytes" in str(caught.value)
    assert names(tmp_path) == []


def test_stalled_redirect_body_times_out(release_server: Any, tmp_path: Path) -> None:
    release_server.route(
        f"/{VERSION}/{ASSET}", b"moved" * 100, status=302, headers={"Location": "/blob/1"}, stall_after=10
    )
    release_server.route("/blob/1", PACKED)

    started = time.monotonic()
    with pytest.raises(DownloadTimeoutError, match=r"a redirect from .* stalled for 0\.5 s") as caught:
        download(release_server, ReleaseAsset(ASSET, sha256=sha(PACKED)), tmp_path / "rust-analyzer")

    assert caught.value.phase == "body"
    assert time.monotonic() - started < 5  # the 0.5 s stall, not a longer timeout (the message says 0.5 s)
    assert release_server.paths_requested() == [f"/{VERSION}/{ASSET}"]
    assert names(tmp_path) == []


def test_slow_but_moving_body_is_not_a_stall(release_server: Any, tmp_path: Path) -> None:
    # 8 pieces 0.1 s apart: 0.7 s in all, more than the 0.5 s stall limit; no overall limit applies.
    body = PACKED[:8000]
    release_server.publish(VERSION, ASSET, body, chunk_size=1000, chunk_delay=0.1)
    asset = ReleaseAsset(ASSET, compression="none", sha256=sha(body))

    download(release_server, asset, tmp_path / "ra")

    assert (tmp_path / "ra").read_bytes() == body


def test_connection_closed_mid_body_is_reported(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED, close_after=5000)

    with pytest.raises(DownloadConnectionError, match="broke while downloading"):
        download(release_server, ReleaseAsset(ASSET, sha256=sha(PACKED)), tmp_path / "rust-analyzer")
    assert names(tmp_path) == []


# --------------------------------------------------------------------------------------------------
# Cancellation


def test_cancel_midway_leaves_no_file_and_no_temp_file(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED, chunk_size=1024, chunk_delay=0.01)
    asset = ReleaseAsset(ASSET, sha256=sha(PACKED))
    dest = tmp_path / "rust-analyzer"

    async def scenario() -> list[str]:
        moving = asyncio.Event()

        def progress(done: int, total: int | None) -> None:
            if done > 0:
                moving.set()

        task = asyncio.create_task(
            download_release_asset(
                recipe(asset), asset, dest, base_url=release_server.url, timeouts=FAST, progress=progress
            )
        )
        await asyncio.wait_for(moving.wait(), 5)
        during = names(tmp_path)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return during

    during = run(scenario())

    assert len(during) == 1 and during[0].startswith(".rust-analyzer.") and during[0].endswith(".part")
    assert names(tmp_path) == []


# --------------------------------------------------------------------------------------------------
# Refused before any request


@pytest.mark.parametrize(
    ("asset", "base", "fragment"),
    [
        (ReleaseAsset(ASSET, compression="xz", sha256="0" * 64), None, "compression 'xz'"),
        (ReleaseAsset(ASSET, sha256="abc123"), None, "not a SHA-256 digest"),
        (ReleaseAsset(ASSET, sha256="0" * 64), "ftp://mirror.invalid/releases", "http:// or https://"),
        (ReleaseAsset(ASSET, sha256="0" * 64), "https://mirror.invalid/r?token=SECRET", "query string"),
    ],
    ids=["compression", "pinned-digest", "scheme", "query"],
)
def test_bad_recipe_or_base_url_fails_before_any_request(
    release_server: Any, tmp_path: Path, asset: ReleaseAsset, base: str | None, fragment: str
) -> None:
    with pytest.raises(UnsupportedAssetError) as caught:
        run(
            download_release_asset(recipe(asset), asset, tmp_path / "ra", base_url=base or release_server.url)
        )

    assert fragment in str(caught.value)
    assert "SECRET" not in str(caught.value)
    assert release_server.paths_requested() == []
    assert names(tmp_path) == []


def test_every_error_is_a_download_error() -> None:
    for error in (
        AssetNotFoundError,
        HttpStatusError,
        DownloadTimeoutError,
        DownloadConnectionError,
        DigestUnavailableError,
        DigestMismatch,
        CorruptAssetError,
        AssetTooLargeError,
        UnsupportedAssetError,
    ):
        assert issubclass(error, DownloadError)
