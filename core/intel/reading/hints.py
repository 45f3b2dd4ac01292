"""``code_inlay_hints`` results (B6.30, B6.31): the request range and the hints as the model reads them.

``textDocument/inlayHint`` always takes a range; when the model gives none, :func:`request_range`
synthesizes one covering the whole document (B6.30). Each hint becomes
``{line, column, label, kind?, tooltip?, paddingLeft?, paddingRight?, textEdits?}``: the label joined from
its parts, the kind as a word (``type`` / ``parameter``), the tooltip as plain text, padding and the
edits that would insert the hint kept (B6.31), positions 1-based in characters.
"""

from __future__ import annotations

from typing import Any, Final

from kandev_lsp.intel.files.text import Document, PositionEncoding
from kandev_lsp.intel.reading.hover import flatten_hover
from kandev_lsp.intel.reading.output import DEFAULT_LIMIT

__all__ = ["inlay_hints", "request_range"]

_KINDS: Final = {1: "type", 2: "parameter"}
#: A label or tooltip is cut beyond this many characters (a hint is a type, not a document).
MAX_LABEL: Final = 200


def request_range(
    document: Document, encoding: PositionEncoding, lines: tuple[int, int] | None = None
) -> dict[str, dict[str, int]]:
    """The LSP range of 1-based inclusive ``lines`` (clamped to the document), or of the whole document."""
    last = max(document.line_count - 1, 0)
    first_line, last_line = (0, last) if lines is None else (min(lines[0] - 1, last), min(lines[1] - 1, last))
    return {
        "start": {"line": first_line, "character": 0},
        "end": document.lsp_position(last_line, len(document.line(last_line)), encoding),
    }


def _cut(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def _label(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [part.get("value") for part in value if isinstance(part, dict)]
        if all(isinstance(part, str) for part in parts) and parts:
            return "".join(parts)  # type: ignore[arg-type]
    return None


def _position_ok(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(value.get(key), int) and not isinstance(value.get(key), bool) and value[key] >= 0
        for key in ("line", "character")
    )


def _edits(value: Any, document: Document, encoding: PositionEncoding) -> list[dict[str, Any]]:
    edits: list[dict[str, Any]] = []
    for edit in value if isinstance(value, list) else []:
        if not isinstance(edit, dict) or not isinstance(edit.get("newText"), str):
            continue
        span = edit.get("range")
        if (
            not isinstance(span, dict)
            or not _position_ok(span.get("start"))
            or not _position_ok(span.get("end"))
        ):
            continue
        line, column = document.model_position(span["start"], encoding)
        end_line, end_column = document.model_position(span["end"], encoding)
        edits.append(
            {
                "line": line,
                "column": column,
                "endLine": end_line,
                "endColumn": end_column,
                "newText": edit["newText"],
            }
        )
    return edits


def inlay_hints(
    result: Any, document: Document, encoding: PositionEncoding, *, limit: int = DEFAULT_LIMIT
) -> dict[str, Any]:
    """``{hints, totalFound, shown, truncated}`` for an ``inlayHint`` answer, in document order."""
    hints: list[tuple[tuple[int, int], dict[str, Any]]] = []
    for item in result if isinstance(result, list) else []:
        if not isinstance(item, dict) or not _position_ok(item.get("position")):
            continue
        label = _label(item.get("label"))
        if label is None:
            continue
        line, column = document.model_position(item["position"], encoding)
        hint: dict[str, Any] = {"line": line, "column": column, "label": _cut(label.strip())}
        kind = _KINDS.get(item.get("kind"))  # type: ignore[arg-type]
        if kind is not None:
            hint["kind"] = kind
        tooltip = item.get("tooltip")
        if tooltip is not None:
            text = flatten_hover(tooltip)
            if text:
                hint["tooltip"] = _cut(text)
        for padding in ("paddingLeft", "paddingRight"):
            if item.get(padding) is True:
                hint[padding] = True
        edits = _edits(item.get("textEdits"), document, encoding)
        if edits:
            hint["textEdits"] = edits
        hints.append(((line, column), hint))
    hints.sort(key=lambda pair: pair[0])
    shown = [hint for _, hint in hints[:limit]]
    return {"hints": shown, "totalFound": len(hints), "shown": len(shown), "truncated": len(hints) > limit}
