"""``uninstall`` says when servers still run from the files it removes (round-4 trial).

Before, ``kandev-lsp uninstall python`` with an editor's pyright running from the cache printed
"removed" and nothing else: the server went on without the files it loads lazily (its stubs).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from kandev_lsp.install.owners import runs_from
from kandev_lsp.testing import fake_executable


def test_runs_from_matches_the_program_or_a_script_under_the_folder() -> None:
    folder = "/home/me/.kandev/lsp-servers/python"
    assert runs_from(folder, ["/usr/bin/node", f"{folder}/versions/1+ab/node_modules/p/langserver.js"])
    assert runs_from(folder + "/", [f"{folder}/versions/v1/bin/gopls", "serve"])
    assert not runs_from(folder, ["/usr/bin/node", f"{folder}-old/versions/1/langserver.js"])
    assert not runs_from(folder, [folder])  # the folder itself is not a file run from it
    assert not runs_from(folder, [])


def test_uninstall_names_the_servers_still_running_from_the_removed_files(tmp_path: Path) -> None:
    language = tmp_path / "home" / ".kandev" / "lsp-servers" / "go"
    started = tmp_path / "started"
    script = f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(60)\n"
    server = fake_executable(language / "versions" / "v0.1.0+ab" / "bin", "gopls", script)
    (language / "current").symlink_to("versions/v0.1.0+ab")
    (tmp_path / "ws").mkdir()
    argv = [sys.executable, "-m", "kandev_lsp.cli", "uninstall", "go", "--workspace", str(tmp_path / "ws")]
    running = subprocess.Popen([server, "serve"])
    try:
        deadline = time.monotonic() + 30
        while not started.exists():  # until then its command line may still be the forking pytest's
            assert running.poll() is None and time.monotonic() < deadline, "the stand-in server did not start"
            time.sleep(0.01)
        result = subprocess.run(
            [*argv, f"--env=HOME={tmp_path / 'home'}"],
            capture_output=True,
            text=True,
            env=dict(os.environ),
            check=False,
            timeout=60,
        )
    finally:
        running.kill()
        running.wait()
    assert result.returncode == 0, result.stderr
    assert result.stdout == "go: removed from the managed cache\n"
    assert (
        f"kandev-lsp: go: 1 process(es) still run from the removed files (pid {running.pid} ("
        in result.stderr
    )
    assert "restart them" in result.stderr
    assert not (language / "versions").exists()
