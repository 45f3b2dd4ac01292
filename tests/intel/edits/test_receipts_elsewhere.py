"""Trial finding A: the receipt reports errors an edit introduced in files it did not touch (B7.3, B7.5).

Debian's gopls renames only the concrete method of ``(*MemStore).Put`` (package ``store``): the interface
keeps ``Put``, and ``main.go`` (another package, untouched) no longer compiles ("missing method Put"). The receipt used to compare the touched
files only (``introduced: []``, ``status: "current"``): false confidence. It now lists what the server
published for other files during the post-edit settle window, against what it had published before.
"""

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
from kandev_lsp.intel.edits.receipts import elsewhere_delta
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.runtime.executor import Deadline
from kandev_lsp.intel.runtime.pool import ServerPool
from kandev_lsp.intel.surface.dispatch import IntelContext
from kandev_lsp.lifecycle import Lifecycle
from kandev_lsp.testing import processes_tagged

TAG = "KANDEV_INTEL_TEST_TAG"
FILES = {
    "go.mod": "module example.com/demo\n\ngo 1.19\n",
    "store/store.go": (
        "package store\n\ntype Store interface {\n\tPut(key string)\n}\n\n"
        "type MemStore struct{ keys []string }\n\n"
        "func (m *MemStore) Put(key string) {\n\tm.keys = append(m.keys, key)\n}\n"
    ),
    "main.go": (
        'package main\n\nimport "example.com/demo/store"\n\n'
        'func main() {\n\tvar s store.Store = &store.MemStore{}\n\ts.Put("a")\n}\n'
    ),
}


def _diag(line: int, message: str, severity: int = 1) -> dict[str, Any]:
    return {
        "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 3}},
        "severity": severity,
        "source": "compiler",
        "message": message,
    }


def test_elsewhere_delta_counts_introduced_against_the_earlier_publication() -> None:
    before = {"a.go": [_diag(1, "old")], "b.go": []}
    after = {"a.go": [_diag(7, "old"), _diag(2, "new one")], "b.go": [_diag(0, "w", 2)], "c.go": []}
    delta = elsewhere_delta(before, after, limit=1)
    assert delta["counts"] == {"introduced": 2, "errors": 1, "resolved": 0}
    assert delta["introduced"] == [
        {"path": "a.go", "severity": "error", "line": 3, "message": "new one", "source": "compiler"}
    ]
    assert delta["truncated"] is True
    assert delta["files"] == 3 and delta["withoutBaseline"] == 1  # c.go had no publication before


def test_elsewhere_delta_is_empty_when_nothing_was_published() -> None:
    delta = elsewhere_delta({"a.go": [_diag(1, "old")]}, {})
    assert delta["counts"] == {"introduced": 0, "errors": 0, "resolved": 0} and delta["files"] == 0


async def _rename_put(folder: Path, tag: str) -> dict[str, Any]:
    home = folder.parent / "home"
    home.mkdir()
    env = TaskEnvironment.from_agent({"HOME": str(home), "PATH": "/usr/bin:/bin", TAG: tag})
    workspace = Workspace([folder])
    lifecycle = Lifecycle(PluginHost.load(environ={}))
    pool = ServerPool(workspace, lifecycle, env)
    coordinator = MutationCoordinator(workspace, pool)
    try:
        store, main = workspace.resolve("store/store.go"), workspace.resolve("main.go")

        async def produce(deadline: Deadline) -> ProducedEdit:
            server = await pool.server_for(store, deadline)
            await server.sync(main)
            document = await server.sync(store)
            await server.wait_ready(deadline)
            # gopls publishes main.go's (empty) diagnostics once it has analysed the package
            await asyncio.sleep(1.5)
            edit = await server.request(
                "textDocument/rename",
                {
                    "textDocument": {"uri": store.uri},
                    "position": {"line": 8, "character": 20},
                    "newName": "Set",
                },
                deadline.remaining(),
            )
            return ProducedEdit(edit, bound={store.uri: document.version})

        return await coordinator.mutate(
            "code_rename", [store], produce, IntelContext(deadline=90, auto_approve=True)
        )
    finally:
        await pool.aclose()
        await lifecycle.aclose()


@pytest.mark.real_server
@pytest.mark.timeout(240)
@pytest.mark.skipif(not os.access("/usr/bin/gopls", os.X_OK), reason="Debian's gopls is not installed")
def test_gopls_rename_of_a_concrete_method_reports_the_error_in_the_untouched_file(tmp_path: Path) -> None:
    folder = tmp_path / "go"
    folder.mkdir()
    (folder / "store").mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text)
    tag = uuid.uuid4().hex
    try:
        result = asyncio.run(_rename_put(folder, tag))
    finally:
        leaked = processes_tagged(TAG, tag)
    assert not leaked, leaked
    assert result["ok"] and result["applied"], str(result)
    receipt = result["receipt"]
    if "main.go" in receipt["touched"]:
        pytest.fail(
            f"this gopls renamed the interface method too; the trial's case needs it not to: {receipt}"
        )
    elsewhere = receipt["diagnostics"]["elsewhere"]
    assert [e["path"] for e in elsewhere["introduced"]] == ["main.go"], elsewhere
    assert "Put" in elsewhere["introduced"][0]["message"], elsewhere
    assert elsewhere["counts"]["errors"] == 1, elsewhere
    assert "1 error introduced elsewhere" in result["notice"], result
    assert elsewhere["introduced"][0]["line"] == 6, elsewhere


def test_the_summary_says_how_many_errors_the_edit_introduced_elsewhere() -> None:
    from kandev_lsp.intel.surface.summaries import summarize

    elsewhere = elsewhere_delta({"main.go": []}, {"main.go": [_diag(15, "missing method Put")]})
    result = {
        "ok": True,
        "applied": True,
        "newName": "Set",
        "files": 1,
        "receipt": {"textEdits": 1, "touched": ["store/store.go"], "diagnostics": {"elsewhere": elsewhere}},
    }
    assert summarize("code_rename", result) == "renamed → Set · 1 file · 1 error introduced elsewhere"
