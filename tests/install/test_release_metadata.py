"""Digests from the release origin's metadata (issue 7 item 23), against a stand-in origin on 127.0.0.1.

rust-analyzer's releases publish no ``<asset>.sha256``; the origin's release metadata (the GitHub
releases API: ``assets[].digest`` = ``"sha256:<hex>"``) does carry each asset's digest. The decision of
where a digest comes from is pure (:func:`plan_digest`) and tested as a table; the fetch is tested against
a real HTTP server serving such JSON.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.install.digests import DigestPlan, parse_release_metadata, plan_digest
from kandev_lsp.install.download import (
    DigestMismatch,
    DigestUnavailableError,
    DownloadTimeouts,
    download_release_asset,
)
from kandev_lsp.language import ReleaseAsset, ReleaseRecipe

VERSION = "2025-11-24"
ASSET = "rust-analyzer-x86_64-unknown-linux-gnu.gz"
METADATA_PATH = "/repos/rust-lang/rust-analyzer/releases/tags/{version}"
FAST = DownloadTimeouts(connect=2.0, headers=1.0, stalled_read=1.0)
PACKED = gzip.compress(b"#!/bin/sh\necho rust-analyzer 0.0.0\n", mtime=0)
HEX = hashlib.sha256(PACKED).hexdigest()


def metadata(*assets: dict[str, Any]) -> bytes:
    """A release document shaped like the GitHub releases API's (the fields that matter, plus noise)."""
    return json.dumps({"tag_name": VERSION, "draft": False, "assets": list(assets)}).encode()


def entry(name: str = ASSET, digest: str | None = f"sha256:{HEX}") -> dict[str, Any]:
    return {"name": name, "size": len(PACKED), "digest": digest, "browser_download_url": f"https://x/{name}"}


def rust_like(
    server_url: str, *, metadata_url: str | None = None, digest_files: bool = False
) -> ReleaseRecipe:
    return ReleaseRecipe(
        version=VERSION,
        base_url=server_url,
        assets={"linux-x86_64": ReleaseAsset(ASSET)},
        bin="rust-analyzer",
        digest_files=digest_files,
        metadata_url=metadata_url,
    )


def download(recipe: ReleaseRecipe, dest: Path, **kw: Any) -> Any:
    asset = recipe.assets["linux-x86_64"]
    return asyncio.run(download_release_asset(recipe, asset, dest, timeouts=FAST, **kw))


# --------------------------------------------------------------------------------------------------
# Pure: where the digest comes from


ORIGIN_META = "https://origin.example/releases/{version}"


@pytest.mark.parametrize(
    ("asset", "recipe_kw", "base_url", "metadata_url", "expected"),
    [
        (ReleaseAsset(ASSET, sha256="ab" * 32), {"metadata_url": ORIGIN_META}, "https://m", None,
         DigestPlan("pinned", value="ab" * 32)),
        (ReleaseAsset(ASSET), {"metadata_url": ORIGIN_META, "digest_files": False}, None, None,
         DigestPlan("metadata", url=f"https://origin.example/releases/{VERSION}")),
        # A mirror is not the origin: its own .sha256 files, unless the user also names metadata.
        (ReleaseAsset(ASSET), {"metadata_url": ORIGIN_META, "digest_files": False}, "https://m", None,
         DigestPlan("file")),
        (ReleaseAsset(ASSET), {"metadata_url": ORIGIN_META}, "https://m", "http://127.0.0.1:1/t/{version}",
         DigestPlan("metadata", url=f"http://127.0.0.1:1/t/{VERSION}")),
        (ReleaseAsset(ASSET), {}, None, None, DigestPlan("file")),
        (ReleaseAsset(ASSET), {"digest_files": False}, None, None, DigestPlan("none")),
    ],
    ids=["pin wins", "origin metadata", "mirror files", "user metadata", "origin files", "nowhere"],
)  # fmt: skip
def test_where_the_digest_comes_from(
    asset: ReleaseAsset,
    recipe_kw: dict[str, Any],
    base_url: str | None,
    metadata_url: str | None,
    expected: DigestPlan,
) -> None:
    recipe = ReleaseRecipe(VERSION, "https://origin.example/dl", {"linux-x86_64": asset}, "ra", **recipe_kw)
    assert plan_digest(recipe, asset, base_url=base_url, metadata_url=metadata_url) == expected
    assert recipe.digest_declared(asset) is (expected.kind != "none" or base_url is not None)


def test_the_version_is_one_percent_encoded_path_segment() -> None:
    recipe = rust_like("https://o", metadata_url="https://o/tags/{version}")
    odd = ReleaseRecipe("1.0/../x", recipe.base_url, recipe.assets, recipe.bin, False, recipe.metadata_url)
    assert plan_digest(odd, odd.assets["linux-x86_64"]).url == "https://o/tags/1.0%2F..%2Fx"


def test_release_metadata_gives_the_assets_sha256() -> None:
    text = metadata(entry("other.gz", "sha256:" + "0" * 64), entry(digest=f"SHA256:{HEX.upper()}")).decode()
    assert parse_release_metadata(text, ASSET) == HEX


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("not json", "not JSON"),
        ('{"message": "Not Found"}', "no list of release assets"),
        (metadata(entry("other.gz")).decode(), "lists no asset named"),
        (metadata(entry(digest=None)).decode(), "records no digest"),
        (metadata(entry(digest="md5:" + "0" * 32)).decode(), "is not a SHA-256"),
        (metadata(entry(), entry(digest="sha256:" + "1" * 64)).decode(), "different digests"),
        (metadata(entry(digest="sha256:xyz")).decode(), "is not a SHA-256 digest"),
    ],
)
def test_release_metadata_without_a_usable_digest_says_why(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_release_metadata(text, ASSET)


# --------------------------------------------------------------------------------------------------
# Fetching it from a stand-in origin on 127.0.0.1


def test_the_origins_metadata_verifies_the_download(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED)
    release_server.route(METADATA_PATH.format(version=VERSION), metadata(entry()))
    recipe = rust_like(release_server.url, metadata_url=release_server.url + METADATA_PATH)

    result = download(recipe, tmp_path / "rust-analyzer")

    assert result.digest_source == "metadata" and result.sha256 == HEX
    assert (tmp_path / "rust-analyzer").read_bytes() == gzip.decompress(PACKED)
    # The metadata first (a missing digest fails before a long download), and no .sha256 is asked for.
    assert release_server.paths_requested() == [METADATA_PATH.format(version=VERSION), f"/{VERSION}/{ASSET}"]
    asked = release_server.requests[0].headers
    assert "json" in {k.lower(): v for k, v in asked.items()}["accept"]


def test_a_digest_in_the_metadata_that_the_bytes_do_not_match_installs_nothing(
    release_server: Any, tmp_path: Path
) -> None:
    release_server.publish(VERSION, ASSET, PACKED)
    release_server.route(METADATA_PATH.format(version=VERSION), metadata(entry(digest="sha256:" + "0" * 64)))
    recipe = rust_like(release_server.url, metadata_url=release_server.url + METADATA_PATH)
    with pytest.raises(DigestMismatch):
        download(recipe, tmp_path / "rust-analyzer")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("served", ["no digest", "404", "no such asset"])
def test_no_digest_from_the_metadata_stops_before_the_download_and_says_sha256(
    release_server: Any, tmp_path: Path, served: str
) -> None:
    release_server.publish(VERSION, ASSET, PACKED)
    path = METADATA_PATH.format(version=VERSION)
    if served == "404":
        release_server.route(path, b'{"message": "Not Found"}', status=404)
    else:
        release_server.route(path, metadata(entry(digest=None) if served == "no digest" else entry("x.gz")))
    recipe = rust_like(release_server.url, metadata_url=release_server.url + METADATA_PATH)
    with pytest.raises(DigestUnavailableError, match="--sha256"):
        download(recipe, tmp_path / "rust-analyzer")
    assert release_server.paths_requested() == [path]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("source", ["metadata", "digest file"])
def test_an_unreachable_digest_source_says_sha256_too(tmp_path: Path, source: str) -> None:
    """Issue 17 item 12: a connection refused left the advice out (only HTTP errors carried it)."""
    unreachable = "http://127.0.0.1:9"  # the discard port: nothing listens there
    recipe = (
        rust_like(unreachable, metadata_url=unreachable + METADATA_PATH)
        if source == "metadata"
        else rust_like(unreachable, digest_files=True)
    )
    with pytest.raises(DigestUnavailableError, match=r"could not be fetched: .*--sha256 HEX"):
        download(recipe, tmp_path / "rust-analyzer")
    assert list(tmp_path.iterdir()) == []


def test_a_recipe_with_no_digest_source_requests_nothing(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED)
    with pytest.raises(DigestUnavailableError, match="--sha256"):
        download(rust_like(release_server.url), tmp_path / "rust-analyzer")
    assert release_server.paths_requested() == []


def test_metadata_configured_by_the_user_replaces_the_origins(release_server: Any, tmp_path: Path) -> None:
    release_server.publish(VERSION, ASSET, PACKED)
    release_server.route(f"/mine/{VERSION}.json", metadata(entry()))
    recipe = rust_like("http://127.0.0.1:9/never", metadata_url="http://127.0.0.1:9/never/{version}")
    result = download(
        recipe,
        tmp_path / "rust-analyzer",
        base_url=release_server.url,
        metadata_url=release_server.url + "/mine/{version}.json",
    )
    assert result.digest_source == "metadata"
    assert release_server.paths_requested() == [f"/mine/{VERSION}.json", f"/{VERSION}/{ASSET}"]


def test_a_metadata_url_that_is_not_http_is_refused(tmp_path: Path) -> None:
    from kandev_lsp.install.download import UnsupportedAssetError

    recipe = rust_like("https://o", metadata_url="file:///etc/{version}")
    with pytest.raises(UnsupportedAssetError, match="http"):
        download(recipe, tmp_path / "rust-analyzer")
