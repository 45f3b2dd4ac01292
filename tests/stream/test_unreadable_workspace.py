"""An unreadable workspace is reported as such, when the command starts, never blamed on the server
(issue 17 item 5): ``run``, ``serve`` (at start, and its 4008 path when the folder becomes unreadable
later) and ``code`` all say "workspace ... is not accessible (permission denied)". Before, ``run`` said
"cannot start .../pyright-langserver: permission denied", ``serve`` closed 4008 with the same, and
``code`` said "no file 'app.py' in the workspace".

The commands run as a user the folder's mode applies to: as root (this machine), without the capabilities
that bypass file permissions (``setpriv --bounding-set=-dac_override,-dac_read_search``); as anyone else,
as they are. The server is Debian's gopls.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from stream_testkit import StreamKit
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

pytestmark = pytest.mark.real_server

DENIED = "is not accessible (permission denied)"
TOKEN = "unreadable-workspace-token-0123456789"


def as_the_user(argv: list[str]) -> list[str]:
    """``argv`` run where file permissions apply (root would read a mode-000 folder anyway)."""
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to drop root's file-permission override"
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--", *argv]


def kandev(*args: str) -> list[str]:
    return as_the_user([sys.executable, "-m", "kandev_lsp.cli", *args])


@pytest.fixture
def locked(kit: StreamKit) -> Iterator[Path]:
    """The kit's workspace, with a Go file in it, unreadable for the test's commands."""
    (kit.workspace / "main.go").write_text("package main\n\nfunc main() {}\n")
    kit.workspace.chmod(0)
    yield kit.workspace
    kit.workspace.chmod(0o755)


def task_flags(kit: StreamKit) -> list[str]:
    return ["--workspace", str(kit.workspace), "--env", "PATH=/usr/bin:/bin", "--env", f"HOME={kit.home}"]


def test_run_says_the_workspace_is_not_accessible(kit: StreamKit, locked: Path) -> None:
    result = subprocess.run(
        kandev("run", "go", *task_flags(kit)),
        stdin=subprocess.PIPE,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert f"workspace {locked} {DENIED}" in result.stderr
    assert "cannot start" not in result.stderr


def test_serve_refuses_to_start_on_it(kit: StreamKit, locked: Path) -> None:
    result = subprocess.run(kandev("serve", *task_flags(kit)), capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == ""  # nothing listens
    assert f"workspace {locked} {DENIED}" in result.stderr


def test_code_says_the_workspace_is_not_accessible(kit: StreamKit, locked: Path) -> None:
    payload = json.dumps({"file": "main.go", "line": 3, "column": 6})
    result = subprocess.run(
        kandev("code", "code_hover", "--workspace", str(locked), "--env", "PATH=/usr/bin:/bin", "--json", payload),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert f"workspace {locked} {DENIED}" in result.stderr
    assert "no file" not in result.stdout + result.stderr


def test_a_workspace_that_becomes_unreadable_closes_4008_saying_so(kit: StreamKit) -> None:
    async def scenario() -> tuple[int | None, str]:
        serving = await asyncio.create_subprocess_exec(
            *kandev("serve", *task_flags(kit), "--log-level", "info"),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "KANDEV_LSP_TOKEN": TOKEN},
        )  # fmt: skip
        try:
            assert serving.stdout is not None and serving.stderr is not None
            async with asyncio.timeout(30):
                listening = json.loads(await serving.stdout.readline())
            kit.workspace.chmod(0)
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with connect(f"{listening['url']}?language=go", additional_headers=headers) as ws:
                with pytest.raises(ConnectionClosed):
                    async with asyncio.timeout(30):
                        await ws.recv()
                code = ws.close_code
        finally:
            kit.workspace.chmod(0o755)
            serving.terminate()
            await serving.wait()
        return code, (await serving.stderr.read()).decode()

    code, log = asyncio.run(scenario())
    assert code == 4008
    assert DENIED in log and "cannot start" not in log
