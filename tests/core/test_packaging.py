"""The built wheel: only the project's packages, typed, with the entry points the plugin host reads."""

from __future__ import annotations

import configparser
import subprocess
import sys
import zipfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "kandev_lsp",
    "kandev_lsp_typescript",
    "kandev_lsp_python",
    "kandev_lsp_go",
    "kandev_lsp_rust",
    "kandev_lsp_kotlin",
}


def test_wheel_holds_only_the_projects_packages(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(PROJECT),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("kandev_lsp-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/", 1)[0] for name in names if not name.split("/", 1)[0].endswith(".dist-info")}
    assert top_level == PACKAGES  # never a bare `core`, `plugins` or `tests`
    assert {f"{package}/py.typed" for package in PACKAGES} <= set(names)
    assert not any("/tests/" in name or name.startswith("tests/") for name in names)
    entry_points = configparser.ConfigParser()
    [info] = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
    entry_points.read_string(zipfile.ZipFile(wheel).read(info).decode())
    assert dict(entry_points["kandev_lsp"]) == {
        "typescript": "kandev_lsp_typescript",
        "python": "kandev_lsp_python",
        "go": "kandev_lsp_go",
        "rust": "kandev_lsp_rust",
        "kotlin": "kandev_lsp_kotlin",
    }
    assert entry_points["console_scripts"]["kandev-lsp"] == "kandev_lsp.cli:main"
