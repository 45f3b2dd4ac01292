"""The pure intel parts on a real server's answers: Debian's gopls driven through kandev_lsp.lsp.

Not the tools' wiring (a later step): this checks that what a real server sends (DocumentSymbol trees,
Location lists, hover markdown, UTF-16 positions after a non-BMP character) goes through target
resolution, the executor, locations and hover flattening the way the table tests assume.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp import Task, TaskEnvironment
from kandev_lsp.host import PluginHost
from kandev_lsp.intel.files.text import Document, PositionEncoding, TextCache
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.reading.hover import hover_text
from kandev_lsp.intel.reading.output import LocationOptions, build_locations, locate
from kandev_lsp.intel.reading.symbols import flatten_symbols
from kandev_lsp.intel.reading.targets import Target, resolve_target
from kandev_lsp.intel.runtime.executor import Deadline, Outcome, run_provider
from kandev_lsp.lsp import (
    LspClient,
    base_client_capabilities,
    configuration_handler,
    initialize_params,
    merge_capabilities,
    workspace_folder,
)
from kandev_lsp.process import spawn
from kandev_lsp.resolver import Resolver
from kandev_lsp.settings import ConfigurationAnswerer
from kandev_lsp.testing import processes_tagged

pytestmark = [
    pytest.mark.real_server,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not os.access("/usr/bin/gopls", os.X_OK), reason="Debian's gopls is not installed"),
]

TAG = "KANDEV_INTEL_TEST_TAG"
FILES = {
    "go.mod": "module example.com/demo\n\ngo 1.19\n",
    "lib.go": 'package main\n\n// Greeter greets.\ntype Greeter struct{}\n\n// Greet says hello to name.\nfunc (Greeter) Greet(name string) string {\n\treturn "hello " + name\n}\n\n// greet says hello to name.\nfunc greet(name string) string {\n\treturn "hello " + name\n}\n',
    "main.go": 'package main\n\nfunc main() {\n\tprintln("😀😀", greet("world"), Greeter{}.Greet("x"))\n\tprintln(greet("again"))\n}\n',
}


async def _session(workspace_dir: Path, tag: str) -> dict[str, Any]:
    host = PluginHost.load(environ={})
    spec = host.language("go")
    home = workspace_dir.parent / "home"
    home.mkdir(exist_ok=True)
    task = Task(
        str(workspace_dir), TaskEnvironment.from_agent({"HOME": str(home), "PATH": "/usr/bin:/bin", TAG: tag})
    )
    resolution = Resolver(host).resolve("go", task)
    assert resolution.found, resolution.message
    process = await spawn(
        [resolution.executable, *spec.args], env=task.env, cwd=str(workspace_dir), stdin=True, stdout="pipe"
    )
    settings = host.default_settings(spec)
    workspace = Workspace([workspace_dir])
    encoding = PositionEncoding.UTF16
    out: dict[str, Any] = {}
    try:
        assert process.stdout is not None and process.stdin is not None
        client = LspClient(process.stdout, process.stdin, peer="gopls stdout", readiness=host.readiness(spec))
        client.endpoint.configuration = configuration_handler(
            ConfigurationAnswerer(host, spec), lambda: settings
        )
        async with client:
            await client.initialize(
                initialize_params(
                    workspace_folders=[workspace_folder(workspace.roots[0].uri)],
                    capabilities=merge_capabilities(
                        base_client_capabilities(), host.client_capabilities(spec)
                    ),
                    initialization_options=host.initialization_options(spec, settings),
                    work_done_token="kandev-initialize",
                ),
                timeout=60,
            )
            documents: dict[str, Document] = {}
            for name in ("lib.go", "main.go"):
                file = workspace.resolve(name)
                version = client.endpoint.documents.open(file.uri, "go")
                documents[name] = Document(file, FILES[name], version)
                await client.notify(
                    "textDocument/didOpen",
                    {
                        "textDocument": {
                            "uri": file.uri,
                            "languageId": "go",
                            "version": version,
                            "text": FILES[name],
                        }
                    },
                )
            assert (await client.wait_ready(120)).ready
            deadline = Deadline(60)  # a loaded shared machine; the tools' 9 s is for warm servers

            async def ask(method: str, params: dict[str, Any], warmup: bool = True) -> Any:
                result = await run_provider(
                    lambda timeout: client.request(method, params, timeout=timeout),
                    deadline,
                    warmup=warmup,
                    label=method,
                )
                assert result.status is Outcome.OK, result.meta()
                return result.value

            lib = documents["lib.go"]
            symbols = flatten_symbols(
                await ask("textDocument/documentSymbol", {"textDocument": {"uri": lib.file.uri}})
            )
            out["symbols"] = [(e.qualified_name, e.kind_label) for e in symbols]
            target = resolve_target(Target("lib.go", symbol="greet", kind="function"), lib, symbols, encoding)
            out["target"] = target.to_json()
            references = await ask(
                "textDocument/references",
                {
                    "textDocument": {"uri": lib.file.uri},
                    "position": target.position,
                    "context": {"includeDeclaration": True},
                },
            )
            out["references"] = build_locations(
                locate(references, workspace.uri_lookup()), TextCache(), encoding
            )
            main = documents["main.go"]
            anchor = resolve_target(Target("main.go", line=4, match_text="Greet("), main, None, encoding)
            out["anchor_position"] = anchor.position
            definition = await ask(
                "textDocument/definition",
                {"textDocument": {"uri": main.file.uri}, "position": anchor.position},
            )
            out["definition"] = build_locations(
                locate(definition, workspace.uri_lookup()), TextCache(), encoding, LocationOptions(context=1)
            )
            hover = await ask(
                "textDocument/hover", {"textDocument": {"uri": lib.file.uri}, "position": target.position}
            )
            out["hover"] = hover_text(hover)
            await client.shutdown(timeout=5)
    finally:
        await process.stop(grace=2)
    return out


def test_gopls_answers_through_the_pure_parts(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    workspace_dir = tmp_path / "ws"
    workspace_dir.mkdir()
    for name, text in FILES.items():
        (workspace_dir / name).write_text(text, encoding="utf-8")
    try:
        out = asyncio.run(_session(workspace_dir, tag))
    finally:
        leaked = processes_tagged(TAG, tag)
        for pid in leaked:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert not leaked, f"processes left running: {leaked}"

    assert ("greet", "function") in out["symbols"]
    assert (
        out["target"]["line"] == 12
        and out["target"]["symbol"] == "greet"
        and out["target"]["confidence"] == "symbol"
    )
    # the declaration and both calls, in two files, with character columns (after two emoji on line 4)
    references = out["references"]
    assert [group["path"] for group in references["files"]] == ["lib.go", "main.go"]
    main_refs = [(loc["line"], loc["column"], loc["snippet"]) for loc in references["files"][1]["locations"]]
    assert main_refs == [
        (4, 16, 'println("😀😀", greet("world"), Greeter{}.Greet("x"))'),  # UTF-16 character 17 -> column 16
        (5, 10, 'println(greet("again"))'),
    ]
    assert references["totalFound"] == 3
    # matchText after the emoji points at Greet in UTF-16 units: code point 41 + 2 (two emoji of 2 units)
    assert out["anchor_position"] == {"line": 3, "character": 43}
    [group] = out["definition"]["files"]
    [location] = group["locations"]
    assert (group["path"], location["line"]) == ("lib.go", 7)
    assert "func (Greeter) Greet(name string) string {" in location["snippet"]
    assert "func greet(name string) string" in out["hover"]["text"]
    assert "```" not in out["hover"]["text"]
