"""End to end with real language servers installed by kandev-lsp: pyright and typescript-language-server,
through the WebSocket stream and through ``kandev-lsp run`` on stdio. Hover and definition must give the
right answers for a small project (a function defined and used)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from stream_testkit import LspPeer, RealServers, StreamKit, tagged_alive

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry]


@dataclass(frozen=True)
class Project:
    language: str
    language_id: str
    file: str
    text: str
    use: tuple[int, int]  # line, character of a use of the function
    definition: tuple[int, int, int]  # line, start, end of the function's name where it is defined
    signature: str  # what the hover must show


PYTHON = Project(
    "python",
    "python",
    "app.py",
    'def greet(name: str) -> str:\n    return "hello " + name\n\n\nmessage = greet("world")\n',
    (4, 12),
    (0, 4, 9),
    "greet(name: str) -> str",
)
TYPESCRIPT = Project(
    "typescript",
    "typescript",
    "app.ts",
    "export function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport const total = add(1, 2);\n",
    (4, 22),
    (0, 16, 19),
    "add(a: number, b: number): number",
)
PROJECTS = {"python": PYTHON, "typescript": TYPESCRIPT}


def _write_project(workspace: Path, project: Project) -> str:
    path = workspace / project.file
    path.write_text(project.text, encoding="utf-8")
    if project.language == "typescript":
        (workspace / "tsconfig.json").write_text(
            json.dumps({"compilerOptions": {"strict": True, "target": "es2020"}, "include": ["*.ts"]}),
            encoding="utf-8",
        )
    return path.as_uri()


def _hover_text(result: Any) -> str:
    if not result:
        return ""
    contents = result.get("contents")
    if isinstance(contents, dict):
        return str(contents.get("value", ""))
    if isinstance(contents, list):
        return "\n".join(item if isinstance(item, str) else str(item.get("value", "")) for item in contents)
    return str(contents or "")


async def _until(peer: LspPeer, method: str, params: Any, accept: Any, timeout: float = 45.0) -> Any:
    """Servers answer before the project is loaded: ask again until the answer is usable."""
    last: Any = None
    async with asyncio.timeout(timeout):
        while True:
            last = (await peer.request(method, params, timeout=timeout)).get("result")
            if accept(last):
                return last
            await asyncio.sleep(0.25)


async def converse(peer: LspPeer, workspace: Path, project: Project) -> None:
    """initialize, initialized, didOpen, hover and definition, then shutdown and exit."""
    root_uri = workspace.as_uri()
    file_uri = _write_project(workspace, project)
    init = await peer.request(
        "initialize",
        {
            "processId": os.getpid(),
            "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": "workspace"}],
            "capabilities": {
                "textDocument": {
                    "hover": {"contentFormat": ["markdown", "plaintext"]},
                    "definition": {"linkSupport": False},
                    "synchronization": {"didSave": True},
                },
                "workspace": {"workspaceFolders": True},
            },
        },
        timeout=60,
    )
    capabilities = init["result"]["capabilities"]
    assert capabilities.get("hoverProvider") and capabilities.get("definitionProvider")
    await peer.notify("initialized", {})
    await peer.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": file_uri,
                "languageId": project.language_id,
                "version": 1,
                "text": project.text,
            }
        },
    )
    line, character = project.use
    position = {"textDocument": {"uri": file_uri}, "position": {"line": line, "character": character}}
    hover = await _until(peer, "textDocument/hover", position, lambda r: project.signature in _hover_text(r))
    assert project.signature in _hover_text(hover)
    found = await _until(peer, "textDocument/definition", position, lambda r: bool(r))
    locations = found if isinstance(found, list) else [found]
    def_line, start, end = project.definition
    assert {
        "uri": file_uri,
        "range": {
            "start": {"line": def_line, "character": start},
            "end": {"line": def_line, "character": end},
        },
    } in [{"uri": loc["uri"], "range": loc["range"]} for loc in locations], locations
    # The bridge answered the server's configuration requests; the client never saw one.
    assert all(request["method"] != "workspace/configuration" for request in peer.server_requests)
    await peer.request("shutdown", timeout=20)
    await peer.notify("exit")


#: What each real server makes redundant in an editor with built-in providers: typescript-language-server
#: advertises completion and signature help as options objects and hover/definition/references as true;
#: only TypeScript suppresses anything.
SUPPRESSED = {"typescript": "completion,definition,hover,references,signatureHelp", "python": "-"}


@pytest.mark.parametrize("language", ["python", "typescript"])
def test_real_server_through_the_stream(
    kit: StreamKit, real_servers: RealServers, language: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kandev_lsp.session")

    async def scenario() -> None:
        plugins = kit.plugins(builtins=True)
        task = kit.task(**real_servers.overrides())
        async with (
            kit.serve(plugins, task=task, settings=kit.settings(plugins)) as server,
            kit.connect(server, language) as ws,
        ):
            ready = json.loads(await ws.recv())
            assert ready["status"] == "ready"
            assert ready["workspaceUri"] == kit.workspace.as_uri()
            await converse(LspPeer.over_websocket(ws), kit.workspace, PROJECTS[language])
            # After exit the server leaves with status 0: a normal close, and nothing left running.
            async with asyncio.timeout(15):
                await ws.wait_closed()
            assert ws.close_code == 1000
        assert not tagged_alive(kit.tag)

    asyncio.run(scenario())
    initialized = [r.getMessage() for r in caplog.records if r.getMessage().startswith("event=initialized")]
    assert len(initialized) == 1 and initialized[0].endswith(f"suppress={SUPPRESSED[language]}")


def test_auto_install_through_the_stream_then_hover(kit: StreamKit, real_servers: RealServers) -> None:
    """A fresh HOME: the stream installs pyright itself (real npm; the npm cache is shared with the
    session's install to keep it fast), then serves it."""

    async def scenario() -> None:
        plugins = kit.plugins(builtins=True)
        overrides = {**real_servers.overrides(), "HOME": str(kit.home)}
        task = kit.task(**overrides)
        async with (
            kit.serve(plugins, task=task) as server,
            kit.connect(server, "python", auto_install=True) as ws,
        ):
            statuses = []
            async with asyncio.timeout(120):
                while not statuses or statuses[-1]["status"] != "ready":
                    statuses.append(json.loads(await ws.recv()))
            assert [frame["status"] for frame in statuses] == ["installing", "installed", "ready"]
            await converse(LspPeer.over_websocket(ws), kit.workspace, PYTHON)
        installed = kit.home / ".kandev" / "lsp-servers" / "python" / "current"
        assert installed.exists()

    asyncio.run(scenario())


async def _run_command(kit: StreamKit, real_servers: RealServers, language: str, *extra: str) -> Any:
    env_args = [
        f"--env={key}={value}"
        for key, value in {**real_servers.overrides(), "KANDEV_TEST_TAG": kit.tag}.items()
    ]
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kandev_lsp.cli",
        "run",
        language,
        "--workspace",
        str(kit.workspace),
        "--settings",
        str(kit.settings_path),
        *env_args,
        *extra,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


@pytest.mark.parametrize("language", ["python", "typescript"])
def test_real_server_through_kandev_lsp_run(kit: StreamKit, real_servers: RealServers, language: str) -> None:
    async def scenario() -> None:
        process = await _run_command(kit, real_servers, language)
        try:
            await converse(LspPeer.over_stdio(process), kit.workspace, PROJECTS[language])
            assert process.stdin is not None
            process.stdin.close()
            async with asyncio.timeout(20):
                status = await process.wait()
            assert status == 0  # the server's own status after shutdown + exit
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert not tagged_alive(kit.tag)

    asyncio.run(scenario())


def test_run_stops_the_server_when_the_editor_closes_stdin(kit: StreamKit, real_servers: RealServers) -> None:
    async def scenario() -> None:
        process = await _run_command(kit, real_servers, "python")
        peer = LspPeer.over_stdio(process)
        await peer.request(
            "initialize",
            {"processId": None, "rootUri": kit.workspace.as_uri(), "capabilities": {}},
            timeout=60,
        )
        assert tagged_alive(kit.tag)
        assert process.stdin is not None
        process.stdin.close()  # no shutdown, no exit: the editor just went away
        async with asyncio.timeout(20):
            await process.wait()
        assert not tagged_alive(kit.tag)

    asyncio.run(scenario())


def test_run_rejects_malformed_editor_input_with_22(kit: StreamKit, real_servers: RealServers) -> None:
    async def scenario() -> None:
        process = await _run_command(kit, real_servers, "python")
        assert process.stdin is not None and process.stderr is not None
        process.stdin.write(b"Content-Length: 12\r\nbroken header line\r\n\r\n{}")
        await process.stdin.drain()
        async with asyncio.timeout(20):
            status = await process.wait()
        assert status == 22
        assert b"malformed" in await process.stderr.read()
        assert not tagged_alive(kit.tag)

    asyncio.run(scenario())


def test_run_install_installs_with_progress_on_stderr_then_serves(
    kit: StreamKit, real_servers: RealServers
) -> None:
    async def scenario() -> None:
        overrides = {**real_servers.overrides(), "HOME": str(kit.home), "KANDEV_TEST_TAG": kit.tag}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kandev_lsp.cli",
            "run",
            "python",
            "--install",
            "--workspace",
            str(kit.workspace),
            "--settings",
            str(kit.settings_path),
            *[f"--env={key}={value}" for key, value in overrides.items()],
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        peer = LspPeer.over_stdio(process)
        # Sent at once, while the install runs: kept in the pipe and answered once the server is up.
        answer = await peer.request(
            "initialize",
            {"processId": None, "rootUri": kit.workspace.as_uri(), "capabilities": {}},
            timeout=120,
        )
        assert answer["result"]["capabilities"]["hoverProvider"]
        assert process.stdin is not None and process.stderr is not None
        process.stdin.close()
        async with asyncio.timeout(20):
            await process.wait()
        progress = (await process.stderr.read()).decode()
        assert "kandev-lsp: installing the python server" in progress
        assert "waiting" not in progress  # nobody else held the install lock (issue 17 item 12)
        assert "installed" in progress
        assert (kit.home / ".kandev" / "lsp-servers" / "python" / "current").exists()
        assert not tagged_alive(kit.tag)

    asyncio.run(scenario())
