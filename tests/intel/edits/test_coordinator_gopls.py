"""The coordinator on Debian's gopls, a server that asks for ``didSave`` (``textDocumentSync.save``):
a rename applied with autoApprove is followed by ``didChange`` then ``didSave`` for each open document
it touched (B3.7, K2.7), and the post-edit diagnostics show the error the edit introduced: gopls first
publishes without a version, so a publication older than the new text is not taken for its diagnostics."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp import TaskEnvironment
from kandev_lsp.host import PluginHost
from kandev_lsp.intel.edits.coordinator import MutationCoordinator, ProducedEdit
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.runtime.executor import Deadline
from kandev_lsp.intel.runtime.pool import ServerPool, save_options
from kandev_lsp.intel.surface.dispatch import IntelContext
from kandev_lsp.lifecycle import Lifecycle
from kandev_lsp.testing import processes_tagged

pytestmark = [
    pytest.mark.real_server,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not os.access("/usr/bin/gopls", os.X_OK), reason="Debian's gopls is not installed"),
]

TAG = "KANDEV_INTEL_TEST_TAG"
FILES = {
    "go.mod": "module example.com/demo\n\ngo 1.19\n",
    "lib.go": 'package main\n\nfunc greet(name string) string {\n\treturn "hello " + name\n}\n',
    "main.go": 'package main\n\nfunc main() {\n\tprintln(greet("world"))\n}\n',
}


async def _rename_on_gopls(folder: Path, tag: str) -> tuple[dict[str, Any], list[tuple[str, str]], bool]:
    home = folder.parent / "home"
    home.mkdir()
    env = TaskEnvironment.from_agent({"HOME": str(home), "PATH": "/usr/bin:/bin", TAG: tag})
    workspace = Workspace([folder])
    lifecycle = Lifecycle(PluginHost.load(environ={}))
    pool = ServerPool(workspace, lifecycle, env)
    coordinator = MutationCoordinator(workspace, pool)
    sent: list[tuple[str, str]] = []
    try:
        lib, main = workspace.resolve("lib.go"), workspace.resolve("main.go")

        async def produce(deadline: Deadline) -> ProducedEdit:
            server = await pool.server_for(lib, deadline)
            notify = server.client.notify

            async def recording(method: str, params: Any = None) -> None:
                if method in ("textDocument/didChange", "textDocument/didSave"):
                    sent.append((method, params["textDocument"]["uri"].rsplit("/", 1)[-1]))
                await notify(method, params)

            server.client.notify = recording  # type: ignore[method-assign]
            await server.sync(main)
            document = await server.sync(lib)
            await server.wait_ready(deadline)
            # gopls's own rename, made against the open documents
            edit = await server.request(
                "textDocument/rename",
                {
                    "textDocument": {"uri": lib.uri},
                    "position": {"line": 2, "character": 5},
                    "newName": "salute",
                },
                deadline.remaining(),
            )
            # ... plus a hand-made break, so the post-edit diagnostics have something to show
            broken = {
                "range": {"start": {"line": 3, "character": 1}, "end": {"line": 3, "character": 1}},
                "newText": "undefinedCall()\n\t",
            }
            changes = edit.setdefault("documentChanges", [])
            changes.append({"textDocument": {"uri": main.uri, "version": None}, "edits": [broken]})
            return ProducedEdit(edit, bound={lib.uri: document.version})

        result = await coordinator.mutate(
            "code_rename", [lib], produce, IntelContext(deadline=90, auto_approve=True)
        )
        wants_save = save_options((await pool.server_for(lib)).capabilities)[0]
        return result, sent, wants_save
    finally:
        await pool.aclose()
        await lifecycle.aclose()


def test_gopls_gets_did_change_then_did_save_and_reports_the_new_error(tmp_path: Path) -> None:
    folder = tmp_path / "go"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text)
    tag = uuid.uuid4().hex
    try:
        result, sent, wants_save = asyncio.run(_rename_on_gopls(folder, tag))
    finally:
        leaked = processes_tagged(TAG, tag)
    assert not leaked, leaked
    assert result["ok"] and result["applied"], result
    assert "func salute(" in (folder / "lib.go").read_text()
    assert wants_save  # gopls declares textDocumentSync.save
    after = sent[sent.index(("textDocument/didChange", "lib.go")) :]
    assert ("textDocument/didSave", "lib.go") in after and ("textDocument/didSave", "main.go") in after, sent
    delta = result["receipt"]["diagnostics"]
    assert delta["status"] == "current", delta
    assert [e["path"] for e in delta["introduced"]] == ["main.go"], delta
    assert "undefinedCall" in delta["introduced"][0]["message"]
