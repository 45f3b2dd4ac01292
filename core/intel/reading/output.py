"""Locations as the model reads them (B §4, B5.1-B5.5): compact, relative, 1-based, budgeted.

A server answers navigation with ``Location`` or ``LocationLink`` values (one, a list, or null), with
URIs and 0-based positions in its own encoding. :func:`locate` groups them by file (checking every path)
and :func:`build_locations` turns the groups into::

    {"files": [{"path": "src/a.ts", "locations": [{"line": 3, "column": 5, "endColumn": 9,
                                                   "snippet": "export function fetchModels() {"}]}],
     "totalFound": 12, "shown": 12, "truncated": false}

- paths are workspace-relative (root-qualified in a multi-root workspace), through :class:`Workspace`,
  so a URI outside every root is *omitted and counted*, never shown (B8.11, fail closed);
- locations are deduplicated, sorted and grouped by file (the ``CodeLocation`` of B5.1 with its ``path``
  hoisted into its group: a popular symbol's 400 references do not repeat 400 paths);
- ``limit`` (default 100, at most 500) caps the count, and a character budget caps the size (default
  60 000 characters, well under the ~128k an agent client accepts): either sets ``truncated`` and keeps
  ``totalFound``;
- a snippet is the matching line (trimmed), or a window of ``context`` (0-3) lines either side; long lines
  (minified code) are cut around the match;
- ``includeBody`` adds the declaration's text (a ``LocationLink``'s ``targetRange``, or the range a caller
  finds for it), at most 200 lines.
"""

from __future__ import annotations

import json
import json.encoder
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple, TypeGuard

from kandev_lsp.intel.errors import IntelError
from kandev_lsp.intel.files.text import Document, PositionEncoding, TextSource
from kandev_lsp.intel.files.workspace import WorkspaceFile

__all__ = [
    "BODY_MAX_LINES",
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_CHARS",
    "MAX_CONTEXT",
    "MAX_LIMIT",
    "Located",
    "LocationOptions",
    "build_locations",
    "locate",
    "lsp_range",
    "snippet",
]

DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 500
MAX_CONTEXT: Final = 3
BODY_MAX_LINES: Final = 200
#: Characters of one body at most (200 lines of minified code would be megabytes).
BODY_MAX_CHARS: Final = 16_000
#: The default size budget of one result, in characters of its JSON text.
DEFAULT_MAX_CHARS: Final = 60_000
#: A snippet line longer than this is cut to a window around the match.
SNIPPET_LINE_CHARS: Final = 240
_BEFORE_MATCH: Final = 80
#: JSON's string encoder (C-accelerated), as ``json.dumps(..., ensure_ascii=False)`` uses it.
_encode_string: Final = json.encoder.encode_basestring


class RawLocation(NamedTuple):
    """One server location that is not a plain ``Location`` (:func:`_location_of`): its URI, the range to
    point at, and the declaration's range if known."""

    uri: str
    range: dict[str, Any]
    body_range: dict[str, Any] | None = None


#: A location's range as four 0-based numbers (start line and character, end line and character).
_Span = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class LocationOptions:
    """How much of each location to show (the tool's ``limit``, ``context`` and ``includeBody``)."""

    limit: int = DEFAULT_LIMIT
    context: int = 0
    include_body: bool = False
    max_chars: int = DEFAULT_MAX_CHARS

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ValueError(f"limit must be 1-{MAX_LIMIT}, got {self.limit}")
        if not 0 <= self.context <= MAX_CONTEXT:
            raise ValueError(f"context must be 0-{MAX_CONTEXT}, got {self.context}")


def _range_ok(value: Any) -> TypeGuard[dict[str, Any]]:
    # Both positions checked inline: this runs for every location of an answer (hundreds for references).
    if type(value) is not dict:
        return False
    start, end = value.get("start"), value.get("end")
    if type(start) is not dict or type(end) is not dict:
        return False
    line, character = start.get("line"), start.get("character")
    if type(line) is not int or type(character) is not int or line < 0 or character < 0:
        return False
    line, character = end.get("line"), end.get("character")
    return type(line) is int and type(character) is int and line >= 0 and character >= 0


def _location_of(item: Any) -> RawLocation | None:
    """Any item of an answer other than a plain ``Location`` (a ``LocationLink``, or a ``Location`` in
    an unusual shape), or None when it is malformed."""
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("targetUri"), str):
        target_range = item.get("targetRange")
        selection = item.get("targetSelectionRange")
        point = selection if _range_ok(selection) else target_range
        if _range_ok(point):
            return RawLocation(item["targetUri"], point, target_range if _range_ok(target_range) else None)
        return None
    if isinstance(item.get("uri"), str) and _range_ok(item.get("range")):
        return RawLocation(item["uri"], item["range"])
    return None


def _cut(text: str, index: int) -> str:
    if len(text) <= SNIPPET_LINE_CHARS:
        return text
    start = max(0, min(index - _BEFORE_MATCH, len(text) - SNIPPET_LINE_CHARS))
    end = start + SNIPPET_LINE_CHARS
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def snippet(document: Document, line: int, index: int, context: int) -> tuple[str, int]:
    """The snippet for 0-based ``line`` (``index`` = the match's code point, for cutting long lines) and the
    1-based line it starts at: the trimmed line, or a dedented window of ``context`` lines either side."""
    if context == 0:
        return _cut(document.line(line), index).strip(), line + 1
    first = max(0, line - context)
    last = min(document.line_count - 1, line + context)
    lines = [_cut(document.line(n), index if n == line else 0).rstrip() for n in range(first, last + 1)]
    return textwrap.dedent("\n".join(lines)), first + 1


def _body(document: Document, body_range: dict[str, Any]) -> dict[str, Any]:
    first = body_range["start"]["line"]
    last = min(body_range["end"]["line"], document.line_count - 1)
    cut_line = min(last, first + BODY_MAX_LINES - 1)
    lines: list[str] = []
    used = 0
    for number in range(first, cut_line + 1):
        text = document.line(number)
        if used + len(text) + 1 > BODY_MAX_CHARS:
            cut_line = number - 1
            break
        lines.append(text)
        used += len(text) + 1
    out: dict[str, Any] = {"body": "\n".join(lines), "bodyStartLine": first + 1, "bodyEndLine": cut_line + 1}
    if cut_line < last:
        out["bodyTruncated"] = True
        out["bodyLines"] = last - first + 1
    return out


#: Finds a declaration's range for a location that came without one (``Location`` answers): the caller
#: looks up the enclosing document symbol. Returns an LSP range or None.
BodyRangeFinder = Callable[[WorkspaceFile, dict[str, Any]], dict[str, Any] | None]


@dataclass(slots=True)
class Located:
    """A navigation answer's locations inside the workspace, by model-facing path (one per real file,
    whatever URIs named it), each range once, with the declaration's range a ``LocationLink`` gave; and
    the count of those left out (B8.11, fail closed). Paths keep the answer's order."""

    by_path: dict[str, tuple[WorkspaceFile, dict[_Span, dict[str, Any] | None]]]
    omitted: dict[str, int]

    @property
    def files(self) -> list[WorkspaceFile]:
        """The files the answer named inside the workspace, in its order."""
        return [file for file, _ in self.by_path.values()]


def locate(answer: Any, lookup: Callable[[str], WorkspaceFile | IntelError]) -> Located:
    """``Location | Location[] | LocationLink[] | null`` by file (B6.4): each URI is looked up once (an
    answer names a file once per location in it). A ``LocationLink`` points at its
    ``targetSelectionRange`` (the name) and keeps ``targetRange`` (the whole declaration) as the body.
    Malformed entries are dropped.

    One pass, with a ``Location``'s range checked inline: a missing key or a non-dict raises, so does
    ``|`` on anything but integers (a JSON true or false counts as 1 or 0, as in Python: harmless, and
    checked as any line), and a negative number makes the OR negative.
    """
    omitted: dict[str, int] = {}
    by_uri: dict[str, dict[_Span, dict[str, Any] | None] | None] = {}
    by_path: dict[str, tuple[WorkspaceFile, dict[_Span, dict[str, Any] | None]]] = {}
    for item in answer if isinstance(answer, list) else [answer]:
        declaration = None
        uri = item.get("uri") if type(item) is dict and "targetUri" not in item else None
        if type(uri) is str:  # a Location, the common answer
            span: Any = item.get("range")
            try:
                start, end = span["start"], span["end"]
                line, character, end_line, end_character = (
                    start["line"],
                    start["character"],
                    end["line"],
                    end["character"],
                )
                if (line | character | end_line | end_character) < 0:
                    continue
            except (KeyError, TypeError):
                continue
        else:
            location = _location_of(item)
            if location is None:
                continue
            uri, declaration = location.uri, location.body_range
            start, end = location.range["start"], location.range["end"]
            line, character, end_line, end_character = (
                start["line"],
                start["character"],
                end["line"],
                end["character"],
            )
        if uri in by_uri:
            spans = by_uri[uri]
        else:
            file = lookup(uri)
            spans = (
                by_path.setdefault(file.display, (file, {}))[1] if isinstance(file, WorkspaceFile) else None
            )
            by_uri[uri] = spans
        if spans is None:
            reason = "outsideWorkspace" if uri.lower().startswith("file:") else "nonFileUri"
            omitted[reason] = omitted.get(reason, 0) + 1
            continue
        key = (line, character, end_line, end_character)
        if key not in spans:
            spans[key] = declaration
    return Located(by_path, omitted)


def build_locations(
    located: Located,
    texts: TextSource,
    encoding: PositionEncoding,
    options: LocationOptions = LocationOptions(),
    *,
    body_range: BodyRangeFinder | None = None,
) -> dict[str, Any]:
    """The ``files`` / ``totalFound`` / ``shown`` / ``truncated`` part of a navigation result.

    Each file is read once and its entries are built together. A file whose entries all fit the budget
    is taken whole; otherwise they are counted one by one and the budget cuts the list there.
    """
    by_path = located.by_path
    total = sum(len(spans) for _, spans in by_path.values())
    files: list[dict[str, Any]] = []
    used = _ENVELOPE
    shown = 0
    cut_by_size = False
    for path in sorted(by_path):
        if shown >= options.limit:
            break
        file, spans = by_path[path]
        keys = sorted(spans)[: options.limit - shown]
        entries, sizes = _entries(file, keys, spans, texts.document(file), encoding, options, body_range)
        grouping = len(path) + _GROUP
        whole = grouping + sum(sizes)
        if used + whole <= options.max_chars:  # every prefix fits too: take them all
            used += whole
            kept = entries
        else:
            kept, used = _within(entries, sizes, used, grouping, options.max_chars)
            cut_by_size = len(kept) < len(entries)  # or it only dropped bodies: the next file may fit
        if kept:
            files.append({"path": path, "locations": kept})
            shown += len(kept)
        if cut_by_size:
            break
    out: dict[str, Any] = {"files": files, "totalFound": total, "shown": shown, "truncated": shown < total}
    if shown < total:
        out["truncatedBy"] = "size" if cut_by_size else "limit"
        # Every file, shown or not (issue 20 item 10).
        out["totalFiles"] = sum(1 for _, spans in by_path.values() if spans)
    if located.omitted:
        out["omitted"] = located.omitted
    return out


#: The budget's allowance for the result's envelope (ok, kind, target, counts) and for each file group
#: beyond its path.
_ENVELOPE: Final = 120
_GROUP: Final = 40


def _within(
    entries: list[dict[str, Any]], sizes: list[int], used: int, grouping: int, max_chars: int
) -> tuple[list[dict[str, Any]], int]:
    """The entries of one file that fit, counted one by one, and the size used after them. An entry whose
    body does not fit keeps its location without the body; the first that does not fit ends the list."""
    kept: list[dict[str, Any]] = []
    for entry, size in zip(entries, sizes, strict=True):
        size += 0 if kept else grouping
        if used + size > max_chars and "body" in entry:
            entry = {k: v for k, v in entry.items() if k not in _BODY_FIELDS}
            entry["bodyOmitted"] = "result size budget"
            size = _size(entry) + (0 if kept else grouping)
        if used + size > max_chars:
            break
        used += size
        kept.append(entry)
    return kept, used


_BODY_FIELDS: Final = frozenset({"body", "bodyStartLine", "bodyEndLine", "bodyTruncated", "bodyLines"})


def _entries(
    file: WorkspaceFile,
    keys: list[_Span],
    spans: dict[_Span, dict[str, Any] | None],
    document: Document | None,
    encoding: PositionEncoding,
    options: LocationOptions,
    body_range: BodyRangeFinder | None,
) -> tuple[list[dict[str, Any]], list[int]]:
    """The entries of one file's locations (``keys``, in order) and each one's size in the result's
    JSON (:func:`_size`'s measure)."""
    if document is not None and document.all_ascii and options.context == 0 and not options.include_body:
        return _plain_entries(document.lines, keys)
    entries, sizes = [], []
    for key in keys:
        entry, size = _location(file, key, spans[key], document, encoding, options, body_range)
        entries.append(entry)
        sizes.append(size)
    return entries, sizes


def _plain_entries(lines: Sequence[str], keys: list[_Span]) -> tuple[list[dict[str, Any]], list[int]]:
    """:func:`_location`'s entries for an ASCII file without context lines or bodies (nearly every
    answer): columns are the server's characters clamped to the line, the snippet is the trimmed line.
    Computed here in one loop because a popular symbol's answer has hundreds."""
    entries: list[dict[str, Any]] = []
    sizes: list[int] = []
    count = len(lines)
    for line, character, end_line, end_character in keys:
        text = lines[line] if line < count else ""
        width = len(text)
        column = (character if character < width else width) + 1
        if end_line == line:
            end_column = (end_character if end_character < width else width) + 1
        else:
            end_width = len(lines[end_line]) if end_line < count else 0
            end_column = (end_character if end_character < end_width else end_width) + 1
        shown = (text if width <= SNIPPET_LINE_CHARS else _cut(text, column - 1)).strip()
        entry, size = _plain_entry(line + 1, column, end_line + 1, end_column, shown)
        entries.append(entry)
        sizes.append(size)
    return entries, sizes


def _plain_entry(
    line: int, column: int, end_line: int, end_column: int, shown: str
) -> tuple[dict[str, Any], int]:
    """A location's entry (1-based positions, its snippet) and its size in the result's JSON, computed
    without encoding the dict (:func:`_size`'s measure)."""
    if end_line == line:
        entry = {"line": line, "column": column, "endColumn": end_column, "snippet": shown}
        return entry, _FOUR_KEYS + len(f"{line}{column}{end_column}") + len(_encode_string(shown))
    entry = {"line": line, "column": column, "endLine": end_line, "endColumn": end_column, "snippet": shown}
    return entry, _FIVE_KEYS + len(f"{line}{column}{end_line}{end_column}") + len(_encode_string(shown))


def _size(entry: dict[str, Any]) -> int:
    """Characters of ``entry`` in the result's JSON (``json.dumps`` layout), plus its separator.

    Computed without encoding the whole dict: keys and strings through the C string encoder, numbers
    and booleans by their text, which is as long as JSON's (``True``/``true``, ``None``/``null``).
    Runs once per location of a large answer, so keys' sizes are remembered and exact types are tested
    first (``bool`` is an ``int`` subclass, and ``str(True)`` is as long as ``true``: same size either way).
    """
    size = 2 + 2 + 2 * max(len(entry) - 1, 0)  # braces, the ", " before the next entry, ", " between items
    for key, value in entry.items():
        key_size = _KEY_SIZES.get(key)
        if key_size is None:
            key_size = len(_encode_string(key)) + 2  # "key": value
            if len(_KEY_SIZES) < 256:
                _KEY_SIZES[key] = key_size
        size += key_size
        kind = type(value)
        if kind is str:
            size += len(_encode_string(value))
        elif kind is int or kind is bool:
            size += len(str(value))
        elif isinstance(value, str):
            size += len(_encode_string(value))
        elif isinstance(value, bool | int | float) or value is None:
            size += len(str(value))
        else:
            size += len(json.dumps(value, ensure_ascii=False))
    return size


#: ``len('"key": ')`` by key: entries share a handful of keys.
_KEY_SIZES: dict[str, int] = {}


#: ``len('"key": ')`` of the keys of a plain location entry, and the braces plus the ``", "`` before the
#: next entry, plus the ``", "`` between the entry's items (``_location`` sizes entries without encoding).
_PLAIN_KEYS: Final = {key: len(_encode_string(key)) + 2 for key in ("line", "column", "endLine", "endColumn")}
_SNIPPET_KEY: Final = len(_encode_string("snippet")) + 2
#: The fixed part of an entry with line, column, endColumn and snippet (keys, braces, separators), and of
#: one with endLine as well.
_FOUR_KEYS: Final = (
    4 + 2 * 3 + _PLAIN_KEYS["line"] + _PLAIN_KEYS["column"] + _PLAIN_KEYS["endColumn"] + _SNIPPET_KEY
)
_FIVE_KEYS: Final = _FOUR_KEYS + 2 + _PLAIN_KEYS["endLine"]
_START_KEY: Final = len(_encode_string("snippetStartLine")) + 2


def _location(
    file: WorkspaceFile,
    span: _Span,
    declaration: dict[str, Any] | None,
    document: Document | None,
    encoding: PositionEncoding,
    options: LocationOptions,
    body_range: BodyRangeFinder | None,
) -> tuple[dict[str, Any], int]:
    """One location's entry and its size in the result's JSON (:func:`_size`'s measure, computed as the
    entry is built). ``declaration`` is the range a ``LocationLink`` gave for the body, if any."""
    line, character, end_line, end_character = span
    if document is None:  # unreadable (binary, too large, gone): positions as the server gave them
        entry: dict[str, Any] = {"line": line + 1, "column": character + 1}
        return entry, _size(entry)
    text = document.line(line)
    if text.isascii():  # code units are characters (nearly all code): no conversion
        column = (character if character < len(text) else len(text)) + 1
    else:
        column = document.column_index(line, character, encoding) + 1
    end_text = text if end_line == line else document.line(end_line)
    if end_text.isascii():
        end_column = (end_character if end_character < len(end_text) else len(end_text)) + 1
    else:
        end_column = document.column_index(end_line, end_character, encoding) + 1
    line += 1
    end_line += 1
    if options.context == 0:  # the trimmed line (the common case inline)
        shown, first = (text if len(text) <= SNIPPET_LINE_CHARS else _cut(text, column - 1)).strip(), line
    else:
        shown, first = snippet(document, line - 1, column - 1, options.context)
    entry, size = _plain_entry(line, column, end_line, end_column, shown)
    if first != line:
        entry["snippetStartLine"] = first
        size += 2 + _START_KEY + len(str(first))
    if options.include_body:
        # pyright's LocationLink gives the name's line as its targetRange: the enclosing symbol is better.
        one_line = declaration is not None and declaration["start"]["line"] == declaration["end"]["line"]
        if (declaration is None or one_line) and body_range is not None:
            declaration = body_range(file, lsp_range(span)) or declaration
        if declaration is None and end_line > line:
            declaration = lsp_range(span)
        if declaration is not None and _range_ok(declaration):
            entry.update(_body(document, declaration))
            size = _size(entry)
    return entry, size


def lsp_range(span: _Span) -> dict[str, Any]:
    """The LSP ``Range`` of a span."""
    return {"start": {"line": span[0], "character": span[1]}, "end": {"line": span[2], "character": span[3]}}
