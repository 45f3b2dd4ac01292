"""``kandev-lsp run`` with stdin or stdout on ``/dev/null`` ends as at the end of input, with no traceback
and no hang (issue 17 item 3). epoll refuses ``/dev/null``: asyncio's read transport reported it from a
callback (``_UnixReadPipeTransport._add_reader ... PermissionError``) and the input never ended, so pyright
was started and ``run`` never exited. Real pyright from the suite's ``real_servers``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest
from stream_testkit import RealServers, StreamKit, tagged_alive

pytestmark = pytest.mark.real_server

NOISE = ("Traceback", "Exception in callback", "PermissionError", "never retrieved")


def run_python(
    kit: StreamKit,
    real_servers: RealServers,
    *,
    stdin: int | IO[Any],
    stdout: int | IO[Any],
    data: bytes = b"",
) -> subprocess.CompletedProcess[bytes]:
    flags = [
        f"--env={key}={value}"
        for key, value in {**real_servers.overrides(), "KANDEV_TEST_TAG": kit.tag}.items()
    ]
    feed: dict[str, Any] = {"stdin": stdin} if stdin is not None else {"input": data}  # a pipe, then closed
    return subprocess.run(
        [sys.executable, "-m", "kandev_lsp.cli", "run", "python", "--workspace", str(kit.workspace), *flags],
        stdout=stdout, stderr=subprocess.PIPE, timeout=60, check=False, **feed,
    )  # fmt: skip


def test_stdin_on_dev_null_is_the_end_of_input(kit: StreamKit, real_servers: RealServers) -> None:
    closed_at_once = run_python(kit, real_servers, stdin=None, stdout=subprocess.PIPE)
    with open(os.devnull, "rb") as null:
        result = run_python(
            kit, real_servers, stdin=null, stdout=subprocess.PIPE
        )  # `run python < /dev/null | cat`
    stderr = result.stderr.decode()
    assert not any(word in stderr for word in NOISE), stderr
    assert result.returncode == closed_at_once.returncode  # as if the editor closed stdin at once
    assert not tagged_alive(kit.tag)


def test_stdout_on_dev_null_serves_and_ends_with_the_input(kit: StreamKit, real_servers: RealServers) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": None, "capabilities": {}},
        }
    ).encode()
    with open(os.devnull, "wb") as null:
        result = run_python(
            kit,
            real_servers,
            stdin=subprocess.PIPE,
            stdout=null,
            data=b"Content-Length: %d\r\n\r\n" % len(body) + body,
        )
    stderr = result.stderr.decode()
    assert not any(word in stderr for word in NOISE), stderr
    assert not tagged_alive(kit.tag)


def test_stdin_from_a_regular_file_is_refused_before_anything_is_read(kit: StreamKit, tmp_path: Path) -> None:
    messages = tmp_path / "messages.lsp"
    messages.write_bytes(b"")
    with open(messages, "rb") as regular:
        result = subprocess.run(
            [sys.executable, "-m", "kandev_lsp.cli", "run", "go", "--workspace", str(kit.workspace)],
            stdin=regular, capture_output=True, timeout=60, check=False,
        )  # fmt: skip
    stderr = result.stderr.decode()
    assert "needs its stdin to be a pipe" in stderr and "a regular file" in stderr
    assert "Traceback" not in stderr and result.returncode != 0
