"""``kandev-lsp code``: one tool call from the command line, JSON on stdout, exit 0 / 1 / 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from intel_projects import PYTHON, write
from stream_testkit import TAG_VARIABLE, RealServers

KANDEV_LSP = str(Path(sys.executable).parent / "kandev-lsp")


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The one-shot path (``--no-daemon``; the warm daemon's calls are tests/codedaemon's)."""
    return subprocess.run(
        [KANDEV_LSP, *args, "--no-daemon"], capture_output=True, text=True, env=env, timeout=240, check=False
    )


def test_usage_errors_and_failed_results(tmp_path: Path) -> None:
    env = {**os.environ, "KANDEV_LSP_SETTINGS": str(tmp_path / "none.json")}
    bad_json = _run(["code", "code_symbols", "--workspace", str(tmp_path), "--json", "{nope"], env)
    assert bad_json.returncode == 2 and "--json is not JSON" in bad_json.stderr
    missing = _run(["code", "code_symbols", "--workspace", str(tmp_path / "absent")], env)
    assert missing.returncode == 1 and "not an existing folder" in missing.stderr  # a reported failure
    unknown = _run(["code", "code_nope", "--workspace", str(tmp_path), "--json", "{}"], env)
    assert unknown.returncode == 2 and unknown.stdout == ""  # a usage error: nothing ran
    assert "no tool 'code_nope'" in unknown.stderr and "code_navigate" in unknown.stderr


@pytest.mark.real_server
@pytest.mark.network_registry
@pytest.mark.timeout(300)
def test_one_call_with_a_cold_start(tmp_path: Path, real_servers: RealServers, tag: str) -> None:
    folder = write(tmp_path / "py", PYTHON)
    env = {**os.environ, **real_servers.overrides(), TAG_VARIABLE: tag}
    env["KANDEV_LSP_SETTINGS"] = str(tmp_path / "none.json")
    payload = {"target": {"path": "lib.py", "symbol": "greet"}, "kind": "references"}
    done = _run(["code", "navigate", "--workspace", str(folder), "--json", json.dumps(payload)], env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["summary"] == "5 references · 2 files" and result["target"]["symbol"] == "greet"
