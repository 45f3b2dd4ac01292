"""A caller of ``kandev-lsp code`` for the daemon tests: one workspace, one runtime folder, one tag."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from intel_projects import PYTHON, write
from stream_testkit import TAG_VARIABLE, tagged_alive
from stream_testkit import wait_until as _wait_until

KANDEV_LSP = str(Path(sys.executable).parent / "kandev-lsp")
REFERENCES = {"target": {"path": "lib.py", "symbol": "greet"}, "kind": "references"}


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def wait_until(predicate: Callable[[], bool], *, timeout: float, what: str) -> None:
    """Wait for a condition with a generous deadline (the shared machine is slow at times)."""
    assert _wait_until(predicate, timeout=timeout, interval=0.05), f"timed out waiting for {what}"


class Caller:
    """Runs ``kandev-lsp code`` against a small Python project (pyright) with this test's environment."""

    def __init__(self, tmp_path: Path, runtime: Path, tag: str, overrides: dict[str, str]) -> None:
        self.workspace = write(tmp_path / "ws", PYTHON)
        self.settings = tmp_path / "settings.json"
        self.runtime = runtime
        self.tag = tag
        self.env = {
            **os.environ,
            **overrides,
            TAG_VARIABLE: tag,
            "KANDEV_LSP_RUNTIME_DIR": str(runtime),
            "KANDEV_LSP_SETTINGS": str(self.settings),
        }

    def argv(self, *args: str) -> list[str]:
        return [KANDEV_LSP, "code", *args, "--workspace", str(self.workspace)]

    def run(self, *args: str, check: bool = True, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            self.argv(*args), capture_output=True, text=True, env=self.env, timeout=timeout, check=False
        )
        if check:
            assert done.returncode in (0, 1), (done.returncode, done.stderr)
        return done

    def call(self, tool: str, payload: Any, *flags: str) -> tuple[int, dict[str, Any]]:
        """A tool call: its exit status and its JSON result."""
        done = self.run(tool, "--json", json.dumps(payload), *flags)
        assert "warning" not in done.stderr, done.stderr  # answered by the daemon, not a fallback
        return done.returncode, json.loads(done.stdout)

    def daemons(self) -> list[int]:
        """This test's live daemons."""
        return [pid for pid in tagged_alive(self.tag) if "-m kandev_lsp.codedaemon" in cmdline(pid)]

    def servers(self) -> list[int]:
        """This test's live pyright processes."""
        return [pid for pid in tagged_alive(self.tag) if "pyright" in cmdline(pid)]

    def sockets(self) -> list[Path]:
        return sorted(self.runtime.glob("*.sock"))
