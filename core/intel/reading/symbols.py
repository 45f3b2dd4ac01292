"""Document symbols as one flat list of entries with qualified names (B4.3).

``textDocument/documentSymbol`` answers either a ``DocumentSymbol`` tree (name, kind, range,
selectionRange, children) or a flat ``SymbolInformation`` list (name, kind, location, containerName).
Target resolution and the symbol tools want one shape: :func:`flatten_symbols` walks either into
:class:`SymbolEntry` values whose ``qualified_name`` is the container chain joined by ``.``
(``ChatProvider.send``). Malformed items are skipped rather than failing the whole answer: a server's
odd entry must not hide the good ones.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, TypeGuard

__all__ = [
    "SYMBOL_KINDS",
    "SymbolEntry",
    "SymbolTree",
    "SymbolTrees",
    "enclosing_symbol",
    "flatten_symbols",
    "kind_name",
    "kind_number",
]

#: LSP ``SymbolKind`` names, index + 1 is the number.
SYMBOL_KINDS: Final = (
    "file", "module", "namespace", "package", "class", "method", "property", "field", "constructor",
    "enum", "interface", "function", "variable", "constant", "string", "number", "boolean", "array",
    "object", "key", "null", "enumMember", "struct", "event", "operator", "typeParameter",
)  # fmt: skip

_BY_NORMALISED: Final = {name.lower(): index + 1 for index, name in enumerate(SYMBOL_KINDS)}

#: Bounds against a pathological answer: nesting depth walked, entries kept.
MAX_DEPTH: Final = 64
MAX_ENTRIES: Final = 50_000


def kind_name(kind: int) -> str:
    """``5`` -> ``"class"``; an unknown number -> ``"kind<N>"``."""
    if 1 <= kind <= len(SYMBOL_KINDS):
        return SYMBOL_KINDS[kind - 1]
    return f"kind{kind}"


def kind_number(name: str) -> int | None:
    """``"Class"``, ``"enum_member"``, ``"enum-member"`` -> their number; None when unknown."""
    return _BY_NORMALISED.get(name.replace("_", "").replace("-", "").lower())


@dataclass(slots=True)
class SymbolEntry:
    """One symbol of a document, positions as the server gave them (0-based, server encoding).

    A value: nothing mutates it. It is not ``frozen`` because a frozen dataclass costs five times as much
    to build, and a big file has thousands of symbols on every symbol-target resolution.
    """

    name: str
    kind: int
    qualified_name: str
    container: str | None
    #: The whole declaration (body included).
    range: dict[str, Any]
    #: The name itself (for ``SymbolInformation``, the start of ``range`` until refined by the text).
    selection_range: dict[str, Any]
    detail: str | None = None
    depth: int = 0
    #: ``SymbolInformation`` carries a URI; document symbols belong to the document asked about.
    uri: str | None = None

    @property
    def kind_label(self) -> str:
        """The kind as a word (``"method"``)."""
        return kind_name(self.kind)

    @property
    def start_line(self) -> int:
        return _line(self.range.get("start"))

    @property
    def end_line(self) -> int:
        return _line(self.range.get("end"))

    @property
    def selection_line(self) -> int:
        return _line(self.selection_range.get("start"))


def _line(position: Any) -> int:
    if isinstance(position, dict):
        value = position.get("line")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return 0


def _is_position(value: Any) -> bool:
    if type(value) is not dict:
        return False
    line, character = value.get("line"), value.get("character")
    return type(line) is int and type(character) is int


def _is_range(value: Any) -> TypeGuard[dict[str, Any]]:
    return type(value) is dict and _is_position(value.get("start")) and _is_position(value.get("end"))


def _kind(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def flatten_symbols(result: Any) -> list[SymbolEntry]:
    """The entries of a ``documentSymbol`` (or ``workspace/symbol``) answer, in document order of the tree
    (a parent before its children)."""
    if not isinstance(result, list):
        return []
    entries: list[SymbolEntry] = []
    for entry in _walk(result, None, 0):
        entries.append(entry)
        if len(entries) >= MAX_ENTRIES:
            break
    return entries


def _walk(items: list[Any], container: str | None, depth: int) -> Iterator[SymbolEntry]:
    if depth > MAX_DEPTH:
        return
    for item in items:
        if not isinstance(item, dict):
            continue
        name, kind = item.get("name"), _kind(item.get("kind"))
        if not isinstance(name, str) or not name or kind is None:
            continue
        detail = item.get("detail") if isinstance(item.get("detail"), str) else None
        if "location" in item:  # SymbolInformation / WorkspaceSymbol
            location = item["location"]
            if not isinstance(location, dict) or not isinstance(location.get("uri"), str):
                continue
            # WorkspaceSymbol may omit the range (resolved lazily): the start of the file stands in.
            symbol_range: Any = location.get("range")
            if not _is_range(symbol_range):
                symbol_range = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
            parent = item.get("containerName")
            parent = parent if isinstance(parent, str) and parent else None
            qualified = f"{parent}.{name}" if parent else name
            start = symbol_range["start"]
            yield SymbolEntry(
                name, kind, qualified, parent, symbol_range, {"start": start, "end": start},
                detail, 0, location["uri"],
            )  # fmt: skip
            continue
        symbol_range, selection = item.get("range"), item.get("selectionRange")
        if not _is_range(symbol_range):
            continue
        if not _is_range(selection):
            selection = {"start": symbol_range["start"], "end": symbol_range["start"]}
        qualified = f"{container}.{name}" if container else name
        yield SymbolEntry(name, kind, qualified, container, symbol_range, selection, detail, depth)
        children = item.get("children")
        if isinstance(children, list) and children:
            yield from _walk(children, qualified, depth + 1)


def enclosing_symbol(entries: list[SymbolEntry], line: int) -> SymbolEntry | None:
    """The innermost entry whose range holds 0-based ``line`` (for a body or a location's container)."""
    best: SymbolEntry | None = None
    for entry in entries:
        if entry.start_line <= line <= entry.end_line and (
            best is None or entry.end_line - entry.start_line <= best.end_line - best.start_line
        ):
            best = entry
    return best


@dataclass(slots=True)
class SymbolTree:
    """One ``documentSymbol`` answer and the exact document text it describes."""

    #: The document object the answer was asked for (compared by identity, see :class:`SymbolTrees`).
    document: object
    value: Any
    _entries: list[SymbolEntry] | None = field(default=None, repr=False)

    @property
    def entries(self) -> list[SymbolEntry]:
        """The flattened answer, made once (entries are values: callers never mutate them)."""
        if self._entries is None:
            self._entries = flatten_symbols(self.value)
        return self._entries


class SymbolTrees:
    """``documentSymbol`` answers kept per open document while its text is unchanged (issue 9 overhead).

    A symbol target needs the document's symbol tree, and asking for it on every call added a whole server
    round trip to a cheap read (callers: documentSymbol, then prepareCallHierarchy and incomingCalls). The
    tree describes the document's text alone, so it is kept per (server, URI) *with the document object it
    was asked for*: the server's re-sync makes a new document for every text it sends (a new version, after
    a change on disk or an edit), and a restarted server has new ones, so an entry is used only while the
    server still has exactly the text the tree was computed from (B8.12 unchanged). Empty answers are not
    kept (a server that is still loading may answer ``[]``). Bounded: the least recently used go first.
    """

    def __init__(self, max_documents: int = 64) -> None:
        self._entries: dict[Hashable, SymbolTree] = {}
        self._max = max_documents

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable, document: object) -> SymbolTree | None:
        """The tree of ``document`` under ``key``, or None when none is kept for that very document."""
        tree = self._entries.pop(key, None)
        if tree is None or tree.document is not document:
            return None
        self._entries[key] = tree  # most recently used last
        return tree

    def put(self, key: Hashable, document: object, value: Any) -> SymbolTree:
        """Keep ``value`` (a ``documentSymbol`` answer) for ``document``; returns it as a tree either way."""
        tree = SymbolTree(document, value)
        self._entries.pop(key, None)
        if isinstance(value, list) and value:
            self._entries[key] = tree
            while len(self._entries) > self._max:
                del self._entries[next(iter(self._entries))]
        return tree
