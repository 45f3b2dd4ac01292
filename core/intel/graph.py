"""``code_hierarchy`` traversal (B6.5-B6.8, B8.13): a bounded call or type graph, server-independent.

After ``prepareCallHierarchy`` / ``prepareTypeHierarchy`` gave the root items, :func:`traverse` walks
breadth-first up to ``depth`` levels, asking an *expander* for each node's neighbours (the wiring step
passes one that sends ``callHierarchy/incomingCalls`` and friends through the executor). It returns

- ``items``: the one-hop list (the root's direct callers, callees, supertypes or subtypes), capped by
  ``limit``, each with its call sites;
- ``graph``: ``nodes`` (stable ids ``<path>#<name>@<line>``, position, depth), ``edges`` (``caller`` /
  ``callee`` with call sites in the caller's file, or ``subtype`` / ``supertype``), ``failures`` (an
  expansion that failed is recorded, the rest of the graph still comes), ``budgets`` and truncation.

Nodes are deduplicated by identity (several entries for one neighbour become one item, its call sites
pooled, each site once), so a cycle (``a`` calls ``b`` calls ``a``) adds the edge back and
does not recurse. Budgets bound the walk: the tool call's deadline, the depth, a node count and an edge
count. Items outside the workspace (a call into the standard library) are omitted and counted (B8.11).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kandev_lsp.intel.errors import IntelError
from kandev_lsp.intel.executor import Deadline
from kandev_lsp.intel.symbols import kind_name
from kandev_lsp.intel.text import PositionEncoding, TextSource
from kandev_lsp.intel.workspace import Workspace, WorkspaceFile

__all__ = ["Expander", "GraphBudgets", "Neighbour", "traverse"]

#: One neighbour of an expanded item: the hierarchy item and the call-site ranges (``fromRanges``; empty
#: for type hierarchies).
#: Typed loosely on purpose: both parts come from a server and are checked here.
Neighbour = tuple[Any, Any]
#: Gives the neighbours of one item in the traversal's direction.
Expander = Callable[[dict[str, Any]], Awaitable[Sequence[Neighbour]]]

KINDS: Final = ("callers", "callees", "supertypes", "subtypes")
#: Expansions running at once (one language server answers them; more would only queue there).
CONCURRENCY: Final = 4


@dataclass(frozen=True, slots=True)
class GraphBudgets:
    """Bounds of one traversal besides the deadline (B8.13)."""

    depth: int = 1
    max_nodes: int = 200
    max_edges: int = 500

    def __post_init__(self) -> None:
        if not 1 <= self.depth <= 4:
            raise ValueError(f"depth must be 1-4, got {self.depth}")


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _start(item: dict[str, Any]) -> dict[str, int]:
    for key in ("selectionRange", "range"):
        span = item.get(key)
        if isinstance(span, dict) and isinstance(span.get("start"), dict):
            return {
                "line": _int(span["start"].get("line")),
                "character": _int(span["start"].get("character")),
            }
    return {"line": 0, "character": 0}


class _Walk:
    def __init__(
        self,
        kind: str,
        workspace: Workspace,
        texts: TextSource,
        encoding: PositionEncoding,
        budgets: GraphBudgets,
    ) -> None:
        self.kind = kind
        self.workspace = workspace
        self.lookup = workspace.uri_lookup()
        self.texts = texts
        self.encoding = encoding
        self.budgets = budgets
        self.nodes: dict[tuple[str, int, int, str], dict[str, Any]] = {}
        self.ids: set[str] = set()
        #: node id -> its file (call sites are converted with the caller's text)
        self.files: dict[str, WorkspaceFile] = {}
        self.edges: dict[tuple[str, str], dict[str, Any]] = {}
        self.failures: list[dict[str, Any]] = []
        self.truncated_by: set[str] = set()
        self.omitted = 0

    def position(self, file: WorkspaceFile, position: dict[str, int]) -> tuple[int, int]:
        document = self.texts.document(file)
        if document is None:
            return position["line"] + 1, position["character"] + 1
        return document.model_position(position, self.encoding)

    def node(self, item: dict[str, Any], depth: int) -> tuple[dict[str, Any] | None, bool]:
        """The node of ``item`` (new or seen before) and whether it is new; None when refused."""
        uri, name = item.get("uri"), item.get("name")
        if not isinstance(uri, str) or not isinstance(name, str):
            self.omitted += 1
            return None, False
        file = self.lookup(uri)
        if not isinstance(file, WorkspaceFile):
            self.omitted += 1
            return None, False
        start = _start(item)
        key = (file.absolute, start["line"], start["character"], name)
        if key in self.nodes:
            return self.nodes[key], False
        if len(self.nodes) >= self.budgets.max_nodes:
            self.truncated_by.add("nodes")
            return None, False
        line, column = self.position(file, start)
        node_id, number = f"{file.display}#{name}@{line}", 2
        while node_id in self.ids:
            node_id, number = f"{file.display}#{name}@{line}~{number}", number + 1
        self.ids.add(node_id)
        self.files[node_id] = file
        node: dict[str, Any] = {"id": node_id, "name": name, "kind": kind_name(_int(item.get("kind")))}
        node.update({"path": file.display, "line": line, "column": column, "depth": depth})
        if isinstance(item.get("detail"), str) and item["detail"]:
            node["detail"] = item["detail"][:120]
        self.nodes[key] = node
        return node, True

    def edge(self, expanded: dict[str, Any], neighbour: dict[str, Any], sites: list[dict[str, Any]]) -> bool:
        if self.kind in ("callers", "callees"):
            caller, callee = (neighbour, expanded) if self.kind == "callers" else (expanded, neighbour)
            key, edge = (caller["id"], callee["id"]), {"caller": caller["id"], "callee": callee["id"]}
            if sites:
                edge["callSites"] = sites
        else:
            sub, sup = (expanded, neighbour) if self.kind == "supertypes" else (neighbour, expanded)
            key, edge = (sub["id"], sup["id"]), {"subtype": sub["id"], "supertype": sup["id"]}
        if key in self.edges:
            return False
        if len(self.edges) >= self.budgets.max_edges:
            self.truncated_by.add("edges")
            return False
        self.edges[key] = edge
        return True


async def traverse(
    roots: Sequence[dict[str, Any]],
    expand: Expander,
    kind: str,
    *,
    workspace: Workspace,
    texts: TextSource,
    encoding: PositionEncoding,
    deadline: Deadline,
    budgets: GraphBudgets = GraphBudgets(),
    limit: int = 100,
    lookup: Callable[[str], WorkspaceFile | IntelError] | None = None,
) -> dict[str, Any]:
    """Walk the hierarchy from ``roots`` (see the module docstring); ``kind`` is one of :data:`KINDS`.

    :param lookup: the operation's :meth:`Workspace.uri_lookup` when the caller looks the files up too.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    walk = _Walk(kind, workspace, texts, encoding, budgets)
    if lookup is not None:
        walk.lookup = lookup
    started = deadline.elapsed()
    frontier: list[tuple[dict[str, Any], dict[str, Any]]] = []
    root_ids: list[str] = []
    for item in roots:
        node, new = walk.node(item, 0)
        if node is not None and new:
            frontier.append((item, node))
            root_ids.append(node["id"])
    one_hop: list[dict[str, Any]] = []
    limiter = asyncio.Semaphore(CONCURRENCY)

    async def expand_one(item: dict[str, Any]) -> Sequence[Neighbour] | BaseException:
        async with limiter:
            if deadline.expired:
                return TimeoutError("the tool call's deadline passed before this node was expanded")
            try:
                return await expand(item)
            except (
                Exception
            ) as error:  # IntelError included: recorded per node: the rest of the graph still counts
                return error

    depth_reached = 0
    for depth in range(1, budgets.depth + 1):
        if not frontier:
            break
        if deadline.expired:
            walk.truncated_by.add("time")
            break
        depth_reached = depth
        answers = await asyncio.gather(*(expand_one(item) for item, _ in frontier))
        next_frontier: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for (_, expanded), answer in zip(frontier, answers, strict=True):
            if isinstance(answer, BaseException):
                walk.failures.append({"node": expanded["id"], "error": str(answer) or type(answer).__name__})
                if isinstance(answer, TimeoutError):
                    walk.truncated_by.add("time")
                continue
            # One entry per neighbour node: a server may list a callee once per call (tsserver's
            # outgoingCalls does), so the entries of one node are merged and their ranges pooled.
            merged: dict[str, tuple[dict[str, Any], dict[str, Any], bool, list[Any]]] = {}
            for neighbour_item, ranges in answer:
                if not isinstance(neighbour_item, dict):
                    walk.omitted += 1
                    continue
                neighbour, new = walk.node(neighbour_item, depth)
                if neighbour is None:
                    continue
                pooled = list(ranges) if isinstance(ranges, list | tuple) else []
                seen = merged.get(neighbour["id"])
                if seen is None:
                    merged[neighbour["id"]] = (neighbour_item, neighbour, new, pooled)
                else:
                    seen[3].extend(pooled)
            for neighbour_item, neighbour, new, ranges in merged.values():
                caller = neighbour if kind == "callers" else expanded
                sites = _sites(walk, caller, ranges) if kind in ("callers", "callees") else []
                walk.edge(expanded, neighbour, sites)
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
        "nodes": list(walk.nodes.values()),
        "edges": list(walk.edges.values()),
        "depth": depth_reached,
        "budgets": {
            "depth": budgets.depth,
            "nodes": budgets.max_nodes,
            "edges": budgets.max_edges,
            "timeMs": round((deadline.elapsed() - started) * 1000, 1),
        },
        "truncated": bool(walk.truncated_by),
    }
    if walk.truncated_by:
        graph["truncatedBy"] = sorted(walk.truncated_by)
    if walk.failures:
        graph["failures"] = walk.failures
    shown = one_hop[:limit]
    out: dict[str, Any] = {
        "kind": kind,
        "items": shown,
        "totalFound": len(one_hop),
        "shown": len(shown),
        "truncated": len(one_hop) > limit,
        "graph": graph,
    }
    if walk.omitted:
        out["omitted"] = {"outsideWorkspace": walk.omitted}
    return out


def _sites(walk: _Walk, caller: dict[str, Any], ranges: Any) -> list[dict[str, Any]]:
    """The call sites (``fromRanges``) as model positions in the caller's file (one text lookup for all of
    them: a popular function's callers bring hundreds), each site once, in document order (a server may
    repeat a range: tsserver's outgoingCalls lists a call once per entry of the callee)."""
    if not isinstance(ranges, list | tuple) or not ranges:
        return []
    document = walk.texts.document(walk.files[caller["id"]])
    encoding = walk.encoding
    sites = []
    seen: set[tuple[int, int, int, int]] = set()
    for span in ranges:
        start = span.get("start") if isinstance(span, dict) else None
        if not isinstance(start, dict):
            continue
        end = span.get("end")
        if not isinstance(end, dict):
            end = start
        if document is not None:  # malformed numbers count as 0, as _int has them
            line, column = document.model_position(start, encoding)
            end_line, end_column = document.model_position(end, encoding)
        else:
            line, column = _int(start.get("line")) + 1, _int(start.get("character")) + 1
            end_line, end_column = _int(end.get("line")) + 1, _int(end.get("character")) + 1
        key = (line, column, end_line, end_column)
        if key in seen:
            continue
        seen.add(key)
        site: dict[str, Any] = {"line": line, "column": column}
        if end_line != line:
            site["endLine"] = end_line
        site["endColumn"] = end_column
        sites.append(site)
    sites.sort(key=lambda site: (site["line"], site["column"]))
    return sites
