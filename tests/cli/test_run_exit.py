"""``kandev-lsp run``'s exit status when the editor leaves (issue 17 item 11): 0 when it just closes its
input, as ``run --help`` promises, whatever the real server does at end of input (pyright and
typescript-language-server both exit 1 then); the server's own answer once the editor sent ``exit``."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from kandev_lsp.testing import processes_tagged
from stream_testkit import TAG_VARIABLE, LspPeer

if TYPE_CHECKING:
    from stream_testkit import RealServers


async def leave(language: str, real_servers: RealServers, workspace: Path, goodbye: list[str]) -> int:
    """Start ``run LANG``, initialize, send the ``goodbye`` messages, close stdin; ``run``'s status."""
    tag = uuid.uuid4().hex
    env = {**real_servers.overrides(), TAG_VARIABLE: tag}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kandev_lsp.cli",
        "run",
        language,
        "--workspace",
        str(workspace),
        *(f"--env={key}={value}" for key, value in env.items()),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        peer = LspPeer.over_stdio(process)
        answer = await peer.request(
            "initialize", {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}, timeout=120
        )
        assert "capabilities" in answer["result"]
        await peer.notify("initialized", {})
        for method in goodbye:
            if method == "shutdown":
                assert (await peer.request("shutdown", timeout=60))["result"] is None
            else:
                await peer.notify(method)
        assert process.stdin is not None
        process.stdin.close()
        async with asyncio.timeout(60):
            status = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert processes_tagged(TAG_VARIABLE, tag) == []  # run stopped the server's whole tree
    return status


@pytest.mark.real_server
@pytest.mark.parametrize("language", ["python", "typescript"])
def test_an_editor_that_closes_its_input_gets_0(
    language: str, real_servers: RealServers, tmp_path: Path
) -> None:
    assert asyncio.run(leave(language, real_servers, tmp_path, [])) == 0  # was 1: the server's own


@pytest.mark.real_server
def test_after_the_editors_exit_the_status_is_the_servers_answer(
    real_servers: RealServers, tmp_path: Path
) -> None:
    assert asyncio.run(leave("typescript", real_servers, tmp_path, ["shutdown", "exit"])) == 0
    # LSP: exit without shutdown is status 1, and the editor asked for that exit.
    assert asyncio.run(leave("typescript", real_servers, tmp_path, ["exit"])) == 1


def test_a_server_that_exits_at_once_is_reported_with_its_status(tmp_path: Path) -> None:
    # Fault injection: a gopls that exits 3 before answering anything. run passed the 3 on and said
    # nothing, so the editor's log held an exit status and no word of what had happened.
    import subprocess

    from kandev_lsp.testing import fake_executable

    bin_dir = tmp_path / "bin"
    gopls = fake_executable(bin_dir, "gopls", script="import sys\nsys.exit(3)\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"capabilities":{}}}'
    argv = [sys.executable, "-m", "kandev_lsp.cli", "run", "go", "--workspace", str(workspace)]
    env = [f"--env=PATH={bin_dir}", f"--env=HOME={tmp_path}"]
    pipe = subprocess.PIPE
    with subprocess.Popen([*argv, *env], stdin=pipe, stdout=pipe, stderr=pipe) as process:
        try:
            assert process.stdin is not None and process.stderr is not None
            process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            process.stdin.flush()  # and stdin stays open: the editor is still there
            status = process.wait(timeout=60)
            stderr = process.stderr.read().decode()
        finally:
            if process.poll() is None:
                process.kill()
    assert status == 3, stderr
    assert (
        f"kandev-lsp: the go server ({gopls}) exited by itself with status 3 before sending anything; "
        "the editor had not asked it to exit."
    ) in stderr
    assert "kandev-lsp resolve go --explain" in stderr


@pytest.mark.parametrize(
    ("returncode", "answered", "how"),
    [
        (-9, True, "the python server (/opt/pyright) was killed by SIGKILL; the editor"),
        (0, True, "the python server (/opt/pyright) exited by itself with status 0; the editor"),
        (None, False, "(/opt/pyright) closed its output by itself and was stopped before sending anything;"),
    ],
)
def test_the_server_exit_note_says_how_it_ended(returncode: int | None, answered: bool, how: str) -> None:
    from kandev_lsp.cli.run import server_exit_note

    assert how in server_exit_note("python", "/opt/pyright", returncode, answered=answered)


def test_a_plugin_that_prints_writes_to_stderr_not_into_the_editors_stream(tmp_path: Path) -> None:
    # A third-party plugin printing at import (and in a hook) put its text on run's stdout before the
    # first frame, which an editor takes for a broken server ('chatty plugin loaded\nContent-Length: ...').
    import os
    import subprocess

    from clikit import printing_plugin_site
    from kandev_lsp.testing import fake_executable

    site = printing_plugin_site(tmp_path / "site")
    bin_dir = tmp_path / "bin"
    fake_executable(  # answers initialize, then reads until its input ends
        bin_dir,
        "gopls",
        "import sys\nh = b''\nwhile not h.endswith(b'\\r\\n\\r\\n'):\n    h += sys.stdin.buffer.read(1)\n"
        "sys.stdin.buffer.read(int(h.split(b':')[1]))\n"
        'b = b\'{"jsonrpc":"2.0","id":1,"result":{"capabilities":{}}}\'\n'
        "sys.stdout.buffer.write(b'Content-Length: %d\\r\\n\\r\\n' % len(b) + b)\nsys.stdout.buffer.flush()\n"
        "sys.stdin.buffer.read()\n",
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"capabilities":{}}}'
    argv = [sys.executable, "-m", "kandev_lsp.cli", "run", "go", "--workspace", str(workspace)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    pipe = subprocess.PIPE
    task = [f"--env=PATH={bin_dir}", f"--env=HOME={tmp_path}"]
    with subprocess.Popen([*argv, *task], stdin=pipe, stdout=pipe, stderr=pipe, env=env) as process:
        try:
            assert process.stdin is not None and process.stdout is not None and process.stderr is not None
            process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            process.stdin.flush()
            header = process.stdout.read(len(b"Content-Length: "))  # the first bytes the editor reads
            process.stdin.close()
            rest = process.stdout.read()
            status = process.wait(timeout=60)
            stderr = process.stderr.read().decode()
        finally:
            if process.poll() is None:
                process.kill()
    assert header == b"Content-Length: ", header + rest[:200]
    assert b"chatty" not in rest and b'"capabilities"' in rest
    assert "chatty plugin loaded\n" in stderr and "computing defaults\n" in stderr
    assert status == 0, stderr
