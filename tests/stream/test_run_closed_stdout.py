"""``kandev-lsp run`` when the editor closes its end of stdout and keeps stdin open (``| head -c 10``, an
editor that stopped reading on its way out): the editor left, exit 0, the server's tree stopped
(docs/stream-contract.md, run's exit status).

Before, this was noticed only when the server's next message failed to go out: real pyright, which
answers ``initialize``, ended the run, but a server with nothing more to say (here a stand-in that wrote
one message, then waits) kept itself and ``run`` going for as long as stdin stayed open.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from stream_testkit import TAG_VARIABLE, RealServers, tagged_alive, wait_until, write_executable

CLI = [sys.executable, "-m", "kandev_lsp.cli"]
#: Says one thing, then nothing more, whatever it is sent (a server with nothing to report).
QUIET_SERVER = """
import json, sys, time
body = json.dumps({"jsonrpc": "2.0", "method": "window/logMessage",
                   "params": {"type": 3, "message": "started"}}).encode()
sys.stdout.buffer.write(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
sys.stdout.buffer.flush()
time.sleep(120)
"""
INITIALIZE = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}}
).encode()


def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder


def run_until_the_editor_stops_reading(workspace: Path, environment: dict[str, str], tag: str) -> int:
    """``run python`` with stdin a pipe held open and stdout a pipe whose reader takes 10 bytes and
    closes it, as ``| head -c 10`` does; run's exit status (30 s at most)."""
    read_end, write_end = os.pipe()
    overrides = [f"--env={key}={value}" for key, value in {**environment, TAG_VARIABLE: tag}.items()]
    process = subprocess.Popen(
        [*CLI, "run", "python", "--workspace", str(workspace), *overrides],
        stdin=subprocess.PIPE,
        stdout=write_end,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    assert process.stdin is not None
    try:
        process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(INITIALIZE) + INITIALIZE)
        process.stdin.flush()
        with os.fdopen(read_end, "rb") as editor:
            assert len(editor.read(10)) == 10
        # stdin stays open: only the closed stdout says the editor is gone
        return process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()


def test_a_closed_stdout_ends_run_with_0_even_when_the_server_says_nothing_more(tmp_path: Path) -> None:
    folder = tmp_path / "bin"  # outside the workspace, or it would never be run
    write_executable(folder / "pyright-langserver", QUIET_SERVER)
    tag = uuid.uuid4().hex
    status = run_until_the_editor_stops_reading(workspace(tmp_path), {"PATH": f"{folder}:/usr/bin:/bin"}, tag)
    assert status == 0
    assert wait_until(lambda: not tagged_alive(tag), timeout=10), tagged_alive(tag)


@pytest.mark.real_server
def test_a_closed_stdout_ends_run_with_0_and_stops_pyright(tmp_path: Path, real_servers: RealServers) -> None:
    tag = uuid.uuid4().hex
    status = run_until_the_editor_stops_reading(workspace(tmp_path), real_servers.overrides(), tag)
    assert status == 0
    assert wait_until(lambda: not tagged_alive(tag), timeout=10), tagged_alive(tag)
