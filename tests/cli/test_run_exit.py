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
