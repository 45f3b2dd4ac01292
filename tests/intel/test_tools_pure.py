"""Pure decisions of the wired tools, on plain values."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kandev_lsp.intel.files.text import Document, PositionEncoding
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.reading.targets import Target, resolve_target
from kandev_lsp.intel.reading.tools import _inside_call
from kandev_lsp.intel.reading.tsserver import configured_project

TEXT = 'print(greet("world"))\nvalue = greet\ncall(\n    a,\n    f(b),\n    c,\n)\nx = (1) + y\n'


@pytest.mark.parametrize(
    ("line", "match", "inside"),
    [
        (1, "greet", True),  # an argument of print
        (1, '"world"', True),
        (1, "print", False),
        (2, "greet", False),
        (4, "a", True),  # a multi-line call
        (6, "c", True),  # after a closed inner call
        (8, "y", False),  # after a closed parenthesis
    ],
)
def test_signature_help_is_asked_only_inside_a_call(
    tmp_path: Path, line: int, match: str, inside: bool
) -> None:
    (tmp_path / "a.py").write_text(TEXT)
    workspace = Workspace([tmp_path])
    document = Document(workspace.resolve("a.py"), TEXT, 1)
    resolved = resolve_target(
        Target("a.py", line=line, match_text=match), document, None, PositionEncoding.UTF16
    )
    assert _inside_call(resolved) is inside


def test_tool_logs_carry_counts_and_states_never_paths_or_messages(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import asyncio
    import logging
    from types import SimpleNamespace
    from typing import Any

    from kandev_lsp.intel.reading.tools import LspReadTools
    from kandev_lsp.intel.runtime.executor import Deadline
    from kandev_lsp.intel.surface.dispatch import IntelContext

    tools = LspReadTools(SimpleNamespace(workspace=Workspace([tmp_path])))  # type: ignore[arg-type]

    async def body(deadline: Deadline) -> dict[str, Any]:
        return {
            "problems": [{"path": "src/secret_name.py", "message": "undefined name 'token_value'"}],
            "totalFound": 1,
            "shown": 1,
            "coverage": {"kind": "complete"},
            "provider": {"attempts": 2},
        }

    with caplog.at_level(logging.INFO, logger="kandev_lsp.intel"):
        asyncio.run(tools._guard("code_diagnostics", {}, body, IntelContext()))
    line = " ".join(record.getMessage() for record in caplog.records)
    assert "event=intel_tool" in line and "tool=code_diagnostics" in line
    assert "total=1" in line and "coverage=complete" in line and "attempts=2" in line
    assert "secret_name" not in line and "token_value" not in line


def _symbol(name: str, line: int) -> dict[str, object]:
    span = {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 9}}
    return {"name": name, "kind": 12, "range": span, "selectionRange": span}


def test_a_symbol_tree_is_kept_for_its_document_object_only() -> None:
    from kandev_lsp.intel.reading.symbols import SymbolTrees

    trees = SymbolTrees(max_documents=2)
    first, resynced = object(), object()  # the server's document before and after a re-sync
    kept = trees.put("a", first, [_symbol("greet", 3)])
    assert trees.get("a", first) is kept and [e.name for e in kept.entries] == ["greet"]
    assert kept.entries is kept.entries  # flattened once
    assert trees.get("a", resynced) is None  # another text of the same URI: asked again
    assert trees.get("a", first) is None  # and the stale tree is gone
    assert trees.put("b", first, []).entries == [] and trees.get("b", first) is None  # empty: not kept
    assert trees.put("c", first, None).value is None and len(trees) == 0


def test_symbol_trees_are_bounded_least_recently_used_first() -> None:
    from kandev_lsp.intel.reading.symbols import SymbolTrees

    trees = SymbolTrees(max_documents=2)
    docs = {key: object() for key in "abc"}
    trees.put("a", docs["a"], [_symbol("x", 0)])
    trees.put("b", docs["b"], [_symbol("y", 0)])
    assert trees.get("a", docs["a"]) is not None  # a is now the most recently used
    trees.put("c", docs["c"], [_symbol("z", 0)])
    assert len(trees) == 2 and trees.get("b", docs["b"]) is None
    assert trees.get("a", docs["a"]) is not None and trees.get("c", docs["c"]) is not None


def _scoped(folders: list[Path], project: Path, ids: list[str] | None = None) -> dict[str, object]:
    from types import SimpleNamespace

    from kandev_lsp.intel.reading.tools import LspReadTools

    workspace = Workspace([str(f) for f in folders], ids=ids)
    reader = LspReadTools(SimpleNamespace(workspace=workspace))  # type: ignore[arg-type]
    server = SimpleNamespace(
        project_root=str(project.resolve()), language=SimpleNamespace(id="python"), capabilities={}
    )
    result: dict[str, object] = {}
    reader._add_scope(result, server, str(project.resolve() / "a.py"))  # type: ignore[arg-type]
    return result


def test_a_search_for_uses_says_which_project_it_covered(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    package = one / "packages" / "a"
    for folder in (two, package):
        folder.mkdir(parents=True)
    assert _scoped([one], one) == {}  # the project is the whole workspace: nothing to say
    monorepo = _scoped([one], package)  # a package with its own root marker: its own server
    assert monorepo["searchedProject"] == "packages/a", monorepo
    assert "other projects are not included" in str(monorepo["notice"]), monorepo
    assert "other roots" not in str(monorepo["notice"])
    multi = _scoped([one, two], one, ids=["one", "two"])
    assert multi["searchedProject"] == "one" and "other roots (two)" in str(multi["notice"]), multi


def test_workspace_activation_lists_regular_files_only(tmp_path: Path) -> None:
    """A FIFO (or a link) with a source extension is not activated: syncing a FIFO is refused, which
    would fail the whole code_diagnostics call (security review follow-up)."""
    from kandev_lsp.intel.reading.tools import _source_files

    (tmp_path / "a.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "link.py").symlink_to(tmp_path / "a.py")

    class Pool:
        def language_of(self, path: str) -> object | None:
            return object() if path.endswith(".py") else None

    assert _source_files(str(tmp_path), Pool(), 10) == [str(tmp_path / "a.py")]  # type: ignore[arg-type]


def test_the_project_file_tsserver_finds_is_the_nearest_up_to_the_servers_root() -> None:
    files = {"/w/tsconfig.json", "/w/pkg/jsconfig.json", "/tsconfig.json"}
    assert configured_project("/w/src/a/b.ts", "/w", isfile=files.__contains__) == "/w/tsconfig.json"
    assert configured_project("/w/pkg/x.js", "/w", isfile=files.__contains__) == "/w/pkg/jsconfig.json"
    # above the server's root is not searched (tsls hands tsserver its workspace folder as the limit)
    assert configured_project("/v/src/a.ts", "/v", isfile=files.__contains__) is None
    assert configured_project("/v/a.ts", "/v", isfile=lambda _: False) is None


def test_a_since_with_nothing_to_compare_says_what_to_call_instead(tmp_path: Path) -> None:
    """A trial's agent sent since: 'last' after a first call that had answered unavailable, and was told
    to "call code_diagnostics without since to take one, or since: 'last'", the call it had just made."""
    import asyncio

    from kandev_lsp import TaskEnvironment
    from kandev_lsp.intel.service import IntelService
    from kandev_lsp.intel.surface.dispatch import IntelContext

    async def asked() -> list[dict[str, object]]:
        env = TaskEnvironment.from_agent({"HOME": str(tmp_path), "PATH": ""})
        async with IntelService.open([tmp_path], env=env) as service:
            return [
                await service.dispatch("code_diagnostics", {"since": since}, IntelContext(deadline=5))
                for since in ("last", "b0")
            ]

    last, unknown = asyncio.run(asked())
    assert last["status"] == "invalid" and "or since: 'last'" not in str(last["error"]), last
    assert "call code_diagnostics without since first" in str(last["error"]), last
    assert "no diagnostics baseline 'b0'" in str(unknown["error"]), unknown
    assert "since: 'last' for this session's previous answer" in str(unknown["error"]), unknown
