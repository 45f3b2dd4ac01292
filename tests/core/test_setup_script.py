"""``scripts/setup``, the first half of the README's first command: quick and quiet when nothing changed.

The script is run for real (bash, the real toolchain checks) on a copy of the checkout's ``scripts/setup``
and ``pyproject.toml``, with a stand-in ``.venv/bin/python`` that logs how it is called: that is what
shows whether pip ran, without reinstalling the suite's own environment under it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/bin/sh
echo "$*" >> "$PYTHON_LOG"
case "$*" in
  *"print(sys.version)"*) echo "3.11.7 (stand-in)" ;;
  "-m pip install"*) [ -z "$PIP_FAILS" ] || { echo "ERROR: no matching distribution" >&2; exit 1; } ;;
esac
exit 0
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(PROJECT / "scripts" / "setup", root / "scripts" / "setup")
    shutil.copy(PROJECT / "pyproject.toml", root / "pyproject.toml")
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    return root


def setup(checkout: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(checkout / "scripts" / "setup")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON_LOG": str(checkout / "python.log"), **env},
        check=False,
        timeout=120,
    )


def pip_runs(checkout: Path) -> list[str]:
    log = checkout / "python.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if line.startswith("-m pip install")]


def test_setup_installs_once_then_is_quiet_until_pyproject_changes(checkout: Path) -> None:
    first = setup(checkout)
    assert first.returncode == 0, first.stderr
    assert any(run.endswith("-e .[test]") for run in pip_runs(checkout))
    installs = len(pip_runs(checkout))

    again = setup(checkout)
    assert again.returncode == 0, again.stderr
    assert len(pip_runs(checkout)) == installs  # nothing reinstalled
    assert again.stdout == "setup: ready (.venv/bin/kandev-lsp)\n"
    assert again.stderr == ""

    with (checkout / "pyproject.toml").open("a") as handle:
        handle.write("\n# a new dependency would go here\n")
    changed = setup(checkout)
    assert changed.returncode == 0, changed.stderr
    assert len(pip_runs(checkout)) > installs


def test_a_failed_pip_install_fails_setup_and_is_retried(checkout: Path) -> None:
    failed = setup(checkout, PIP_FAILS="1")
    assert failed.returncode != 0
    assert "no matching distribution" in failed.stderr
    assert "setup: ready" not in failed.stdout
    retried = setup(checkout)
    assert retried.returncode == 0, retried.stderr
    assert any(run.endswith("-e .[test]") for run in pip_runs(checkout)[1:])
