"""Locations as the model reads them (B §4, B5.1-B5.5): compact, relative, 1-based, budgeted.

A server answers navigation with ``Location`` or ``LocationLink`` values (one, a list, or null), with
URIs and 0-based positions in its own encoding. :func:`build_locations` turns them into::

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
from kandev_lsp.intel.text import Document, PositionEncoding, TextSource
from kandev_lsp.intel.workspace import Workspace, WorkspaceFile

__all__ = [
    "BODY_MAX_LINES",
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_CHARS",
    "MAX_CONTEXT",
    "MAX_LIMIT",
    "LocationOptions",
    "RawLocation",
    "build_locations",
    "normalize_locations",
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
    """One server location: its URI, the range to point at, and the declaration's range if known.

    A tuple: one is made per location of a large answer, and :func:`normalize_locations` makes them
    without a Python-level constructor call.
    """

    uri: str
    range: dict[str, Any]
    body_range: dict[str, Any] | None = None


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


def normalize_locations(result: Any) -> list[RawLocation]:
    """``Location | Location[] | LocationLink[] | null`` as :class:`RawLocation` values (B6.4).

    A ``LocationLink`` points at its ``targetSelectionRange`` (the name) and keeps ``targetRange`` (the
    whole declaration) as the body. Malformed entries are dropped.
    """
    items = result if isinstance(result, list) else [result]
    found: list[RawLocation] = []
    append, new = found.append, tuple.__new__
    for item in items:
        if type(item) is dict and "targetUri" not in item:  # a Location, the common answer: checked inline
            uri = item.get("uri")
            if type(uri) is str:
                span: Any = item.get("range")
                try:  # a missing key or a non-dict raises; so does ``|`` on anything but integers (a JSON
                    # true or false counts as 1 or 0, as in Python: harmless, and checked as any line)
                    start, end = span["start"], span["end"]
                    well_formed = (start["line"] | start["character"] | end["line"] | end["character"]) >= 0
                except (KeyError, TypeError):
                    well_formed = False
                if well_formed:
                    append(new(RawLocation, (uri, span, None)))
                continue
        location = _location_of(item)
        if location is not None:
            append(location)
    return found


def _location_of(item: Any) -> RawLocation | None:
    """Any item of an answer (a ``LocationLink``, or a ``Location`` in an unusual shape), or None."""
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


def build_locations(
    raw: Sequence[RawLocation],
    workspace: Workspace,
    texts: TextSource,
    encoding: PositionEncoding,
    options: LocationOptions = LocationOptions(),
    *,
    body_range: BodyRangeFinder | None = None,
    lookup: Callable[[str], WorkspaceFile | IntelError] | None = None,
) -> dict[str, Any]:
    """The ``files`` / ``totalFound`` / ``shown`` / ``truncated`` part of a navigation result.

    :param lookup: the operation's :meth:`Workspace.uri_lookup` when the caller already made one.
    """
    omitted: dict[str, int] = {}
    # Keyed by the model-facing path (one per real file), so the tuples sort into the output's order.
    unique: dict[tuple[str, int, int, int, int], tuple[WorkspaceFile, RawLocation]] = {}
    lookup = lookup or workspace.uri_lookup()
    looked_up: dict[str, WorkspaceFile | None] = {}  # an answer names a file once per location in it
    for location in raw:
        uri, span, _ = location
        if uri in looked_up:
            file = looked_up[uri]
        else:
            found = lookup(uri)
            file = looked_up[uri] = found if isinstance(found, WorkspaceFile) else None
        if file is None:
            reason = "outsideWorkspace" if uri.lower().startswith("file:") else "nonFileUri"
            omitted[reason] = omitted.get(reason, 0) + 1
            continue
        start, end = span["start"], span["end"]
        key = (file.display, start["line"], start["character"], end["line"], end["character"])
        if key not in unique:
            unique[key] = (file, location)
    total = len(unique)
    files: list[dict[str, Any]] = []
    group: list[dict[str, Any]] = []
    group_path: str | None = None
    used = 120  # the envelope: ok, kind, target, counts
    shown = 0
    truncated_by: str | None = None
    limit, max_chars = options.limit, options.max_chars
    text_of: WorkspaceFile | None = None
    document: Document | None = None
    for key in sorted(unique):
        if shown >= limit:
            truncated_by = "limit"
            break
        file, location = unique[key]
        if file is not text_of:  # sorted by path: a file's locations are adjacent
            text_of, document = file, texts.document(file)
        entry, size = _location(file, location, document, encoding, options, body_range)
        if key[0] != group_path:
            size += len(key[0]) + 40  # the group: its path and keys
        if used + size > max_chars and "body" in entry:
            for field in ("body", "bodyStartLine", "bodyEndLine", "bodyTruncated", "bodyLines"):
                entry.pop(field, None)
            entry["bodyOmitted"] = "result size budget"
            size = _size(entry) + (0 if key[0] == group_path else len(key[0]) + 40)
        if used + size > max_chars:
            truncated_by = "size"
            break
        used += size
        shown += 1
        if key[0] != group_path:
            group_path, group = key[0], []
            files.append({"path": group_path, "locations": group})
        group.append(entry)
    out: dict[str, Any] = {"files": files, "totalFound": total, "shown": shown, "truncated": shown < total}
    if truncated_by is not None:
        out["truncatedBy"] = truncated_by
    if omitted:
        out["omitted"] = omitted
    return out


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
    location: RawLocation,
    document: Document | None,
    encoding: PositionEncoding,
    options: LocationOptions,
    body_range: BodyRangeFinder | None,
) -> tuple[dict[str, Any], int]:
    """One location's entry and its size in the result's JSON (:func:`_size`'s measure, computed as the
    entry is built: this runs for every location of an answer)."""
    start, end = location.range["start"], location.range["end"]
    if document is None:  # unreadable (binary, too large, gone): positions as the server gave them
        entry: dict[str, Any] = {"line": start["line"] + 1, "column": start["character"] + 1}
        return entry, _size(entry)
    line, character = start["line"], start["character"]
    text = document.line(line)
    if text.isascii():  # code units are characters (nearly all code): no conversion
        column = (character if character < len(text) else len(text)) + 1
    else:
        column = document.column_index(line, character, encoding) + 1
    end_line, character = end["line"], end["character"]
    end_text = text if end_line == line else document.line(end_line)
    if end_text.isascii():
        end_column = (character if character < len(end_text) else len(end_text)) + 1
    else:
        end_column = document.column_index(end_line, character, encoding) + 1
    line += 1
    end_line += 1
    if options.context == 0:  # the trimmed line (the common case inline)
        shown, first = (text if len(text) <= SNIPPET_LINE_CHARS else _cut(text, column - 1)).strip(), line
    else:
        shown, first = snippet(document, line - 1, column - 1, options.context)
    if end_line == line:
        entry = {"line": line, "column": column, "endColumn": end_column, "snippet": shown}
        size = _FOUR_KEYS + len(f"{line}{column}{end_column}") + len(_encode_string(shown))
    else:
        entry = {
            "line": line,
            "column": column,
            "endLine": end_line,
            "endColumn": end_column,
            "snippet": shown,
        }
        size = _FIVE_KEYS + len(f"{line}{column}{end_line}{end_column}") + len(_encode_string(shown))
    if first != line:
        entry["snippetStartLine"] = first
        size += 2 + _START_KEY + len(str(first))
    if options.include_body:
        declaration = location.body_range
        # pyright's LocationLink gives the name's line as its targetRange: the enclosing symbol is better.
        one_line = declaration is not None and declaration["start"]["line"] == declaration["end"]["line"]
        if (declaration is None or one_line) and body_range is not None:
            declaration = body_range(file, location.range) or declaration
        if declaration is None and end["line"] > start["line"]:
            declaration = location.range
        if declaration is not None and _range_ok(declaration):
            entry.update(_body(document, declaration))
            size = _size(entry)
    return entry, size
