"""code_hierarchy's traversal against a straightforward reference (issue 9 overhead work).

:func:`traverse` and :meth:`Document.model_ranges` take fast paths (positions converted inline on ASCII
lines, one path check and one text lookup per file, no sort of sites already in order). The reference
below is the traversal as first written, one position at a time through :meth:`Document.model_position`,
each check spelled out. On random call-hierarchy answers (malformed values, duplicates, unordered and
multi-line ranges, non-ASCII lines in every position encoding, files outside the workspace or unreadable,
failing expansions, small budgets) both must give the same JSON, field order included.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kandev_lsp.intel.files.text import Document, PositionEncoding, TextCache
from kandev_lsp.intel.files.workspace import Workspace, WorkspaceFile
from kandev_lsp.intel.reading.graph import KINDS, GraphBudgets, Neighbour, traverse
from kandev_lsp.intel.reading.symbols import kind_name
from kandev_lsp.intel.runtime.executor import Deadline

FILES = {
    "a.py": "def a():\n    b(); c()\n\ndef b():\n    a()\n",
    "é/ü.py": "x = '😀'; f(x)\r\n# ünïcode 😀😀 g()\r\n\tz = '\uff41\uff42\uff43'; h()\n\n",
    "mixed.ts": "const s = '𝄞'; call(s);\ncall(2);\rother();\n",
    "empty.py": "",
}
BINARY = "blob.bin"  # unreadable as text: positions are taken as they come
OUTSIDE = "file:///usr/lib/python3.11/builtins.pyi"


def reference(
    roots: Sequence[dict[str, Any]],
    answers: dict[str, Any],
    failing: set[str],
    kind: str,
    workspace: Workspace,
    encoding: PositionEncoding,
    budgets: GraphBudgets,
    limit: int,
) -> dict[str, Any]:
    """The traversal spelled out (synchronous, no deadline): what :func:`traverse` must give."""
    texts = TextCache()
    lookup = workspace.uri_lookup()

    def number(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    def start_of(item: dict[str, Any]) -> dict[str, int]:
        for key in ("selectionRange", "range"):
            span = item.get(key)
            if isinstance(span, dict) and isinstance(span.get("start"), dict):
                return {
                    "line": number(span["start"].get("line")),
                    "character": number(span["start"].get("character")),
                }
        return {"line": 0, "character": 0}

    nodes: dict[tuple[str, int, int, str], dict[str, Any]] = {}
    ids: set[str] = set()
    files: dict[str, WorkspaceFile] = {}
    edges: dict[tuple[str, str], dict[str, Any]] = {}
    failures: list[dict[str, Any]] = []
    truncated_by: set[str] = set()
    omitted = 0
    unlisted: set[tuple[str, int, int, str]] = set()  # direct neighbours past the node budget

    def node(item: dict[str, Any], depth: int) -> tuple[dict[str, Any] | None, bool]:
        nonlocal omitted
        uri, name = item.get("uri"), item.get("name")
        if not isinstance(uri, str) or not isinstance(name, str):
            omitted += 1
            return None, False
        file = lookup(uri)
        if not isinstance(file, WorkspaceFile):
            omitted += 1
            return None, False
        start = start_of(item)
        key = (file.absolute, start["line"], start["character"], name)
        if key in nodes:
            return nodes[key], False
        if len(nodes) >= budgets.max_nodes:
            truncated_by.add("nodes")
            if depth == 1:
                unlisted.add(key)
            return None, False
        document = texts.document(file)
        if document is None:
            line, column = start["line"] + 1, start["character"] + 1
        else:
            line, column = document.model_position(start, encoding)
        node_id, count = f"{file.display}#{name}@{line}", 2
        while node_id in ids:
            node_id, count = f"{file.display}#{name}@{line}~{count}", count + 1
        ids.add(node_id)
        files[node_id] = file
        made: dict[str, Any] = {"id": node_id, "name": name, "kind": kind_name(number(item.get("kind")))}
        made.update({"path": file.display, "line": line, "column": column, "depth": depth})
        if isinstance(item.get("detail"), str) and item["detail"]:
            made["detail"] = item["detail"][:120]
        nodes[key] = made
        return made, True

    def sites_of(caller: dict[str, Any], ranges: list[Any]) -> list[dict[str, Any]]:
        document = texts.document(files[caller["id"]])
        sites, seen = [], set()
        for span in ranges:
            start = span.get("start") if isinstance(span, dict) else None
            if not isinstance(start, dict):
                continue
            end = span.get("end")
            if not isinstance(end, dict):
                end = start
            if document is not None:
                line, column = document.model_position(start, encoding)
                end_line, end_column = document.model_position(end, encoding)
            else:
                line, column = number(start.get("line")) + 1, number(start.get("character")) + 1
                end_line, end_column = number(end.get("line")) + 1, number(end.get("character")) + 1
            if (line, column, end_line, end_column) in seen:
                continue
            seen.add((line, column, end_line, end_column))
            site: dict[str, Any] = {"line": line, "column": column}
            if end_line != line:
                site["endLine"] = end_line
            site["endColumn"] = end_column
            sites.append(site)
        sites.sort(key=lambda site: (site["line"], site["column"]))
        return sites

    frontier, root_ids = [], []
    for item in roots:
        made, new = node(item, 0)
        if made is not None and new:
            frontier.append((item, made))
            root_ids.append(made["id"])
    one_hop: list[dict[str, Any]] = []
    depth_reached = 0
    for depth in range(1, budgets.depth + 1):
        if not frontier:
            break
        depth_reached = depth
        next_frontier = []
        for item, expanded in frontier:
            if item.get("name") in failing:
                failures.append({"node": expanded["id"], "error": "boom"})
                continue
            answer = answers.get(str(item.get("name")), [])
            merged: dict[str, tuple[dict[str, Any], dict[str, Any], bool, list[Any]]] = {}
            for neighbour_item, ranges in answer:
                if not isinstance(neighbour_item, dict):
                    omitted += 1
                    continue
                neighbour, new = node(neighbour_item, depth)
                if neighbour is None:
                    continue
                pooled = list(ranges) if isinstance(ranges, list | tuple) else []
                if neighbour["id"] in merged:
                    merged[neighbour["id"]][3].extend(pooled)
                else:
                    merged[neighbour["id"]] = (neighbour_item, neighbour, new, pooled)
            for neighbour_item, neighbour, new, pooled in merged.values():
                calls = kind in ("callers", "callees")
                sites = sites_of(neighbour if kind == "callers" else expanded, pooled) if calls else []
                if calls:
                    caller, callee = (neighbour, expanded) if kind == "callers" else (expanded, neighbour)
                    key = (caller["id"], callee["id"])
                    edge: dict[str, Any] = {"caller": caller["id"], "callee": callee["id"]}
                    if sites:
                        edge["callSites"] = sites
                else:
                    sub, sup = (expanded, neighbour) if kind == "supertypes" else (neighbour, expanded)
                    key, edge = (sub["id"], sup["id"]), {"subtype": sub["id"], "supertype": sup["id"]}
                if key not in edges:
                    if len(edges) >= budgets.max_edges:
                        truncated_by.add("edges")
                    else:
                        edges[key] = edge
                if depth == 1:
                    entry = {k: v for k, v in neighbour.items() if k != "depth"}
                    if sites:
                        entry["callSites"] = sites
                    one_hop.append(entry)
                if new:
                    next_frontier.append((neighbour_item, neighbour))
        frontier = next_frontier
    graph: dict[str, Any] = {
        "roots": root_ids,
        "nodes": list(nodes.values()),
        "edges": list(edges.values()),
        "depth": depth_reached,
        "budgets": {
            "depth": budgets.depth,
            "nodes": budgets.max_nodes,
            "edges": budgets.max_edges,
            "timeMs": 0.0,
        },
        "truncated": bool(truncated_by),
    }
    if truncated_by:
        graph["truncatedBy"] = sorted(truncated_by)
    if failures:
        graph["failures"] = failures
    shown = one_hop[:limit]
    left, cut = budgets.max_call_sites, False  # call sites: the items' first, then the edges'
    for group in (shown, graph["edges"]):
        for index, entry in enumerate(group):
            sites = entry.get("callSites") or []
            if len(sites) <= left:
                left -= len(sites)
                continue
            cut = True
            group[index] = {k: v for k, v in entry.items() if k != "callSites"}
            if left:
                group[index]["callSites"], left = sites[:left], 0
            group[index]["callSiteCount"] = len(sites)
    if cut:
        graph["truncated"] = True
        graph["truncatedBy"] = sorted({*graph.get("truncatedBy", ()), "callSites"})
    out: dict[str, Any] = {
        "kind": kind,
        "items": shown,
        "totalFound": len(one_hop) + len(unlisted),
        "shown": len(shown),
        "truncated": len(one_hop) + len(unlisted) > len(shown),
        "graph": graph,
    }
    if omitted:
        out["omitted"] = {"outsideWorkspace": omitted}
    return out


# -- random answers (strategies built once: hypothesis draws from them cheaply) ----------------------------------
NAMES = ["a", "b", "c", "d"]
#: Stand-ins for the project's file URIs, replaced once the project exists (see ``placed``).
SLOTS = [f"@file{index}" for index in range(len(FILES) + 1)]
numbers = st.one_of(st.integers(0, 3), st.integers(0, 40), st.sampled_from([-1, True, 2.0, "3", None]))
well_formed = st.fixed_dictionaries({"line": st.integers(0, 4), "character": st.integers(0, 30)})
positions = st.one_of(
    well_formed,
    well_formed,
    st.fixed_dictionaries({}, optional={"line": numbers, "character": numbers}),
    st.sampled_from([None, [], "x", 3]),
)
spans = st.one_of(
    st.fixed_dictionaries({"start": positions, "end": positions}),
    st.fixed_dictionaries({"start": positions, "end": positions}),
    st.fixed_dictionaries({}, optional={"start": positions, "end": positions}),
    st.sampled_from([None, "span", [1, 2], {}]),
)
well_formed_items = st.fixed_dictionaries(
    {
        "uri": st.sampled_from([*SLOTS, *SLOTS[:3], *SLOTS[:3], OUTSIDE, "untitled:x", 5, None]),
        "name": st.sampled_from([*NAMES, *NAMES, 7]),
        "kind": st.sampled_from([12, 5, 0, 26, 27, -1, True, "12", None]),
    },
    optional={
        "selectionRange": spans,
        "range": spans,
        "detail": st.sampled_from(["", "mod", "x" * 130, 3]),
    },
)
items = st.one_of(
    well_formed_items, well_formed_items, well_formed_items, st.sampled_from(["item", None, [1]])
)
range_lists = st.one_of(
    st.lists(spans, min_size=1, max_size=5),
    st.lists(spans, min_size=2, max_size=5),
    st.lists(spans, max_size=3).map(lambda ranges: ranges + ranges[::-1]),  # duplicates, out of order
    st.lists(spans, max_size=3).map(tuple),
    st.sampled_from([None, "ranges", {}]),
)
neighbours = st.lists(st.tuples(items, range_lists), min_size=1, max_size=6)
#: Each name's answer: its neighbours, some listed twice (tsserver lists a callee once per call), with the
#: same ranges or others.
answers = st.fixed_dictionaries(
    {
        name: st.one_of(
            neighbours,
            neighbours.map(lambda found: found + found[:2]),
            st.tuples(neighbours, range_lists).map(lambda drawn: [*drawn[0], (drawn[0][0][0], drawn[1])]),
        )
        for name in NAMES
    }
)
#: Names whose expansion fails.
failing = st.sets(st.sampled_from(NAMES), max_size=1)
root_lists = st.lists(well_formed_items, min_size=1, max_size=2)


def placed(value: Any, uris: list[str]) -> Any:
    """``value`` with each ``uri`` slot replaced by the project's file URI."""
    if isinstance(value, dict):
        return {
            k: uris[SLOTS.index(v)] if k == "uri" and v in SLOTS else placed(v, uris)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(placed(v, uris) for v in value)
    return value


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, list[Any]]:
    """The files every example points into, and their URIs (one per slot)."""
    folder = tmp_path_factory.mktemp("graph")
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(text.encode())
    (folder / BINARY).write_bytes(b"\x00\x01binary\n")
    workspace = Workspace([folder])
    return workspace, [workspace.resolve(name).uri for name in [*FILES, BINARY]]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_traverse_matches_the_reference(project: tuple[Workspace, list[Any]], data: st.DataObject) -> None:
    workspace, uris = project
    roots = placed(data.draw(root_lists), uris)
    expansions = placed(data.draw(answers), uris)
    fails = data.draw(failing)
    kind = data.draw(st.sampled_from([*KINDS, "callers", "callees"]))
    encoding = data.draw(st.sampled_from(list(PositionEncoding)))
    budgets = GraphBudgets(
        depth=data.draw(st.integers(1, 4)),
        max_nodes=data.draw(st.sampled_from([2, 5, 200])),
        max_edges=data.draw(st.sampled_from([1, 4, 500])),
        max_call_sites=data.draw(st.sampled_from([0, 1, 3, 500])),
    )
    limit = data.draw(st.sampled_from([1, 3, 100]))

    async def expand(item: dict[str, Any]) -> Sequence[Neighbour]:
        if item.get("name") in fails:
            raise RuntimeError("boom")
        return expansions.get(str(item.get("name")), [])  # type: ignore[no-any-return]

    got = asyncio.run(
        traverse(
            roots,
            expand,
            kind,
            workspace=workspace,
            texts=TextCache(),
            encoding=encoding,
            deadline=Deadline(9, clock=lambda: 0.0),
            budgets=budgets,
            limit=limit,
        )
    )
    want = reference(roots, expansions, fails, kind, workspace, encoding, budgets, limit)
    assert json.dumps(got) == json.dumps(want)


# -- Document.model_ranges -----------------------------------------------------------------------------------
PIECES = ["a", "é", "😀", " ", "\n", "\r\n", "\r", "\t", "x = f(1)", "\uff41"]


@pytest.fixture(scope="module")
def file(tmp_path_factory: pytest.TempPathFactory) -> WorkspaceFile:
    root = tmp_path_factory.mktemp("ranges")
    (root / "t.txt").write_text("")
    return Workspace([root]).resolve("t.txt")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.one_of(st.sampled_from(list(FILES.values())), st.lists(st.sampled_from(PIECES)).map("".join)),
    ranges=st.one_of(st.lists(spans, max_size=6), st.lists(spans, max_size=3).map(tuple)),
    encoding=st.sampled_from(list(PositionEncoding)),
)
def test_model_ranges_converts_each_range_as_model_position_does(
    file: WorkspaceFile, text: str, ranges: Sequence[Any], encoding: PositionEncoding
) -> None:
    document = Document(file, text)
    want: list[tuple[int, int, int, int] | None] = []
    for span in ranges:
        start = span.get("start") if isinstance(span, dict) else None
        if not isinstance(start, dict):
            want.append(None)
            continue
        end = span.get("end") if isinstance(span.get("end"), dict) else start
        want.append((*document.model_position(start, encoding), *document.model_position(end, encoding)))
    assert document.model_ranges(ranges, encoding) == want


def test_malformed_numbers_count_as_0_for_node_identity_too(project: tuple[Workspace, list[Any]]) -> None:
    """An item at line -1 (or ``true``, or at character -2) is the item at line 0 character 0: one node,
    its call sites pooled."""
    workspace, uris = project

    def at(line: Any, character: Any) -> dict[str, Any]:
        start = {"line": line, "character": character}
        return {"uri": uris[0], "name": "b", "kind": 12, "selectionRange": {"start": start, "end": start}}

    root = {**at(3, 4), "name": "a"}
    sites = [
        [{"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 5}}],
        [{"start": {"line": 1, "character": 9}}],
    ]
    answer = [(at(0, 0), sites[0]), (at(-1, 0), sites[1]), (at(0, -2), []), (at(True, False), [])]

    async def expand(item: dict[str, Any]) -> Sequence[Neighbour]:
        return answer if item["name"] == "a" else []

    got = asyncio.run(
        traverse(
            [root],
            expand,
            "callers",
            workspace=workspace,
            texts=TextCache(),
            encoding=PositionEncoding.UTF16,
            deadline=Deadline(9, clock=lambda: 0.0),
        )
    )
    assert [(item["id"], item["callSites"]) for item in got["items"]] == [
        ("a.py#b@1", [{"line": 2, "column": 5, "endColumn": 6}, {"line": 2, "column": 10, "endColumn": 10}])
    ]
    assert got == reference(
        [root], {"a": answer}, set(), "callers", workspace, PositionEncoding.UTF16, GraphBudgets(), 100
    )
