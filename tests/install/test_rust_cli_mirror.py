"""The built-in rust plugin installed through the CLI from a mirror on 127.0.0.1.

rust-analyzer's releases publish no digest beside the asset, so an install verifies against a digest the
plugin pins or the user gives (``--sha256``). The asset here is a small stand-in executable (the real one
cannot be downloaded on these machines); everything else is the real path: the plugin's asset table for
this host, the mirror from the settings file, gunzip, verification, the switch, and the resolver.
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
    assert refused.returncode == 1
    assert "digest" in json.loads(refused.stdout)["error"]

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
