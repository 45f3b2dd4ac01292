"""Target resolution (B §3, B4.1-B4.10): from what a model can say to the position a server needs.

A model does not reliably know character offsets, so every position-taking tool accepts a
:class:`Target` and resolves it here, in this order:

1. ``symbol``: matched against the document's flattened symbols by name, by dotted ``Container.member``
   (a suffix of the qualified name at a ``.`` boundary), or by a candidate ``id`` handed out earlier
   (``Parser.parse@42``); ``kind`` and ``line`` narrow the matches. A Go method is named by gopls'
   receiver form (``(*MemStore).Get``, in ``documentSymbol``) or without it (``MemStore.Get``, what its
   ``workspace/symbol`` shows): :func:`plain_name` makes both one name, so either resolves. A leading
   qualifier naming the file's package or module (``store.ErrMissing`` in ``store/store.go``) is dropped
   when the whole name matches nothing. The position is the start of the
   symbol's name (``selectionRange.start``). No match: :class:`SymbolNotFound` with the nearest names.
   Several: :class:`AmbiguousTarget` with candidates, unless the read opted into ``firstMatch``.
2. ``line`` + ``matchText``: the column where the text occurs on that line. A missing anchor fails and shows
   the line as it is now (and where else the text occurs), instead of silently moving the target. An
   occurrence standing as a whole word is preferred to one inside a longer name; several left (and no
   ``column`` to choose the nearest) are ambiguous, with a candidate per occurrence, unless the read
   opted into ``firstMatch``.
3. ``line`` + ``column``: used as given (1-based, counted in characters).
4. ``line`` alone: the line's first non-blank character.

Resolution is pure: the caller hands in the document (text and version) and, for a symbol target, the
server's ``documentSymbol`` answer; out comes a :class:`ResolvedTarget` with the LSP position in the
server's encoding and the model-facing 1-based line and column.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from kandev_lsp.intel.errors import (
    AmbiguousTarget,
    AnchorNotFound,
    InvalidArguments,
    SymbolNotFound,
    TargetOutOfRange,
)
from kandev_lsp.intel.files.text import Document, PositionEncoding
from kandev_lsp.intel.reading.symbols import SYMBOL_KINDS, SymbolEntry, enclosing_symbol, kind_number

__all__ = [
    "Confidence",
    "ResolvedTarget",
    "Target",
    "match_symbols",
    "plain_name",
    "resolve_target",
    "symbol_candidate",
    "symbol_id",
]

#: How sure the resolution is: a unique symbol, the first of several, a text anchor, a column, a line.
Confidence = Literal["symbol", "firstMatch", "anchor", "position", "line", "inherited"]

#: Candidates listed in an ambiguity or not-found answer (enough to choose, small enough to read).
MAX_CANDIDATES: Final = 20
MAX_NEAREST: Final = 8
#: Lines of the symbol's range searched for its name when the server gave no exact name position.
_NAME_SEARCH_LINES: Final = 3
#: A Go method's receiver as gopls names it: ``(*MemStore).`` / ``(MemStore).`` / ``(*Stack[T]).``.
_RECEIVER: Final = re.compile(r"\(\*?\s*([A-Za-z_]\w*)(?:\[[^\]]*\])?\)\.")


@dataclass(frozen=True, slots=True)
class Target:
    """What the model points at (B4.1). Lines and columns are 1-based; columns count characters."""

    path: str
    root_id: str | None = None
    symbol: str | None = None
    kind: str | None = None
    line: int | None = None
    column: int | None = None
    match_text: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, tool: str = "target") -> Target:
        """A target from a schema-checked payload, enforcing the rules between its fields.

        :raises InvalidArguments: the fields do not make one target (what to change is in the message).
        """
        problems: list[str] = []
        symbol, line = data.get("symbol"), data.get("line")
        column, match_text, kind = data.get("column"), data.get("matchText"), data.get("kind")
        if symbol is None and line is None:
            problems.append(
                "target needs `symbol` (a name such as 'Parser.parse') or `line` (1-based, with "
                "`matchText` or `column` to point inside it)"
            )
        if symbol is not None and (column is not None or match_text is not None):
            problems.append(
                "target.column and target.matchText go with target.line, not with target.symbol: give "
                "symbol (plus line to choose between same-named symbols) or line with column/matchText"
            )
        if symbol is None and (column is not None or match_text is not None) and line is None:
            problems.append("target.column and target.matchText need target.line")
        if kind is not None and symbol is None:
            problems.append("target.kind narrows a symbol match: give target.symbol too, or drop kind")
        if kind is not None and kind_number(str(kind)) is None:
            problems.append(f"target.kind {kind!r} is not a symbol kind; one of: {', '.join(SYMBOL_KINDS)}")
        if problems:
            raise InvalidArguments(tool, problems)
        return cls(
            path=str(data["path"]),
            root_id=data.get("rootId"),
            symbol=symbol,
            kind=kind,
            line=int(line) if line is not None else None,
            column=int(column) if column is not None else None,
            match_text=match_text,
        )

    def to_json(self) -> dict[str, Any]:
        """The payload form (what a tool call sends), without unset fields."""
        fields = {
            "path": self.path,
            "rootId": self.root_id,
            "symbol": self.symbol,
            "kind": self.kind,
            "line": self.line,
            "column": self.column,
            "matchText": self.match_text,
        }
        return {key: value for key, value in fields.items() if value is not None}


@dataclass(frozen=True, slots=True)
class ResolvedTarget:
    """Where a target points (B4.10): the document, its version, the LSP position and the model's view."""

    document: Document
    #: LSP position, in the server's encoding, 0-based.
    position: dict[str, int]
    #: LSP range of what was pointed at: the symbol's whole range, the anchor text, or an empty range.
    range: dict[str, dict[str, int]]
    line: int
    column: int
    end_line: int
    end_column: int
    confidence: Confidence
    symbol: SymbolEntry | None = None

    @property
    def uri(self) -> str:
        return self.document.file.uri

    @property
    def version(self) -> int | None:
        return self.document.version

    def to_json(self) -> dict[str, Any]:
        """The resolved target as results show it (``target`` of B6.4)."""
        file = self.document.file
        out: dict[str, Any] = {"path": file.display, "line": self.line, "column": self.column}
        if self.symbol is not None:
            out["symbol"] = self.symbol.qualified_name
            out["kind"] = self.symbol.kind_label
            out["id"] = symbol_id(self.symbol)
        out["confidence"] = self.confidence
        if self.version is not None:
            out["version"] = self.version
        return out


def symbol_id(entry: SymbolEntry) -> str:
    """A symbol's id within its document: ``<qualifiedName>@<1-based line of its name>``."""
    return f"{entry.qualified_name}@{entry.selection_line + 1}"


def symbol_candidate(entry: SymbolEntry, document: Document) -> dict[str, Any]:
    """The candidate shape of B4.5: ``{id, qualifiedName, kind, path, rootId, line, endLine, container}``."""
    return {
        "id": symbol_id(entry),
        "qualifiedName": entry.qualified_name,
        "kind": entry.kind_label,
        "path": document.file.display,
        "rootId": document.file.root.id,
        "line": entry.selection_line + 1,
        "endLine": entry.end_line + 1,
        "container": entry.container,
    }


def plain_name(name: str) -> str:
    """``name`` with Go receivers written plainly: ``(*MemStore).Get`` and ``(MemStore).Get`` ->
    ``MemStore.Get``; any other name as it is. gopls names a method with its receiver in
    ``documentSymbol`` and without it in ``workspace/symbol``, so a target must accept both (B4.3)."""
    return _RECEIVER.sub(r"\1.", name) if ")." in name else name  # every receiver ends ")."


def match_symbols(entries: Sequence[SymbolEntry], query: str, kind: str | None = None) -> list[SymbolEntry]:
    """The entries ``query`` names: an id (``A.b@12``), a name, a qualified name, or a dotted suffix of one;
    narrowed to ``kind`` when given. Go receivers match with or without their ``(*...)`` form
    (:func:`plain_name`). Document order is kept."""
    name, at, line_text = query.rpartition("@")
    if at and name and line_text.isdigit():
        plain_id = plain_name(name)
        by_id = [
            e
            for e in entries
            if e.selection_line + 1 == int(line_text)
            and (e.qualified_name == name or plain_name(e.qualified_name) == plain_id)
        ]
        if by_id:
            return _of_kind(by_id, kind)
    plain = plain_name(query)
    suffix, plain_suffix = "." + query, "." + plain
    matches = []
    for e in entries:
        qualified = e.qualified_name
        # ``in`` first: most entries do not hold the query at all, and it costs no method call.
        if e.name == query or (query in qualified and (qualified == query or qualified.endswith(suffix))):
            matches.append(e)
        elif ")." in qualified or ")." in e.name or plain is not query:  # a Go receiver on either side
            qualified = plain_name(qualified)
            if qualified == plain or qualified.endswith(plain_suffix) or plain_name(e.name) == plain:
                matches.append(e)
    return _of_kind(matches, kind)


def _unqualified(
    entries: Sequence[SymbolEntry], query: str, kind: str | None, document: Document
) -> list[SymbolEntry]:
    """The matches of ``query`` without leading qualifiers that name the document's module or package
    (a folder or the file's name): ``store.ErrMissing`` in ``store/store.go`` is gopls' ``workspace/symbol``
    name for ``ErrMissing``. Only those qualifiers go: a misspelt class (``Parsr.parse``) stays not found
    rather than quietly becoming any ``parse``."""
    path = document.file.display.replace("\\", "/")
    folders, _, filename = path.rpartition("/")
    modules = {part for part in folders.split("/") if part} | {filename.partition(".")[0]}
    head, dot, rest = query.partition(".")
    while dot and rest and head in modules:
        matches = match_symbols(entries, rest, kind)
        if matches:
            return matches
        head, dot, rest = rest.partition(".")
    return []


def _of_kind(entries: list[SymbolEntry], kind: str | None) -> list[SymbolEntry]:
    if kind is None:
        return entries
    number = kind_number(kind)
    return [e for e in entries if e.kind == number]


def resolve_target(
    target: Target,
    document: Document,
    symbols: Sequence[SymbolEntry] | None,
    encoding: PositionEncoding,
    *,
    first_match: bool = False,
) -> ResolvedTarget:
    """Resolve ``target`` in ``document`` (whose file the caller resolved from ``target.path``).

    :param symbols: the flattened ``documentSymbol`` answer; needed only when ``target.symbol`` is set.
    :param first_match: take the first of several matching symbols, or of several occurrences of
        ``matchText`` on the line, instead of failing as ambiguous (reads only; a mutation never passes
        it, B4.6).
    :raises SymbolNotFound | AmbiguousTarget | AnchorNotFound | TargetOutOfRange: with what to do next.
    """
    if target.symbol is not None:
        return _resolve_symbol(target, target.symbol, document, symbols or (), encoding, first_match)
    assert target.line is not None  # Target.from_json guarantees symbol or line
    line = _checked_line(target.line, document)
    text = document.line(line)
    if target.match_text is not None:
        index, first_of_several = _anchor_index(target, text, line, document, first_match)
        confidence: Confidence = "firstMatch" if first_of_several else "anchor"
        end_index = index + len(target.match_text)
    elif target.column is not None:
        if target.column - 1 > len(text):
            raise TargetOutOfRange(
                f"column {target.column} is past the end of line {target.line} of {document.file.display} "
                f"({len(text)} characters): {_shown(text)}",
                line=target.line,
                currentLine=_shown(text),
            )
        index, end_index, confidence = target.column - 1, target.column - 1, "position"
    else:
        index = len(text) - len(text.lstrip())
        index = 0 if index == len(text) else index
        end_index, confidence = len(text), "line"
    return _resolved(document, line, index, line, end_index, encoding, confidence, None)


def _checked_line(line: int, document: Document) -> int:
    if line > document.line_count:
        raise TargetOutOfRange(
            f"line {line} is past the end of {document.file.display} ({document.shown_line_count} lines)",
            lineCount=document.shown_line_count,
        )
    return line - 1


def _shown(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _anchor_index(
    target: Target, text: str, line: int, document: Document, first_match: bool
) -> tuple[int, bool]:
    """The code-point index of ``matchText`` on the 0-based ``line``, and whether it was the first of
    several (``firstMatch``).

    ``matchText`` is a substring (B4.7's indexOf), but an occurrence that stands as a whole word wins over
    one inside a longer name: ``greet`` on ``greeting = greet()`` is the call, not the start of
    ``greeting``. Only the anchor's ends that are name characters need a boundary, so ``greet(`` or
    ``= 3`` anchor as before. With ``column``, the occurrence nearest it is taken. Several occurrences and
    no column are ambiguous like several symbols (B §3, B4.5): :class:`AmbiguousTarget` with one candidate
    per occurrence (its column), unless a read passed ``firstMatch``, which takes the first.
    """
    anchor = target.match_text
    assert anchor is not None
    occurrences = _occurrences(text, anchor)
    if not occurrences:
        raise _anchor_missing(anchor, text, line, document)
    if target.column is not None:
        wanted = target.column - 1
        return min(occurrences, key=lambda index: (abs(index - wanted), index)), False
    whole = [index for index in occurrences if _stands_alone(text, anchor, index)]
    preferred = whole or occurrences
    if len(preferred) == 1 or first_match:
        return preferred[0], len(preferred) > 1
    raise _ambiguous_anchor(anchor, text, line, document, preferred, len(occurrences) - len(preferred))


def _occurrences(text: str, anchor: str) -> list[int]:
    """Every index where ``anchor`` starts on ``text`` (overlapping ones included: ``aa`` in ``aaa``)."""
    found = []
    start = text.find(anchor)
    while start >= 0:
        found.append(start)
        start = text.find(anchor, start + 1)
    return found


def _name_char(char: str) -> bool:
    """A character of a name in the supported languages (``$`` for TS/JS)."""
    return char.isalnum() or char in "_$"


def _stands_alone(text: str, anchor: str, index: int) -> bool:
    """Whether ``anchor`` at ``index`` is not part of a longer name: no name character touches an end of
    it that is itself a name character."""
    end = index + len(anchor)
    if _name_char(anchor[0]) and index > 0 and _name_char(text[index - 1]):
        return False
    return not (_name_char(anchor[-1]) and end < len(text) and _name_char(text[end]))


#: Characters of the line shown on each side of an occurrence in an ambiguity candidate.
_CONTEXT_CHARS: Final = 24


def _ambiguous_anchor(
    anchor: str, text: str, line: int, document: Document, indices: Sequence[int], inside: int
) -> AmbiguousTarget:
    """Several occurrences of ``anchor`` on the line: a candidate per occurrence, each with the
    ``column`` a next call adds (B4.5's shape for positions: path, rootId, line, column, endColumn, and
    ``context``, the occurrence in its surroundings with the match in brackets)."""
    shown = indices[:MAX_CANDIDATES]
    columns = ", ".join(str(index + 1) for index in shown)
    within = f" (and {inside} inside longer names, not counted)" if inside else ""
    more = f" (first {len(shown)} listed)" if len(indices) > len(shown) else ""
    return AmbiguousTarget(
        f"matchText {anchor!r} occurs {len(indices)} times on line {line + 1} of {document.file.display}"
        f"{within}{more}, at columns {columns}: call again with the same matchText and target.column set "
        "to one candidate's column, or a longer matchText, or pass firstMatch: true to take the first "
        "(reads only)",
        [_occurrence(anchor, text, line, document, index) for index in shown],
    )


def _occurrence(anchor: str, text: str, line: int, document: Document, index: int) -> dict[str, Any]:
    end = index + len(anchor)
    left, right = max(0, index - _CONTEXT_CHARS), min(len(text), end + _CONTEXT_CHARS)
    context = (
        ("…" if left else "")
        + text[left:index]
        + "["
        + anchor
        + "]"
        + text[end:right]
        + ("…" if right < len(text) else "")
    )
    return {
        "path": document.file.display,
        "rootId": document.file.root.id,
        "line": line + 1,
        "column": index + 1,
        "endColumn": end + 1,
        "context": context,
    }


def _anchor_missing(anchor: str, text: str, line: int, document: Document) -> AnchorNotFound:
    elsewhere = [n + 1 for n in range(document.line_count) if anchor in document.line(n)][:5]
    hint = (
        f"; it occurs on line{'s' if len(elsewhere) > 1 else ''} {', '.join(map(str, elsewhere))}"
        if elsewhere
        else "; it does not occur in the file"
    )
    error = AnchorNotFound(
        f"matchText {anchor!r} is not on line {line + 1} of {document.file.display}{hint}. "
        f"The line now reads: {_shown(text)!r}",
        line + 1,
        _shown(text),
    )
    error.fields["foundOnLines"] = elsewhere
    return error


def _resolve_symbol(
    target: Target,
    query: str,
    document: Document,
    symbols: Sequence[SymbolEntry],
    encoding: PositionEncoding,
    first_match: bool,
) -> ResolvedTarget:
    matches = match_symbols(symbols, query, target.kind) or _unqualified(
        symbols, query, target.kind, document
    )
    if len(matches) > 1 and target.line is not None:
        on_line = [e for e in matches if e.selection_line + 1 == target.line]
        if not on_line:
            holder = enclosing_symbol(matches, target.line - 1)
            on_line = [holder] if holder is not None else []
        matches = on_line or matches
    if not matches:
        raise _not_found(target, query, document, symbols)
    if len(matches) > 1 and not first_match:
        shown = matches[:MAX_CANDIDATES]
        more = f" (first {len(shown)} listed)" if len(matches) > len(shown) else ""
        raise AmbiguousTarget(
            f"{len(matches)} symbols match {query!r} in {document.file.display}{more}: call again with "
            "target.symbol set to one candidate's id, or add target.kind or target.line, or pass "
            "firstMatch: true to take the first (reads only)",
            [symbol_candidate(entry, document) for entry in shown],
        )
    entry = matches[0]
    confidence: Confidence = "symbol" if len(matches) == 1 else "firstMatch"
    line, index = _name_start(entry, document, encoding)
    end = entry.range["end"]
    end_line = min(end["line"], max(document.line_count - 1, 0))
    end_index = document.column_index(end_line, end["character"], encoding)
    resolved = _resolved(document, line, index, end_line, end_index, encoding, confidence, entry)
    # The symbol's whole declaration, as the server gave it (what includeBody and code_replace use).
    return dataclasses.replace(resolved, range=dict(entry.range))


def _name_start(entry: SymbolEntry, document: Document, encoding: PositionEncoding) -> tuple[int, int]:
    """The 0-based line and code-point index of the symbol's name.

    ``selectionRange.start`` is the name for a ``DocumentSymbol``; a ``SymbolInformation`` (and some
    servers' document symbols) start at the declaration (``def``, ``export``), where a hover or a
    definition request finds nothing. The name is looked for from there, a few lines at most; on the
    first line also before it: tsserver's selection of an assigned arrow function
    (``inst._zod.parse = (payload) => ...``) starts at its ``(``, after the name, and a candidate id
    resolved there found no references (issue 20 item 6).
    """
    start = entry.selection_range["start"]
    line = start["line"]
    index = document.column_index(line, start["character"], encoding)
    text = document.line(line)
    if text.startswith(entry.name, index):
        return line, index
    found = _word_index(text, entry.name, index)
    if found < 0:
        found = _word_rindex(text, entry.name, index)
    if found >= 0:
        return line, found
    last = min(entry.end_line, line + _NAME_SEARCH_LINES - 1, document.line_count - 1)
    for number in range(line + 1, last + 1):
        found = _word_index(document.line(number), entry.name, 0)
        if found >= 0:
            return number, found
    return line, index


def _whole_word(text: str, word: str, position: int) -> bool:
    before = text[position - 1] if position else " "
    after_index = position + len(word)
    after = text[after_index] if after_index < len(text) else " "
    return not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_")


def _word_index(text: str, word: str, start: int) -> int:
    """The first whole-word occurrence of ``word`` in ``text`` from ``start``, or -1."""
    position = text.find(word, start)
    while position >= 0:
        if _whole_word(text, word, position):
            return position
        position = text.find(word, position + 1)
    return -1


def _word_rindex(text: str, word: str, end: int) -> int:
    """The last whole-word occurrence of ``word`` in ``text`` starting before ``end``, or -1."""
    position = text.rfind(word, 0, end + len(word) - 1) if end > 0 else -1
    while position >= 0:
        if _whole_word(text, word, position):
            return position
        position = text.rfind(word, 0, position + len(word) - 1) if position > 0 else -1
    return -1


def _not_found(
    target: Target, query: str, document: Document, symbols: Sequence[SymbolEntry]
) -> SymbolNotFound:
    where = document.file.display
    if target.kind is not None:
        other_kinds = sorted({e.kind_label for e in match_symbols(symbols, query)})
        if other_kinds:
            return SymbolNotFound(
                f"symbol {query!r} in {where} is not a {target.kind} (it is: {', '.join(other_kinds)}); "
                "drop target.kind or use one of those",
                [e.qualified_name for e in match_symbols(symbols, query)][:MAX_NEAREST],
            )
    if not symbols:
        return SymbolNotFound(
            f"symbol {query!r} not found: the server reported no symbols in {where}; "
            "point at it with target.line and target.matchText instead",
            [],
        )
    pool = list(dict.fromkeys([e.qualified_name for e in symbols] + [e.name for e in symbols]))
    nearest = difflib.get_close_matches(query, pool, n=MAX_NEAREST, cutoff=0.5)
    tail = query.rpartition(".")[2]
    if tail != query:
        nearest += [
            n for n in difflib.get_close_matches(tail, pool, n=MAX_NEAREST, cutoff=0.6) if n not in nearest
        ]
    lowered = query.lower()
    nearest += [n for n in pool if lowered in n.lower() and n not in nearest]
    nearest = nearest[:MAX_NEAREST]
    hint = f"; nearest: {', '.join(nearest)}" if nearest else ""
    return SymbolNotFound(
        f"symbol {query!r} not found in {where}{hint}. code_symbols with this path lists its symbols",
        nearest,
    )


def _resolved(
    document: Document,
    line: int,
    index: int,
    end_line: int,
    end_index: int,
    encoding: PositionEncoding,
    confidence: Confidence,
    entry: SymbolEntry | None,
) -> ResolvedTarget:
    position = document.lsp_position(line, index, encoding)
    end = document.lsp_position(end_line, end_index, encoding)
    return ResolvedTarget(
        document=document,
        position=position,
        range={"start": dict(position), "end": end},
        line=line + 1,
        column=index + 1,
        end_line=end_line + 1,
        end_column=end_index + 1,
        confidence=confidence,
        symbol=entry,
    )


#: Class-like symbol kinds (LSP SymbolKind Class, Interface, Struct) whose bases may hold a member.
_CLASS_KINDS: Final = frozenset({5, 11, 23})
#: Words of a class header that never name a base.
_HEADER_WORDS: Final = frozenset(
    {"class", "interface", "struct", "extends", "implements", "export", "default", "abstract", "declare",
     "metaclass", "object", "public", "private", "protected", "final", "open", "data", "sealed"}
)  # fmt: skip
_IDENTIFIER: Final = re.compile(r"[A-Za-z_$][\w$]*")
#: Lines of a class header read at most for its bases.
_HEADER_LINES: Final = 5


def member_of_class(query: str, symbols: Sequence[SymbolEntry]) -> tuple[SymbolEntry, str] | None:
    """``(the class, the member's name)`` when ``query`` is ``Class.member`` and the document has that
    class but no such member: the member may be inherited (issue 20 item 8: ``Group.invoke`` is
    ``MultiCommand.invoke``)."""
    owner, dot, member = query.rpartition(".")
    if not dot or not owner or not member or "@" in query:
        return None
    classes = [e for e in match_symbols(symbols, owner) if e.kind in _CLASS_KINDS]
    return (classes[0], member) if len(classes) == 1 else None


def base_anchors(entry: SymbolEntry, document: Document, encoding: PositionEncoding) -> list[tuple[int, int]]:
    """0-based ``(line, code-point index)`` of each name in a class's header after its own name, up to
    its body (``:`` or ``{``): the bases a definition request can follow (``class Group(MultiCommand):``,
    ``class A extends B implements C {``). Keywords and the class's own name are left out."""
    line, index = _name_start(entry, document, encoding)
    anchors: list[tuple[int, int]] = []
    start = index + len(entry.name)
    for number in range(line, min(line + _HEADER_LINES, document.line_count)):
        text = document.line(number)
        segment = text[start if number == line else 0 :]
        offset = start if number == line else 0
        end = len(segment)
        for stop in (":", "{"):
            found = segment.find(stop)
            if found >= 0:
                end = min(end, found)
        for match in _IDENTIFIER.finditer(segment[:end]):
            word = match.group(0)
            following = segment[match.end() : match.end() + 1]
            if word in _HEADER_WORDS or word == entry.name or following == "=":
                continue  # metaclass=Meta: a keyword argument, not a base
            anchors.append((number, offset + match.start()))
        if end < len(segment):
            break
    return anchors
