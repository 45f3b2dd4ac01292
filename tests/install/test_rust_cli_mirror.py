"""The built-in rust plugin installed through the CLI from a stand-in origin or mirror on 127.0.0.1.

rust-analyzer's releases publish no digest beside the asset; the origin's release metadata does (the
``digest`` of each asset in the GitHub releases API), so an install out of the box verifies against that.
A mirror publishes ``<asset>.sha256`` files, or the user gives the digest (``--sha256``). The asset here is
a small stand-in executable (the real one cannot be downloaded on these machines); everything else is the
real path: the plugin's asset table for this host, the URLs from the settings file, gunzip,
verification, the switch, and the resolver.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import kandev_lsp_rust
from kandev_lsp import HostPlatform


def cli(*args: str, home: Path, settings: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "KANDEV_LSP_SETTINGS": str(settings)}
    return subprocess.run(
        [sys.executable, "-m", "kandev_lsp.cli", *args], capture_output=True, text=True, env=env, check=False
    )


def test_rust_installs_from_a_mirror_with_a_user_digest(tmp_path: Path, release_server: Any) -> None:
    asset = kandev_lsp_rust.LANGUAGE.install.asset_for(HostPlatform.current())  # type: ignore[union-attr]
    assert asset is not None, "this test needs a Linux or macOS host on x86_64 or aarch64"
    script = f"#!{sys.executable}\nprint('rust-analyzer 0.0.0-mirror')\n".encode()
    data = gzip.compress(script)
    release_server.publish(kandev_lsp_rust.RELEASE_VERSION, asset.name, data)
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"lsp_release_base_urls": {"rust": release_server.url}}))
    home = tmp_path / "home"
    home.mkdir()

    refused = cli("install", "rust", "--json", home=home, settings=settings)
    assert refused.returncode == 20  # tried: the mirror publishes no digest beside the asset
    error = json.loads(refused.stdout)["error"]
    assert "digest" in error and "--sha256" in error

    done = cli(
        "install",
        "rust",
        "--json",
        "--sha256",
        hashlib.sha256(data).hexdigest(),
        home=home,
        settings=settings,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    receipt = json.loads(done.stdout)["receipt"]
    assert receipt["sha256"] == hashlib.sha256(data).hexdigest()

    resolved = json.loads(
        cli("resolve", "rust", "--json", "--env", "PATH=/nonexistent", home=home, settings=settings).stdout
    )
    assert resolved["status"] == "found" and resolved["source"] == "managed cache"
    ran = subprocess.run([resolved["executable"], "--version"], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "rust-analyzer 0.0.0-mirror"

    # doctor and list see the managed install, and the digest the user gave does not make it "off pin".
    doctor = json.loads(cli("doctor", "--json", "--no-version", home=home, settings=settings).stdout)
    rust = next(entry for entry in doctor["languages"] if entry["language"] == "rust")
    assert rust["managed"] == {
        "version": kandev_lsp_rust.RELEASE_VERSION,
        "matchesPin": True,
        "binaryPresent": True,
    }
    assert next(e for e in doctor["languages"] if e["language"] == "go")["managed"] is None
    listed = json.loads(cli("list", "--json", home=home, settings=settings).stdout)
    assert [(s["language"], s["matchesPin"]) for s in listed["servers"]] == [("rust", True)]


def test_rust_installs_out_of_the_box_verified_by_the_origins_release_metadata(
    tmp_path: Path, release_server: Any
) -> None:
    """Issue 7 item 23: `resolve` says installable, and `install rust` (no --sha256) keeps that promise."""
    asset = kandev_lsp_rust.LANGUAGE.install.asset_for(HostPlatform.current())  # type: ignore[union-attr]
    assert asset is not None, "this test needs a Linux or macOS host on x86_64 or aarch64"
    data = gzip.compress(f"#!{sys.executable}\nprint('rust-analyzer 0.0.0-origin')\n".encode())
    digest = hashlib.sha256(data).hexdigest()
    version = kandev_lsp_rust.RELEASE_VERSION
    release_server.publish(version, asset.name, data)
    release = {"tag_name": version, "assets": [{"name": asset.name, "digest": f"sha256:{digest}"}]}
    release_server.route(f"/api/tags/{version}", json.dumps(release).encode())
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps(
            {
                "lsp_release_base_urls": {"rust": release_server.url},
                "lsp_release_metadata_urls": {"rust": release_server.url + "/api/tags/{version}"},
            }
        )
    )
    home = tmp_path / "home"
    home.mkdir()

    before = json.loads(
        cli("resolve", "rust", "--json", "--env", "PATH=/nonexistent", home=home, settings=settings).stdout
    )
    assert before["status"] == "missing" and before["installable"] is True

    done = cli("install", "rust", "--json", home=home, settings=settings)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["receipt"]["sha256"] == digest
    assert release_server.paths_requested() == [f"/api/tags/{version}", f"/{version}/{asset.name}"]

    resolved = json.loads(
        cli("resolve", "rust", "--json", "--env", "PATH=/nonexistent", home=home, settings=settings).stdout
    )
    assert resolved["status"] == "found" and resolved["source"] == "managed cache"


def test_the_rust_plugin_declares_where_its_digests_are_published() -> None:
    recipe = kandev_lsp_rust.LANGUAGE.install
    assert recipe.metadata_url == (  # type: ignore[union-attr]
        "https://api.github.com/repos/rust-lang/rust-analyzer/releases/tags/{version}"
    )
    assert recipe.digest_files is False  # type: ignore[union-attr]
