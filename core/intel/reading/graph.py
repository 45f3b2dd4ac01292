"""``code_hierarchy`` traversal (B6.5-B6.8, B8.13): a bounded call or type graph, server-independent.

After ``prepareCallHierarchy`` / ``prepareTypeHierarchy`` gave the root items, :func:`traverse` walks
breadth-first up to ``depth`` levels, asking an *expander* for each node's neighbours (the wiring step
passes one that sends ``callHierarchy/incomingCalls`` and friends through the executor). It returns

- ``items``: the one-hop list (the root's direct callers, callees, supertypes or subtypes), capped by
  ``limit`` and by the node budget, each with its call sites; ``totalFound`` counts every direct
  neighbour the server named, those the node budget kept out of the graph included;
- ``graph``: ``nodes`` (stable ids ``<path>#<name>@<line>``, position, depth), ``edges`` (``caller`` /
  ``callee`` with call sites in the caller's file, or ``subtype`` / ``supertype``), ``failures`` (an
  expansion that failed is recorded, the rest of the graph still comes), ``budgets`` and truncation.

Nodes are deduplicated by identity (several entries for one neighbour become one item, its call sites
pooled, each site once), so a cycle (``a`` calls ``b`` calls ``a``) adds the edge back and
does not recurse. Budgets bound the walk: the tool call's deadline, the depth, a node count and an edge
count. Items outside the workspace (a call into the standard library) are omitted and counted (B8.11).

Cost (issue 9: a tool call may add 5 % + 1 ms to the raw request, and a popular function has hundreds of
callers): each URI is checked and each file's text looked up once per call, a node's call sites are
converted in one pass over its file's text (:meth:`~kandev_lsp.intel.files.text.Document.model_ranges`), and
the well-formed call sites, the usual ones, take the short path through each check; malformed values
take the general one and come out as before (``tests/intel/test_graph_reference.py`` holds the two equal).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kandev_lsp.intel.errors import IntelError
from kandev_lsp.intel.files.text import Document, PositionEncoding, TextSource
from kandev_lsp.intel.files.workspace import Workspace, WorkspaceFile
from kandev_lsp.intel.reading.symbols import kind_name
from kandev_lsp.intel.runtime.executor import Deadline

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
    #: Call sites in one answer (the one-hop items' first, then the edges'): a function 300 modules call
    #: 20 times each answered 318 KB, where references stop at 60 000 characters.
    max_call_sites: int = 500

    def __post_init__(self) -> None:
        if not 1 <= self.depth <= 4:
            raise ValueError(f"depth must be 1-4, got {self.depth}")


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _start(item: dict[str, Any]) -> dict[str, Any] | None:
    """The item's position (its ``selectionRange``'s start, else its ``range``'s), as the server sent it:
    its numbers are checked where they are used; None when the item has neither."""
    span = item.get("selectionRange")
    start = span.get("start") if isinstance(span, dict) else None
    if isinstance(start, dict):
        return start
    span = item.get("range")
    start = span.get("start") if isinstance(span, dict) else None
    return start if isinstance(start, dict) else None


#: Where an item without a position is placed (its first line).
_ORIGIN: Final = {"line": 0, "character": 0}


class _Walk:
    """The state of one traversal: its nodes, edges, failures and budgets' verdicts.

    Everything a node needs is looked up once per call: each URI's path check (B8.11), kept by URI, and
    each file's text (the call's text source reads a file once); a node keeps its file's text for its
    call sites.
    """

    def __init__(
        self,
        lookup: Callable[[str], WorkspaceFile | IntelError],
        texts: TextSource,
        encoding: PositionEncoding,
        max_nodes: int,
    ) -> None:
        self.lookup = lookup
        self.texts = texts
        self.encoding = encoding
        self.max_nodes = max_nodes
        self.nodes: dict[tuple[str, int, int, str], dict[str, Any]] = {}
        self.ids: set[str] = set()
        #: node id -> its file's text (call sites are converted with the caller's text)
        self.documents: dict[str, Document | None] = {}
        #: URI -> its file, or None when the path check refused it (one check per URI per call)
        self.found: dict[str, WorkspaceFile | None] = {}
        self.edges: dict[tuple[str, str], dict[str, Any]] = {}
        self.failures: list[dict[str, Any]] = []
        self.truncated_by: set[str] = set()
        self.omitted = 0
        #: the direct neighbours (depth 1) the node budget kept out of the graph: still counted in
        #: ``totalFound``, so "199 callers" is never said of a function 300 modules call
        self.unlisted: set[tuple[str, int, int, str]] = set()

    def node(self, item: dict[str, Any], depth: int) -> tuple[dict[str, Any] | None, bool]:
        """The node of ``item`` (new or seen before) and whether it is new; None when refused."""
        try:
            uri, name = item["uri"], item["name"]
        except KeyError:
            uri = name = None
        if not isinstance(uri, str) or not isinstance(name, str):
            self.omitted += 1
            return None, False
        found = self.found
        if uri in found:
            file = found[uri]
        else:
            looked_up = self.lookup(uri)  # the path check (B8.11), once per URI per call
            file = found[uri] = looked_up if isinstance(looked_up, WorkspaceFile) else None
        if file is None:
            self.omitted += 1
            return None, False
        start = _start(item)
        if start is None:
            line = character = 0
        else:  # malformed numbers count as 0 (as model_position has them)
            line, character = _int(start.get("line")), _int(start.get("character"))
        absolute = file.absolute
        key = (absolute, line, character, name)
        nodes = self.nodes
        if key in nodes:
            return nodes[key], False
        if len(nodes) >= self.max_nodes:
            self.truncated_by.add("nodes")
            if depth == 1:
                self.unlisted.add(key)
            return None, False
        document = self.texts.document(file)  # the call's TextCache reads each file once
        if document is None:
            line, column = line + 1, character + 1
        else:
            line, column = document.model_position(_ORIGIN if start is None else start, self.encoding)
        display = file.display
        node_id = f"{display}#{name}@{line}"
        ids = self.ids
        if node_id in ids:
            number = 2
            while (node_id := f"{display}#{name}@{line}~{number}") in ids:
                number += 1
        ids.add(node_id)
        self.documents[node_id] = document
        node = {
            "id": node_id,
            "name": name,
            "kind": kind_name(_int(item.get("kind"))),
            "path": display,
            "line": line,
            "column": column,
            "depth": depth,
        }
        detail = item.get("detail")
        if type(detail) is str and detail:
            node["detail"] = detail[:120]
        nodes[key] = node
        return node, True


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
    checked: dict[str, WorkspaceFile | None] | None = None,
) -> dict[str, Any]:
    """Walk the hierarchy from ``roots`` (see the module docstring); ``kind`` is one of :data:`KINDS`.

    :param lookup: the operation's :meth:`Workspace.uri_lookup` when the caller looks the files up too.
    :param checked: filled with the path check of each URI the walk looked up (its file, or None when
        refused), so the caller's own use of the same files needs no second check.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    walk = _Walk(lookup or workspace.uri_lookup(), texts, encoding, budgets.max_nodes)
    if checked is not None:
        walk.found = checked
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

    calls = kind in ("callers", "callees")
    node_of, documents, edges, max_edges = walk.node, walk.documents, walk.edges, budgets.max_edges
    #: an edge's two ends: the neighbour first for callers (it calls) and subtypes (it extends)
    neighbour_first = kind in ("callers", "subtypes")
    first_label, second_label = ("caller", "callee") if calls else ("subtype", "supertype")
    depth_reached = 0
    for depth in range(1, budgets.depth + 1):
        if not frontier:
            break
        if deadline.expired:
            walk.truncated_by.add("time")
            break
        depth_reached = depth
        if len(frontier) == 1:  # the usual first level (one root): no task to schedule
            answers = [await expand_one(frontier[0][0])]
        else:
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
            merged: dict[str, list[Any]] = {}
            for neighbour_item, ranges in answer:
                if not isinstance(neighbour_item, dict):
                    walk.omitted += 1
                    continue
                neighbour, new = node_of(neighbour_item, depth)
                if neighbour is None:
                    continue
                pooled = ranges if isinstance(ranges, list | tuple) else ()
                seen = merged.get(neighbour["id"])
                if seen is None:
                    merged[neighbour["id"]] = [neighbour_item, neighbour, new, pooled]
                elif pooled:
                    seen[3] = [*seen[3], *pooled]
            expanded_id = expanded["id"]
            for neighbour_item, neighbour, new, ranges in merged.values():
                neighbour_id = neighbour["id"]
                if calls and ranges:
                    caller_id = neighbour_id if neighbour_first else expanded_id
                    sites = _sites(documents[caller_id], ranges, encoding)
                else:
                    sites = []
                # the edge, once (the first one's call sites)
                key = (neighbour_id, expanded_id) if neighbour_first else (expanded_id, neighbour_id)
                if key not in edges:
                    if len(edges) >= max_edges:
                        walk.truncated_by.add("edges")
                    else:
                        edge = {first_label: key[0], second_label: key[1]}
                        if sites:
                            edge["callSites"] = sites
                        edges[key] = edge
                if depth == 1:
                    entry = neighbour.copy()
                    del entry["depth"]
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
    if _bound_call_sites((shown, graph["edges"]), budgets.max_call_sites):
        graph["truncated"] = True
        graph["truncatedBy"] = sorted({*graph.get("truncatedBy", ()), "callSites"})
    found = len(one_hop) + len(walk.unlisted)
    out: dict[str, Any] = {
        "kind": kind,
        "items": shown,
        "totalFound": found,
        "shown": len(shown),
        "truncated": found > len(shown),
        "graph": graph,
    }
    if walk.omitted:
        out["omitted"] = {"outsideWorkspace": walk.omitted}
    return out


def _bound_call_sites(groups: Sequence[list[dict[str, Any]]], budget: int) -> bool:
    """Keep at most ``budget`` call sites over the entries of ``groups`` (the items, then the edges, in
    order); an entry past it lists what is left of the budget, if any, and says how many it has
    (``callSiteCount``). Whether any site was left out.

    An item and its edge share one list of sites (:func:`traverse`): an entry cut is replaced in its
    group by a new one, and no list of sites is changed."""
    left = budget
    cut = False
    for entries in groups:
        for index, entry in enumerate(entries):
            sites = entry.get("callSites")
            if not sites or len(sites) <= left:
                left -= len(sites) if sites else 0
                continue
            cut = True
            bounded = {key: value for key, value in entry.items() if key != "callSites"}
            if left:
                bounded["callSites"] = sites[:left]
                left = 0
            bounded["callSiteCount"] = len(sites)
            entries[index] = bounded
    return cut


def _sites(
    document: Document | None, ranges: Sequence[Any], encoding: PositionEncoding
) -> list[dict[str, Any]]:
    """The call sites (``fromRanges``) as model positions in the caller's file (its text looked up once
    for all of them: a popular function's callers bring hundreds), each site once, in document order (a
    server may repeat a range: tsserver's outgoingCalls lists a call once per entry of the callee)."""
    spans = document.model_ranges(ranges, encoding) if document is not None else _plain_ranges(ranges)
    sites: list[dict[str, Any]] = []
    seen: set[tuple[int, int, int, int]] = set()
    ordered, last_line, last_column = True, 0, 0
    for span in spans:
        if span is None or span in seen:
            continue
        seen.add(span)
        line, column, end_line, end_column = span
        if line < last_line or (line == last_line and column < last_column):
            ordered = False
        last_line, last_column = line, column
        if end_line == line:
            sites.append({"line": line, "column": column, "endColumn": end_column})
        else:
            sites.append({"line": line, "column": column, "endLine": end_line, "endColumn": end_column})
    if not ordered:  # servers list them in order nearly always; a stable sort otherwise
        sites.sort(key=lambda site: (site["line"], site["column"]))
    return sites


def _plain_ranges(ranges: Sequence[Any]) -> list[tuple[int, int, int, int] | None]:
    """:meth:`Document.model_ranges` for a file whose text cannot be read: character offsets taken as
    columns (malformed numbers count as 0)."""
    out: list[tuple[int, int, int, int] | None] = []
    for span in ranges:
        start = span.get("start") if isinstance(span, dict) else None
        if not isinstance(start, dict):
            out.append(None)
            continue
        end = span.get("end")
        if not isinstance(end, dict):
            end = start
        out.append(
            (
                _int(start.get("line")) + 1,
                _int(start.get("character")) + 1,
                _int(end.get("line")) + 1,
                _int(end.get("character")) + 1,
            )
        )
    return out
