"""Diagnostics before and after, as a delta a model can check (B6.15, B7.3; issue 20 item 11).

Diagnostics are compared by a key without positions (file, source, code, severity, message): an edit that
inserts a line above an existing error shifts it, and a shifted error is neither "introduced" nor
"resolved". Equal keys are counted (a multiset), so a second identical error on another line is still one
introduced. Lists are bounded; the counts are not. Used by the mutations' receipts and by
``code_diagnostics`` ``since`` (the receipt of the agent's own file edits).

Pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from kandev_lsp.intel.reading.problems import SEVERITY_NAMES

__all__ = ["MAX_DELTA_ENTRIES", "DiagnosticKey", "diagnostic_key", "diagnostics_delta", "elsewhere_delta"]

#: Introduced / resolved entries listed at most, each (the counts cover all of them).
MAX_DELTA_ENTRIES: Final = 20
#: Characters of a diagnostic message kept in a receipt entry.
_MAX_MESSAGE: Final = 300

DiagnosticKey = tuple[str, str, str, str, str]


def _severity(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return SEVERITY_NAMES.get(value, "error")
    return "error"  # a missing severity means error, as editors show it


def _code(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return ""
    return str(value) if isinstance(value, str | int) else ""


def diagnostic_key(path: str, diagnostic: Mapping[str, Any]) -> DiagnosticKey:
    """``(path, source, code, severity, message)``: the identity of a diagnostic across edits.

    Positions are left out on purpose (B7.5). Accepts an LSP ``Diagnostic`` (numeric severity) or a
    problem from :func:`~kandev_lsp.intel.reading.problems.file_problems` (named severity): both give one key.
    """
    source = diagnostic.get("source")
    message = diagnostic.get("message")
    return (
        path,
        source if isinstance(source, str) else "",
        _code(diagnostic.get("code")),
        _severity(diagnostic.get("severity")),
        " ".join(message.split()) if isinstance(message, str) else "",
    )


def _line(diagnostic: Mapping[str, Any]) -> int | None:
    line = diagnostic.get("line")
    if isinstance(line, int) and not isinstance(line, bool):
        return line
    span = diagnostic.get("range")
    start = span.get("start") if isinstance(span, Mapping) else None
    value = start.get("line") if isinstance(start, Mapping) else None
    return value + 1 if isinstance(value, int) and not isinstance(value, bool) else None


def _entry(key: DiagnosticKey, diagnostic: Mapping[str, Any]) -> dict[str, Any]:
    path, source, code, severity, message = key
    entry: dict[str, Any] = {"path": path, "severity": severity}
    line = _line(diagnostic)
    if line is not None:
        entry["line"] = line
    entry["message"] = message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 1] + "…"
    if source:
        entry["source"] = source
    if code:
        entry["code"] = code
    return entry


def _keyed(path: str, items: Iterable[Mapping[str, Any]]) -> list[tuple[DiagnosticKey, Mapping[str, Any]]]:
    return [(diagnostic_key(path, item), item) for item in items if isinstance(item, Mapping)]


def diagnostics_delta(
    before: Mapping[str, Sequence[Mapping[str, Any]]],
    after: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    limit: int = MAX_DELTA_ENTRIES,
) -> dict[str, Any]:
    """Introduced / resolved / persisting diagnostics of the files in ``after`` (path -> diagnostics).

    A file missing from ``after`` was not collected and is left out, never counted as "all resolved";
    a file missing from ``before`` (created by the edit) had none. Lines in entries are where the
    diagnostic is now (introduced) or was (resolved), 1-based.
    """
    introduced: list[dict[str, Any]] = []
    resolved: list[dict[str, Any]] = []
    counts = {"introduced": 0, "resolved": 0, "persisting": 0}
    for path in sorted(after):
        old = _keyed(path, before.get(path, ()))
        new = _keyed(path, after[path])
        remaining = Counter(key for key, _ in old)
        for key, item in new:
            if remaining[key] > 0:
                remaining[key] -= 1
                counts["persisting"] += 1
            else:
                counts["introduced"] += 1
                if len(introduced) < limit:
                    introduced.append(_entry(key, item))
        still = Counter(key for key, _ in new)
        for key, item in old:
            if still[key] > 0:
                still[key] -= 1
            else:
                counts["resolved"] += 1
                if len(resolved) < limit:
                    resolved.append(_entry(key, item))
    return {
        "introduced": introduced,
        "resolved": resolved,
        "persisting": counts["persisting"],
        "counts": counts,
        "truncated": counts["introduced"] > len(introduced) or counts["resolved"] > len(resolved),
        "files": len(after),
    }


def elsewhere_delta(
    before: Mapping[str, Sequence[Mapping[str, Any]]],
    after: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    limit: int = MAX_DELTA_ENTRIES,
) -> dict[str, Any]:
    """Diagnostics introduced in files the edit did not touch (trial finding A, B7.3).

    ``after`` holds the files a server published diagnostics for during the post-edit settle window
    (path -> its newest publication); ``before`` what it had published for them before the edit. A
    file with no earlier publication is compared against none (``withoutBaseline`` counts them: a
    server that publishes only files with problems had nothing to say about it). A renamed method
    breaks a caller the rename did not touch: the touched files' delta cannot show that, this can.
    Coverage is what the server chose to publish: files it did not report on are not checked.
    """
    delta = diagnostics_delta(before, after, limit=limit)
    introduced_keys: Counter[DiagnosticKey] = Counter()
    for path in after:
        old = Counter(key for key, _ in _keyed(path, before.get(path, ())))
        for key, _item in _keyed(path, after[path]):
            if old[key] > 0:
                old[key] -= 1
            else:
                introduced_keys[key] += 1
    errors = sum(count for key, count in introduced_keys.items() if key[3] == "error")
    return {
        "introduced": delta["introduced"],
        "counts": {
            "introduced": delta["counts"]["introduced"],
            "errors": errors,
            "resolved": delta["counts"]["resolved"],
        },
        "truncated": len(delta["introduced"]) < delta["counts"]["introduced"],
        "files": len(after),
        "withoutBaseline": sum(1 for path in after if path not in before),
        "coverage": "files the server published diagnostics for after the edit; others were not checked",
    }
