"""code_hierarchy traversal (B6.5-B6.8, B8.13): one-hop list, bounded graph, dedup, cycles, budgets."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.intel.files.text import PositionEncoding, TextCache
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.reading.graph import GraphBudgets, Neighbour, traverse
from kandev_lsp.intel.runtime.executor import Deadline
from kandev_lsp.intel.surface.summaries import summarize

SOURCE = """\
def a():
    b(); c()

def b():
    a()

def c():
    d()

def d():
    print("😀"); e()

def e():
    pass
"""
LINES = {"a": 0, "b": 3, "c": 6, "d": 9, "e": 12}
#: Who calls whom in SOURCE (a -> b -> a is a cycle).
CALLS = {"a": ["b", "c"], "b": ["a"], "c": ["d"], "d": ["print", "e"], "e": []}


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    (tmp_path / "m.py").write_text(SOURCE)
    return Workspace([tmp_path])


def _item(workspace: Workspace, name: str) -> dict[str, Any]:
    line = LINES.get(name, 0)
    uri = workspace.resolve("m.py").uri if name in LINES else "file:///usr/lib/python3.11/builtins.pyi"
    span = {"start": {"line": line, "character": 4}, "end": {"line": line, "character": 4 + len(name)}}
    return {"name": name, "kind": 12, "uri": uri, "range": span, "selectionRange": span, "detail": "m"}


def _site(line: int, character: int, length: int = 1) -> dict[str, Any]:
    return {
        "start": {"line": line, "character": character},
        "end": {"line": line, "character": character + length},
    }


def _call_site(caller: str, callee: str) -> dict[str, Any]:
    line = LINES[caller] + 1
    text = SOURCE.splitlines()[line]
    index = text.index(callee + "(")
    units = len(text[:index].encode("utf-16-le")) // 2
    return _site(line, units, len(callee))


def callees_of(workspace: Workspace, calls: list[str] | None = None):  # type: ignore[no-untyped-def]
    async def expand(item: dict[str, Any]) -> Sequence[Neighbour]:
        if calls is not None:
            calls.append(item["name"])
        return [
            (_item(workspace, name), [_call_site(item["name"], name)]) for name in CALLS.get(item["name"], [])
        ]

    return expand


def callers_of(workspace: Workspace):  # type: ignore[no-untyped-def]
    async def expand(item: dict[str, Any]) -> Sequence[Neighbour]:
        target = item["name"]
        return [
            (_item(workspace, caller), [_call_site(caller, target)])
            for caller, callees in CALLS.items()
            if target in callees
        ]

    return expand


def walk(workspace: Workspace, root: str, expand: Any, kind: str, **options: Any) -> dict[str, Any]:
    deadline = options.pop("deadline", None) or Deadline(5)
    return asyncio.run(
        traverse(
            [_item(workspace, root)],
            expand,
            kind,
            workspace=workspace,
            texts=TextCache(),
            encoding=PositionEncoding.UTF16,
            deadline=deadline,
            **options,
        )
    )


def test_one_hop_callees_with_call_sites(workspace: Workspace) -> None:
    result = walk(workspace, "a", callees_of(workspace), "callees")
    assert result["items"] == [
        {"id": "m.py#b@4", "name": "b", "kind": "function", "path": "m.py", "line": 4, "column": 5, "detail": "m",
         "callSites": [{"line": 2, "column": 5, "endColumn": 6}]},
        {"id": "m.py#c@7", "name": "c", "kind": "function", "path": "m.py", "line": 7, "column": 5, "detail": "m",
         "callSites": [{"line": 2, "column": 10, "endColumn": 11}]},
    ]  # fmt: skip
    assert (result["totalFound"], result["shown"], result["truncated"]) == (2, 2, False)
    graph = result["graph"]
    assert graph["roots"] == ["m.py#a@1"]
    assert graph["edges"] == [
        {"caller": "m.py#a@1", "callee": "m.py#b@4", "callSites": [{"line": 2, "column": 5, "endColumn": 6}]},
        {
            "caller": "m.py#a@1",
            "callee": "m.py#c@7",
            "callSites": [{"line": 2, "column": 10, "endColumn": 11}],
        },
    ]
    assert graph["depth"] == 1 and graph["truncated"] is False


def test_deeper_graphs_dedupe_nodes_and_do_not_recurse_into_cycles(workspace: Workspace) -> None:
    expanded: list[str] = []
    result = walk(workspace, "a", callees_of(workspace, expanded), "callees", budgets=GraphBudgets(depth=4))
    graph = result["graph"]
    assert [(n["id"], n["depth"]) for n in graph["nodes"]] == [
        ("m.py#a@1", 0), ("m.py#b@4", 1), ("m.py#c@7", 1), ("m.py#d@10", 2), ("m.py#e@13", 3),
    ]  # fmt: skip
    assert {
        "caller": "m.py#b@4",
        "callee": "m.py#a@1",
        "callSites": [{"line": 5, "column": 5, "endColumn": 6}],
    } in graph["edges"]
    assert expanded.count("a") == 1  # the cycle back to a added an edge, not a second walk
    assert sorted(expanded) == ["a", "b", "c", "d", "e"]
    assert graph["depth"] == 4
    # print() is in the standard library, outside the workspace: omitted, counted
    assert result["omitted"] == {"outsideWorkspace": 1}
    assert all("builtins" not in n["path"] for n in graph["nodes"])


def test_call_sites_are_character_columns(workspace: Workspace) -> None:
    result = walk(workspace, "d", callees_of(workspace), "callees")
    [e_item] = result["items"]
    # "e()" follows an emoji: UTF-16 character 17 (0-based) is column 17 (1-based), not 18
    assert e_item["callSites"] == [{"line": 11, "column": 17, "endColumn": 18}]


def test_callers_put_call_sites_in_the_callers_file(workspace: Workspace) -> None:
    result = walk(workspace, "a", callers_of(workspace), "callers", budgets=GraphBudgets(depth=2))
    assert [(i["name"], i["callSites"]) for i in result["items"]] == [
        ("b", [{"line": 5, "column": 5, "endColumn": 6}])
    ]
    assert result["graph"]["edges"] == [
        {"caller": "m.py#b@4", "callee": "m.py#a@1", "callSites": [{"line": 5, "column": 5, "endColumn": 6}]},
        {"caller": "m.py#a@1", "callee": "m.py#b@4", "callSites": [{"line": 2, "column": 5, "endColumn": 6}]},
    ]


def test_type_hierarchies_have_subtype_supertype_edges(workspace: Workspace) -> None:
    parents = {"e": ["d"], "d": ["c"], "c": []}

    async def supertypes(item: dict[str, Any]) -> Sequence[Neighbour]:
        return [(_item(workspace, name), []) for name in parents.get(item["name"], [])]

    up = walk(workspace, "e", supertypes, "supertypes", budgets=GraphBudgets(depth=3))
    assert up["graph"]["edges"] == [
        {"subtype": "m.py#e@13", "supertype": "m.py#d@10"},
        {"subtype": "m.py#d@10", "supertype": "m.py#c@7"},
    ]
    assert "callSites" not in up["items"][0]

    async def subtypes(item: dict[str, Any]) -> Sequence[Neighbour]:
        return [(_item(workspace, name), []) for name, ps in parents.items() if item["name"] in ps]

    down = walk(workspace, "c", subtypes, "subtypes")
    assert down["graph"]["edges"] == [{"subtype": "m.py#d@10", "supertype": "m.py#c@7"}]


def test_node_and_edge_budgets_truncate(workspace: Workspace) -> None:
    result = walk(
        workspace, "a", callees_of(workspace), "callees", budgets=GraphBudgets(depth=4, max_nodes=3)
    )
    graph = result["graph"]
    assert len(graph["nodes"]) == 3 and graph["truncated"] is True and graph["truncatedBy"] == ["nodes"]
    result = walk(
        workspace, "a", callees_of(workspace), "callees", budgets=GraphBudgets(depth=4, max_edges=2)
    )
    assert len(result["graph"]["edges"]) == 2 and result["graph"]["truncatedBy"] == ["edges"]


def test_the_one_hop_list_honours_limit(workspace: Workspace) -> None:
    result = walk(workspace, "a", callees_of(workspace), "callees", limit=1)
    assert (len(result["items"]), result["totalFound"], result["truncated"]) == (1, 2, True)


def test_a_failed_expansion_is_recorded_and_the_rest_still_comes(workspace: Workspace) -> None:
    inner = callees_of(workspace)

    async def flaky(item: dict[str, Any]) -> Sequence[Neighbour]:
        if item["name"] == "b":
            raise RuntimeError("the server answered incomingCalls with error -32603: boom")
        return await inner(item)

    result = walk(workspace, "a", flaky, "callees", budgets=GraphBudgets(depth=3))
    graph = result["graph"]
    assert graph["failures"] == [
        {"node": "m.py#b@4", "error": "the server answered incomingCalls with error -32603: boom"}
    ]
    assert "m.py#d@10" in [n["id"] for n in graph["nodes"]]  # found through c


def test_the_deadline_stops_the_walk(workspace: Workspace) -> None:
    now = [0.0]
    deadline = Deadline(1, clock=lambda: now[0])
    inner = callees_of(workspace)

    async def slow(item: dict[str, Any]) -> Sequence[Neighbour]:
        now[0] += 0.6  # each expansion spends 0.6 s of the 1 s budget
        return await inner(item)

    result = walk(workspace, "a", slow, "callees", budgets=GraphBudgets(depth=4), deadline=deadline)
    graph = result["graph"]
    assert graph["truncated"] is True and "time" in graph["truncatedBy"]
    assert graph["depth"] < 4
    assert graph["budgets"]["timeMs"] > 0


def test_bad_items_are_skipped(workspace: Workspace) -> None:
    async def junk(item: dict[str, Any]) -> Sequence[Neighbour]:
        return [("not an item", []), ({"name": "x"}, []), (_item(workspace, "b"), "not ranges")]

    result = walk(workspace, "a", junk, "callees")
    assert [i["name"] for i in result["items"]] == ["b"] and "callSites" not in result["items"][0]
    assert result["omitted"] == {"outsideWorkspace": 2}


def test_arguments_are_checked(workspace: Workspace) -> None:
    with pytest.raises(ValueError, match="depth must be 1-4"):
        GraphBudgets(depth=5)
    with pytest.raises(ValueError, match="kind must be one of"):
        walk(workspace, "a", callees_of(workspace), "friends")


def test_repeated_entries_and_ranges_of_one_callee_become_one_item(workspace: Workspace) -> None:
    """tsserver's outgoingCalls gave ``add`` at lines 27, 27, 28, 28, 29, 29 (MCP trial finding 2): the
    same callee in several entries, each with the same ranges. One item, each call site once."""
    first, second = _call_site("a", "b"), _call_site("a", "c")

    async def expand(item: dict[str, Any]) -> Sequence[Neighbour]:
        if item["name"] != "a":
            return []
        return [
            (_item(workspace, "b"), [second, first, first]),
            (_item(workspace, "c"), [second]),
            (_item(workspace, "b"), [first, second]),
        ]

    result = walk(workspace, "a", expand, "callees", budgets=GraphBudgets(depth=2))
    sites = [{"line": 2, "column": 5, "endColumn": 6}, {"line": 2, "column": 10, "endColumn": 11}]
    assert [(i["name"], i["callSites"]) for i in result["items"]] == [("b", sites), ("c", sites[1:])]
    assert result["totalFound"] == 2
    edges = result["graph"]["edges"]
    assert {"caller": "m.py#a@1", "callee": "m.py#b@4", "callSites": sites} in edges and len(edges) == 2


def test_repeated_caller_entries_merge_in_the_callers_file(workspace: Workspace) -> None:
    site = _call_site("b", "a")

    async def expand(item: dict[str, Any]) -> Sequence[Neighbour]:
        return (
            [(_item(workspace, "b"), [site]), (_item(workspace, "b"), [site])] if item["name"] == "a" else []
        )

    result = walk(workspace, "a", expand, "callers")
    assert [(i["name"], i["callSites"]) for i in result["items"]] == [
        ("b", [{"line": 5, "column": 5, "endColumn": 6}])
    ]


def test_the_walks_path_checks_are_shared_with_the_caller(workspace: Workspace) -> None:
    """Each URI is checked once per call (B8.11), and the caller (which re-syncs the graph's files)
    gets the checks rather than making them again: a refused URI is there as None."""
    asked: list[str] = []
    check = workspace.uri_lookup()

    def lookup(uri: str) -> Any:
        asked.append(uri)
        return check(uri)

    checked: dict[str, Any] = {}
    walk(
        workspace,
        "a",
        callees_of(workspace),
        "callees",
        budgets=GraphBudgets(depth=4),
        lookup=lookup,
        checked=checked,
    )
    inside, outside = _item(workspace, "a")["uri"], _item(workspace, "print")["uri"]
    assert sorted(asked) == sorted({inside, outside})  # five nodes in one file, a cycle, one call out
    assert checked[inside] == workspace.resolve("m.py") and checked[outside] is None


def test_direct_neighbours_past_the_node_budget_are_counted_not_dropped(workspace: Workspace) -> None:
    """A function 300 modules call, with room for 200 nodes, answered "199 callers (100 of 199 shown)"
    (a round-4 trial on pyright): the callers the node budget kept out of the graph were not counted."""
    callers = ["b", "c", "d", "e"]

    async def expand(item: dict[str, Any]) -> Sequence[Neighbour]:
        return [(_item(workspace, name), []) for name in callers] if item["name"] == "a" else []

    result = walk(workspace, "a", expand, "callers", budgets=GraphBudgets(max_nodes=3))
    assert [item["name"] for item in result["items"]] == ["b", "c"]  # the root and two callers fit
    assert (result["totalFound"], result["shown"], result["truncated"]) == (4, 2, True)
    assert result["graph"]["truncatedBy"] == ["nodes"]
    assert summarize("code_hierarchy", {**result, "ok": True}) == "4 callers (2 of 4 shown)"
    roomy = walk(workspace, "a", expand, "callers", budgets=GraphBudgets(max_nodes=5))
    assert (roomy["totalFound"], roomy["shown"], roomy["truncated"]) == (4, 4, False)


def test_an_answer_carries_a_bounded_number_of_call_sites(workspace: Workspace) -> None:
    """greet called 20 times in each of 300 modules: code_hierarchy callers answered 318 KB (each caller's
    sites in its item and again in its edge), where references stop at 60 000 characters (a round-4
    trial). The items' sites come first, then the edges'; past the budget an entry says how many."""

    async def expand(item: dict[str, Any]) -> Sequence[Neighbour]:
        if item["name"] != "a":
            return []
        return [(_item(workspace, name), [_site(LINES[name] + 1, c) for c in range(3)]) for name in "bcd"]

    result = walk(workspace, "a", expand, "callers", budgets=GraphBudgets(max_call_sites=4), limit=2)
    items, edges = result["items"], result["graph"]["edges"]
    assert [(i["name"], len(i.get("callSites", [])), i.get("callSiteCount")) for i in items] == [
        ("b", 3, None),
        ("c", 1, 3),
    ]
    assert [(len(e.get("callSites", [])), e.get("callSiteCount")) for e in edges] == [(0, 3)] * 3
    assert result["graph"]["truncated"] and result["graph"]["truncatedBy"] == ["callSites"]
    roomy = walk(workspace, "a", expand, "callers", limit=2)
    assert [len(e["callSites"]) for e in roomy["graph"]["edges"]] == [3, 3, 3]
    assert "truncatedBy" not in roomy["graph"] and "callSiteCount" not in str(roomy)
