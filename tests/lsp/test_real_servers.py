"""Real servers driven through the endpoint with no other client: Debian's gopls, pyright and
typescript-language-server. For each: the server's own requests are answered (gopls stalls until its
``window/workDoneProgress/create`` is), diagnostics arrive, the language's readiness is reached, and the
first answer after readiness equals the answer after the server has been idle."""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp import Task, TaskEnvironment
from kandev_lsp.host import PluginHost
from kandev_lsp.lsp import (
    LspClient,
    ReadinessStatus,
    base_client_capabilities,
    configuration_handler,
    initialize_params,
    merge_capabilities,
    workspace_folder,
)
from kandev_lsp.process import spawn
from kandev_lsp.resolver import Resolver
from kandev_lsp.settings import ConfigurationAnswerer
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.timeout(420)]


@dataclass(frozen=True)
class Project:
    language: str
    files: dict[str, str]
    opened: str  # the file opened with didOpen
    use: tuple[int, int]  # a use of `greet` in the opened file
    definition_file: str  # the other file, where `greet` is defined


PYTHON = Project(
    "python",
    {
        "pyproject.toml": '[project]\nname = "demo"\nversion = "0"\n',
        "lib.py": 'def greet(name: str) -> str:\n    return "hello " + name\n',
        "app.py": 'from lib import greet\n\nmessage: int = greet("world")\nprint(greet("again"))\n',
    },
    "app.py",
    (2, 16),
    "lib.py",
)
TYPESCRIPT = Project(
    "typescript",
    {
        "tsconfig.json": '{"compilerOptions": {"strict": true, "target": "es2020"}, "include": ["*.ts"]}\n',
        "lib.ts": 'export function greet(name: string): string {\n  return "hello " + name;\n}\n',
        "app.ts": 'import { greet } from "./lib";\n\nconst message: number = greet("world");\nconsole.log(greet("again"), message);\n',
    },
    "app.ts",
    (2, 24),
    "lib.ts",
)
GO = Project(
    "go",
    {
        "go.mod": "module example.com/demo\n\ngo 1.19\n",
        "lib.go": 'package main\n\nfunc greet(name string) string {\n\treturn "hello " + name\n}\n',
        "main.go": 'package main\n\nfunc main() {\n\tvar n int = greet("world")\n\tprintln(n, greet("again"))\n}\n',
    },
    "main.go",
    (3, 13),
    "lib.go",
)


def _locations(result: Any) -> list[tuple[str, int, int]]:
    assert isinstance(result, list), result
    return sorted(
        (
            Path(item["uri"].removeprefix("file://")).name,
            item["range"]["start"]["line"],
            item["range"]["start"]["character"],
        )
        for item in result
    )


async def _drive(
    project: Project, workspace: Path, env_overrides: dict[str, str], tag: str
) -> dict[str, Any]:
    for name, text in project.files.items():
        (workspace / name).write_text(text, encoding="utf-8")
    host = PluginHost.load(environ={})
    spec = host.language(project.language)
    task = Task(str(workspace), TaskEnvironment.from_agent({**env_overrides, TAG_VARIABLE: tag}))
    resolution = Resolver(host).resolve(project.language, task)
    assert resolution.found, resolution.message
    process = await spawn(
        [resolution.executable, *spec.args], env=task.env, cwd=str(workspace), stdin=True, stdout="pipe"
    )
    settings = host.default_settings(spec)
    try:
        assert process.stdout is not None and process.stdin is not None
        client = LspClient(
            process.stdout, process.stdin, peer=f"{spec.command} stdout", readiness=host.readiness(spec)
        )
        client.endpoint.configuration = configuration_handler(
            ConfigurationAnswerer(host, spec), lambda: settings
        )
        async with client:
            diagnostics = client.subscribe("textDocument/publishDiagnostics")
            server_requests = client.subscribe(["window/workDoneProgress/create", "workspace/configuration"])
            capabilities = merge_capabilities(base_client_capabilities(), host.client_capabilities(spec))
            result = await client.initialize(
                initialize_params(
                    workspace_folders=[workspace_folder(workspace.as_uri())],
                    capabilities=capabilities,
                    initialization_options=host.initialization_options(spec, settings),
                    work_done_token="kandev-initialize",
                ),
                timeout=60,
            )
            assert client.endpoint.initialize_result == result and "capabilities" in result
            assert client.endpoint.initialize_sent_at is not None
            uri = (workspace / project.opened).as_uri()
            language_id = host.language_id(spec, project.opened)
            assert language_id is not None
            version = client.endpoint.documents.open(uri, language_id)
            await client.notify(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": uri,
                        "languageId": language_id,
                        "version": version,
                        "text": project.files[project.opened],
                    }
                },
            )
            # Readiness first: a loaded machine can take tens of seconds to start tsserver.
            status: ReadinessStatus = await client.wait_ready(180)
            assert status.ready, status.to_json()
            published: list[Any] = []
            async with asyncio.timeout(120):
                while not published:
                    event = await diagnostics.get()
                    if event.params["uri"] == uri and event.params["diagnostics"]:
                        published = event.params["diagnostics"]
            params = {
                "textDocument": {"uri": uri},
                "position": {"line": project.use[0], "character": project.use[1]},
                "context": {"includeDeclaration": True},
            }
            first = _locations(await client.request("textDocument/references", params, timeout=60))
            # Idle: nothing in progress for a while, then ask again.
            quiet_since = client.now()
            async with asyncio.timeout(60):
                while client.now() - quiet_since < 3.0:
                    await asyncio.sleep(0.25)
                    if client.endpoint.progress.active:
                        quiet_since = client.now()
            idle = _locations(await client.request("textDocument/references", params, timeout=60))
            entry = client.endpoint.diagnostics.get(uri)
            seen_requests = []
            while True:
                try:
                    seen_requests.append((await asyncio.wait_for(server_requests.get(), 0.01)).method)
                except TimeoutError:
                    break
            assert await client.shutdown(timeout=5)
        return {
            "published": published,
            "entry": entry,
            "first": first,
            "idle": idle,
            "status": status,
            "progress": client.endpoint.progress.snapshot(),
            "server_requests": seen_requests,
        }
    finally:
        await process.stop(grace=2)


def _check(outcome: dict[str, Any], project: Project) -> None:
    assert outcome["first"] == outcome["idle"]
    files = {name for name, _, _ in outcome["first"]}
    assert files == {project.opened, project.definition_file}, outcome[
        "first"
    ]  # cross-file: the project loaded
    assert len(outcome["first"]) >= 3
    entry = outcome["entry"]
    assert entry is not None and entry.generation == 1 and entry.diagnostics


@pytest.mark.skipif(not os.access("/usr/bin/gopls", os.X_OK), reason="Debian's gopls is not installed")
def test_gopls_through_the_endpoint(tmp_path: Path, tag: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outcome = asyncio.run(_drive(GO, workspace, {"HOME": str(home), "PATH": "/usr/bin:/bin"}, tag))
    _check(outcome, GO)
    # gopls asked for a progress token and got null, or it would have stalled before any diagnostics
    assert "window/workDoneProgress/create" in outcome["server_requests"]
    assert outcome["status"].kind.value == "immediate"


@pytest.mark.network_registry
@pytest.mark.parametrize("project", [PYTHON, TYPESCRIPT], ids=["pyright", "typescript-language-server"])
def test_npm_servers_through_the_endpoint(
    project: Project, real_servers: RealServers, tmp_path: Path, tag: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outcome = asyncio.run(_drive(project, workspace, real_servers.overrides(), tag))
    _check(outcome, project)
    assert outcome["status"].kind.value == "progress"
    if project is TYPESCRIPT:  # pyright may finish a tiny project without reporting progress
        assert outcome["progress"].ended_count >= 1 and outcome["progress"].last_ended is not None


def test_gopls_present_on_this_machine() -> None:
    """The real-server test above must not silently skip on the project's machines."""
    assert shutil.which("gopls", path="/usr/bin") is not None
