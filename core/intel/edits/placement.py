"""Where code_insert and code_replace put text (B6.26-B6.29): pure, from a resolved target to a TextEdit.

``code_insert`` positions:

* ``before`` / ``after``: whole lines above the target's first line / below its last line (the text gets
  a final line break when it has none, so it never runs into the neighbouring line);
* ``start`` / ``end``: exactly at the start / end of the target's range (a symbol's whole range as the
  server reports it, the ``matchText`` on the line, or the line's text from its first non-blank
  character), the text exactly as given.

``code_replace`` ranges (B6.27, no body-only claims):

* a symbol: its whole range as the server reports it (from its first character, ``def`` / ``export`` /
  a decorator, to its last). When nothing but blanks follows the range on its last line, one final line
  break of the text is dropped (the range does not hold the line break, so keeping it would add a line);
* ``target.line`` .. ``endLine`` (or ``target.line`` alone): those whole lines, line breaks included; the
  text gets a final line break when it has none (an empty text removes the lines). ``matchText`` with
  ``endLine`` must be on ``target.line``: the range is validated against what the model saw;
* ``target.line`` + ``matchText`` without ``endLine``: exactly the matched text.

Each edit is a ``TextDocumentEdit`` bound to the document version it was computed from (B6.28): applying
it after the file changed is a conflict, not a misplaced edit. :func:`check_overlaps` refuses a batch
whose ranges overlap (B6.29), naming both edits.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kandev_lsp.intel.errors import IntelError, TargetOutOfRange
from kandev_lsp.intel.files.text import Document, PositionEncoding
from kandev_lsp.intel.reading.targets import ResolvedTarget
from kandev_lsp.intel.surface.arguments import InsertPosition

__all__ = [
    "OverlappingEdits",
    "Placed",
    "check_overlaps",
    "detect_indentation",
    "document_edit",
    "insert_at",
    "replace_range",
]

Position = dict[str, int]


class OverlappingEdits(IntelError):
    """Two edits of one batch touch the same text: the batch is refused as a whole (B6.29)."""


@dataclass(frozen=True, slots=True)
class Placed:
    """One computed text edit: the LSP ``TextEdit`` and where it lands, as the model counts (1-based)."""

    document: Document
    edit: dict[str, Any]
    line: int
    end_line: int

    @property
    def start(self) -> tuple[int, int]:
        start = self.edit["range"]["start"]
        return start["line"], start["character"]

    @property
    def end(self) -> tuple[int, int]:
        end = self.edit["range"]["end"]
        return end["line"], end["character"]

    def location(self) -> dict[str, Any]:
        """``{path, line, endLine}`` of the text the edit replaces (lines before the edit)."""
        return {"path": self.document.file.display, "line": self.line, "endLine": self.end_line}


def _position(document: Document, line: int, index: int, encoding: PositionEncoding) -> Position:
    return document.lsp_position(line, index, encoding)


def _with_break(text: str) -> str:
    return text if text.endswith(("\n", "\r")) or not text else text + "\n"


def _line_start(document: Document, line: int, encoding: PositionEncoding) -> Position:
    return _position(document, line, 0, encoding)


def _line_end(document: Document, line: int, encoding: PositionEncoding) -> Position:
    return _position(document, line, len(document.line(line)), encoding)


def _after_line(document: Document, line: int, encoding: PositionEncoding) -> tuple[Position, bool]:
    """The position just past line ``line``'s break (the next line's start); on the last line, its end
    and False (no break to go past)."""
    if line + 1 < document.line_count:
        return _line_start(document, line + 1, encoding), True
    return _line_end(document, line, encoding), False


def _edit(start: Position, end: Position, text: str) -> dict[str, Any]:
    return {"range": {"start": dict(start), "end": dict(end)}, "newText": text}


def insert_at(
    resolved: ResolvedTarget, position: InsertPosition, text: str, encoding: PositionEncoding
) -> Placed:
    """The insertion of ``text`` at ``position`` of ``resolved`` (see the module docstring)."""
    document = resolved.document
    start, end = resolved.range["start"], resolved.range["end"]
    if position == "before":
        line = start["line"]
        at = _line_start(document, line, encoding)
        return Placed(document, _edit(at, at, _with_break(text)), line + 1, line + 1)
    if position == "after":
        line = end["line"]
        at, past_break = _after_line(document, line, encoding)
        body = _with_break(text) if past_break else "\n" + text.rstrip("\r\n")
        return Placed(document, _edit(at, at, body), line + 1, line + 1)
    point = start if position == "start" else end
    return Placed(document, _edit(point, point, text), point["line"] + 1, point["line"] + 1)


def replace_range(
    resolved: ResolvedTarget, text: str, end_line: int | None, encoding: PositionEncoding
) -> Placed:
    """The replacement of ``resolved``'s range (or its line range up to ``end_line``) by ``text``.

    :raises TargetOutOfRange: ``end_line`` is past the end of the document.
    """
    document = resolved.document
    if resolved.symbol is not None and end_line is None:
        start, end = resolved.range["start"], resolved.range["end"]
        last = document.line(end["line"])
        tail = last[document.column_index(end["line"], end["character"], encoding) :]
        # A range ending at a line's start already holds the previous line's break: keep the text's.
        ends_line = not tail.strip() and (end["character"] > 0 or end["line"] == start["line"])
        body = text[:-1] if text.endswith("\n") and ends_line else text
        if body.endswith("\r") and ends_line:
            body = body[:-1]
        return Placed(document, _edit(start, end, body), start["line"] + 1, end["line"] + 1)
    if resolved.confidence == "anchor" and end_line is None:
        start, end = resolved.range["start"], resolved.range["end"]
        return Placed(document, _edit(start, end, text), start["line"] + 1, end["line"] + 1)
    first = resolved.line - 1
    last_line = (end_line if end_line is not None else resolved.line) - 1
    if last_line >= document.line_count:
        raise TargetOutOfRange(
            f"endLine {last_line + 1} is past the end of {document.file.display} "
            f"({document.shown_line_count} lines)",
            lineCount=document.shown_line_count,
        )
    stop, past_break = _after_line(document, last_line, encoding)
    body = _with_break(text) if past_break else text
    return Placed(
        document, _edit(_line_start(document, first, encoding), stop, body), first + 1, last_line + 1
    )


def document_edit(document: Document, edits: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A ``TextDocumentEdit`` of ``edits`` bound to ``document``'s version (B6.28)."""
    return {
        "textDocument": {"uri": document.file.uri, "version": document.version},
        "edits": [dict(edit) for edit in edits],
    }


def check_overlaps(placed: Sequence[Placed], labels: Sequence[str]) -> None:
    """Refuse overlapping edits of one batch (B6.29): two ranges sharing text, or two insertions at one
    point (their order would be a guess). Ranges that only touch are fine.

    :raises OverlappingEdits: naming both edits and the lines.
    """
    by_uri: dict[str, list[tuple[int, Placed]]] = {}
    for index, item in enumerate(placed):
        by_uri.setdefault(item.document.file.uri, []).append((index, item))
    for items in by_uri.values():
        ordered = sorted(items, key=lambda pair: (pair[1].start, pair[1].end))
        for (i, a), (j, b) in itertools.pairwise(ordered):
            shares_text = b.start < a.end
            same_point = a.start == a.end == b.start == b.end
            if shares_text or same_point:
                first, second = sorted((i, j))
                raise OverlappingEdits(
                    f"{labels[first]} and {labels[second]} overlap in {a.document.file.display} (lines "
                    f"{placed[first].line}-{placed[first].end_line} and {placed[second].line}-"
                    f"{placed[second].end_line}): nothing was changed. Merge them into one edit, or "
                    "send them in separate calls",
                    edits=[first, second],
                    status="rejected",
                )


def detect_indentation(document: Document, default_size: int = 4) -> dict[str, Any]:
    """``FormattingOptions`` from the file itself: tabs when lines are tab-indented, else the smallest
    indentation step in use (2 or 4 ...), so formatting keeps the file's style."""
    widths: list[int] = []
    tabs = spaces = 0
    for number in range(min(document.line_count, 2000)):
        line = document.line(number)
        stripped = line.lstrip(" \t")
        if not stripped or stripped == line:
            continue
        if line[0] == "\t":
            tabs += 1
        else:
            spaces += 1
            widths.append(len(line) - len(line.lstrip(" ")))
    if tabs > spaces:
        return {"tabSize": default_size, "insertSpaces": False}
    size = min((w for w in widths if w > 0), default=default_size)
    return {"tabSize": size if 1 < size <= 8 else default_size, "insertSpaces": True}
