"""Diagnostics as problems the model reads (the pure part of ``code_diagnostics``, B6.11-B6.12).

Per file, a server's ``Diagnostic[]`` (published or pulled) becomes
``{path, line, column, endLine?, endColumn, severity, message, source?, code?}``; :func:`problems_view`
merges files into ``counts`` (after the severity filter), ``allCounts`` (before), and ``problems`` sorted
by severity, then path and line, capped by ``limit`` with ``truncated`` + ``totalFound``. A missing
severity means error (what editors show). Messages are cut at 1000 characters: a TypeScript error chain
can be longer than the code it is about. Snapshot status, freshness, versions and coverage belong to the
layer that owns the diagnostics store; this module only shapes what it holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from kandev_lsp.intel.files.text import Document, PositionEncoding
from kandev_lsp.intel.files.workspace import WorkspaceFile
from kandev_lsp.intel.reading.output import DEFAULT_LIMIT

__all__ = ["SEVERITY_NAMES", "count_by_severity", "file_problems", "problems_view"]

SEVERITY_NAMES: Final = {1: "error", 2: "warning", 3: "info", 4: "hint"}
_RANK: Final = {name: number for number, name in SEVERITY_NAMES.items()}
MAX_MESSAGE: Final = 1000


def _position(value: Any) -> dict[str, int]:
    if isinstance(value, dict):
        line, character = value.get("line"), value.get("character")
        if isinstance(line, int) and isinstance(character, int) and line >= 0 and character >= 0:
            return {"line": line, "character": character}
    return {"line": 0, "character": 0}


def file_problems(
    file: WorkspaceFile, diagnostics: Iterable[Any], document: Document | None, encoding: PositionEncoding
) -> list[dict[str, Any]]:
    """One file's diagnostics as problems (positions in characters when the text is known)."""
    problems: list[dict[str, Any]] = []
    for item in diagnostics:
        if not isinstance(item, dict) or not isinstance(item.get("message"), str):
            continue
        raw_span = item.get("range")
        span: dict[str, Any] = raw_span if isinstance(raw_span, dict) else {}
        start, end = _position(span.get("start")), _position(span.get("end"))
        if document is not None:
            line, column = document.model_position(start, encoding)
            end_line, end_column = document.model_position(end, encoding)
        else:
            line, column = start["line"] + 1, start["character"] + 1
            end_line, end_column = end["line"] + 1, end["character"] + 1
        severity = SEVERITY_NAMES.get(item.get("severity"), "error")  # type: ignore[arg-type]
        message = item["message"].strip()
        problem: dict[str, Any] = {"path": file.display, "line": line, "column": column}
        if end_line != line:
            problem["endLine"] = end_line
        problem["endColumn"] = end_column
        problem["severity"] = severity
        problem["message"] = message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"
        if isinstance(item.get("source"), str):
            problem["source"] = item["source"]
        code = item.get("code")
        if isinstance(code, str | int) and not isinstance(code, bool):
            problem["code"] = code
        problems.append(problem)
    return problems


def count_by_severity(problems: Iterable[dict[str, Any]]) -> dict[str, int]:
    """``{"error": E, "warning": W, "info": I, "hint": H}``."""
    counts = dict.fromkeys(SEVERITY_NAMES.values(), 0)
    for problem in problems:
        counts[problem["severity"]] += 1
    return counts


def problems_view(
    problems: list[dict[str, Any]], *, severity: str | None = None, limit: int = DEFAULT_LIMIT
) -> dict[str, Any]:
    """``{counts, allCounts, problems, totalFound, shown, truncated}``; ``severity`` is the lowest kept."""
    kept = problems
    if severity is not None:
        lowest = _RANK[severity]
        kept = [p for p in problems if _RANK[p["severity"]] <= lowest]
    ordered = sorted(kept, key=lambda p: (_RANK[p["severity"]], p["path"], p["line"], p["column"]))
    shown = ordered[:limit]
    return {
        "counts": count_by_severity(kept),
        "allCounts": count_by_severity(problems),
        "problems": shown,
        "totalFound": len(ordered),
        "shown": len(shown),
        "truncated": len(ordered) > limit,
    }
