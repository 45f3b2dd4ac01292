"""``--settings FILE`` reaches every command that reads settings (issue 7 item 20).

Before, ``install`` had no ``--settings``: a mirror came only from ``KANDEV_LSP_SETTINGS`` in
kandev-lsp's own environment, and ``--env KANDEV_LSP_SETTINGS=...`` was silently ignored.
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


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KANDEV_LSP_SETTINGS"}
    env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "kandev_lsp.cli", *args], capture_output=True, text=True, env=env, check=False
    )


def test_install_takes_its_mirror_from_the_settings_flag(tmp_path: Path, release_server: Any) -> None:
    asset = kandev_lsp_rust.LANGUAGE.install.asset_for(HostPlatform.current())  # type: ignore[union-attr]
    assert asset is not None, "this test needs a Linux or macOS host on x86_64 or aarch64"
    data = gzip.compress(f"#!{sys.executable}\nprint('rust-analyzer 0.0.0-flag')\n".encode())
    release_server.publish(kandev_lsp_rust.RELEASE_VERSION, asset.name, data)
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps({"lsp_release_base_urls": {"rust": release_server.url}, "lsp_auto_start_languages": ["c"]})
    )
    home = tmp_path / "home"
    home.mkdir()
    digest = hashlib.sha256(data).hexdigest()

    done = cli("install", "rust", "--json", "--sha256", digest, "--settings", str(settings), home=home)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["receipt"]["sha256"] == digest
    assert any(path.endswith(asset.name) for path in release_server.paths_requested())
    # A language with no plugin here is a warning, printed once, not an error.
    assert done.stderr.count("no plugin on this host provides ['c']") == 1

    # The same file through --env is refused, not ignored (the install would go to the public origin).
    refused = cli("install", "rust", "--env", f"KANDEV_LSP_SETTINGS={settings}", home=home)
    assert refused.returncode == 2 and "pass --settings FILE" in refused.stderr
