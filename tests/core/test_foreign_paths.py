"""Paths of another platform are never resolved through this machine's filesystem (issue 17 item 7).

``resolve --platform windows-x86_64`` explains a Windows task on Linux. Its paths (``C:\\Users\\me``) are
not paths here: through ``os.path.realpath`` they became relative names under the current folder, so a
HOME of ``C:\\Users\\me`` was "inside the workspace" whenever the workspace was the current folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kandev_lsp.fileprobe import LocalFileProbe, ProbeStatus
from kandev_lsp.platform import HostPlatform

WINDOWS = HostPlatform("windows", "x86_64")


def test_resolve_for_windows_without_a_workspace_does_not_put_home_in_the_current_folder(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kandev_lsp.cli", "resolve", "python", "--json", "--platform", "windows-x86_64",
         "--env", r"HOME=C:\Users\me", "--env", r"PATH=C:\nodejs"],
        capture_output=True, text=True, cwd=tmp_path, env=os.environ, check=False,
    )  # fmt: skip
    data = json.loads(result.stdout)
    assert data["reason"] != "cache_unavailable", data["message"]
    assert "inside the workspace" not in data["message"]


def test_a_probe_of_a_foreign_platform_never_looks_at_this_filesystem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    planted = tmp_path / "C:\\tools\\gopls.exe"  # on Linux, one file name in the current folder
    planted.write_text("#!/bin/sh\n")
    planted.chmod(0o755)
    probe = LocalFileProbe(WINDOWS)
    assert probe.probe("C:\\tools\\gopls.exe").status is ProbeStatus.MISSING
    assert probe.real_path("C:\\Users\\me\\..\\me\\.kandev") == "C:\\Users\\me\\.kandev"
    assert probe.is_within("C:\\Users\\me\\.kandev", "c:/users/ME")  # Windows rules: case, separators
    assert not probe.is_within("C:\\Users\\me", str(tmp_path))
    assert not probe.is_within("C:\\Users\\meadow", "C:\\Users\\me")
