"""``code_symbols`` results (B6.1, B6.2): a file's outline, or workspace symbols matching a query.

The outline keeps the server's nesting (``DocumentSymbol`` children) and shows each symbol as
``{name, kind, line, endLine, detail?, children?}``: ``line`` is where the name is, ``endLine`` where the
declaration ends, both 1-based, enough to target the symbol or read its body next. A flat
``SymbolInformation`` answer becomes a flat list with ``container``. ``limit`` counts symbols in
document order (parents before children), so a truncated outline is the top of the file, not a random
sample.

Workspace symbols are checked against the roots like every URI (B8.11: ``lib.d.ts`` or a stdlib stub
outside the workspace is omitted and counted) and ranked: exact name, then prefix, then the server's order.
"""

from __future__ import annotations

from typing import Any, Final

from kandev_lsp.intel.files.workspace import Workspace, WorkspaceFile
from kandev_lsp.intel.reading.output import DEFAULT_LIMIT
from kandev_lsp.intel.reading.symbols import SymbolEntry, flatten_symbols

__all__ = ["document_outline", "workspace_symbols"]

#: A symbol's ``detail`` (a type signature, for some servers) is cut beyond this many characters.
MAX_DETAIL: Final = 120


def _detail(item: dict[str, Any], out: dict[str, Any]) -> None:
    detail = item.get("detail")
    if isinstance(detail, str) and detail.strip():
        detail = detail.strip()
        out["detail"] = detail if len(detail) <= MAX_DETAIL else detail[: MAX_DETAIL - 1] + "…"


def _entry_json(entry: SymbolEntry) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": entry.name,
        "kind": entry.kind_label,
        "line": entry.selection_line + 1,
        "endLine": entry.end_line + 1,
    }
    if entry.container:
        out["container"] = entry.container
    if entry.detail:
        _detail({"detail": entry.detail}, out)
    return out


def document_outline(
    result: Any,
    *,
    limit: int = DEFAULT_LIMIT,
    query: str | None = None,
    entries: list[SymbolEntry] | None = None,
) -> dict[str, Any]:
    """``{symbols, totalFound, shown, truncated}`` for a ``documentSymbol`` answer.

    With ``query``, the symbols whose name or qualified name contains it (case-insensitive), flat, with
    ``qualifiedName``.

    :param entries: ``flatten_symbols(result)`` when the caller has it already (a kept symbol tree).
    """
    if entries is None:
        entries = flatten_symbols(result)
    if query is not None or not _is_tree(result):
        if query is not None:
            needle = query.lower()
            entries = [e for e in entries if needle in e.qualified_name.lower()]
        shown = [
            _entry_json(e) | ({"qualifiedName": e.qualified_name} if query else {}) for e in entries[:limit]
        ]
        return {
            "symbols": shown,
            "totalFound": len(entries),
            "shown": len(shown),
            "truncated": len(entries) > limit,
        }
    budget = [limit]
    tree = _tree(result, budget)
    shown_count = limit - budget[0]
    return {
        "symbols": tree,
        "totalFound": len(entries),
        "shown": shown_count,
        "truncated": len(entries) > shown_count,
    }


def _is_tree(result: Any) -> bool:
    return isinstance(result, list) and any(isinstance(i, dict) and "selectionRange" in i for i in result)


def _start_key(item: Any) -> tuple[int, int]:
    """Where an item starts; servers list symbols in their own order (tsserver's is alphabetical)."""
    span = item.get("range") if isinstance(item, dict) else None
    start = span.get("start") if isinstance(span, dict) else None
    if not isinstance(start, dict):
        return (0, 0)
    line, character = start.get("line"), start.get("character")
    return (line if isinstance(line, int) else 0, character if isinstance(character, int) else 0)


def _tree(items: list[Any], budget: list[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in sorted(items, key=_start_key):  # document order: a truncated outline is the top of the file
        if budget[0] <= 0:
            break
        flat = flatten_symbols([{**item, "children": []}]) if isinstance(item, dict) else []
        if not flat:
            continue
        entry = flat[0]
        budget[0] -= 1
        node = _entry_json(entry)
        children = item.get("children")
        if isinstance(children, list) and children and budget[0] > 0:
            nested = _tree(children, budget)
            if nested:
                node["children"] = nested
        out.append(node)
    return out


def workspace_symbols(
    result: Any, workspace: Workspace, query: str, *, limit: int = DEFAULT_LIMIT
) -> dict[str, Any]:
    """``{symbols, totalFound, shown, truncated, omitted?}`` for a ``workspace/symbol`` answer."""
    entries = flatten_symbols(result)
    inside: list[tuple[SymbolEntry, WorkspaceFile]] = []
    omitted = 0
    lookup = workspace.uri_lookup()
    #: The answers of several servers are joined, and two servers may cover one file (a nested project
    #: inside the outer server's tree): one symbol (file, name, kind, position) is listed once.
    listed: set[tuple[str, str, int, tuple[int, int]]] = set()
    for entry in entries:
        file = lookup(entry.uri or "")
        if isinstance(file, WorkspaceFile):
            key = (file.absolute, entry.name, entry.kind, _start_key({"range": entry.selection_range}))
            if key not in listed:
                listed.add(key)
                inside.append((entry, file))
        else:
            omitted += 1
    lowered = query.lower()

    def rank(item: tuple[SymbolEntry, WorkspaceFile]) -> int:
        name = item[0].name.lower()
        return 0 if name == lowered else 1 if name.startswith(lowered) else 2

    inside.sort(key=rank)  # stable: the server's order within a rank
    shown = [{**_entry_json(entry), "path": file.display} for entry, file in inside[:limit]]
    out: dict[str, Any] = {
        "symbols": shown,
        "totalFound": len(inside),
        "shown": len(shown),
        "truncated": len(inside) > limit,
    }
    if omitted:
        out["omitted"] = {"outsideWorkspace": omitted}
    return out
