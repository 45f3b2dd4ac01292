"""Diagnostic snapshots (B6.12, B6.13): what the servers said, how fresh it is, how much it covers.

A list of diagnostics alone cannot tell a model whether "0 errors" means "the code is fine" or "nobody
looked yet". A snapshot says it: for each file in scope, the document version the server has and the
version its diagnostics are for (``current``, ``stale``, ``pending`` when nothing came yet,
``unversioned`` when the server does not say), whether publications have been quiet for the quiescence
window, and a measured coverage: files with diagnostics out of the eligible source files in scope.

Status rules:

- a workspace or root read without activation is always ``published_workspace`` with ``partial``
  coverage (B6.13): servers publish for the files they chose to look at, never a promise about the rest;
- with activation, or for one file: ``current`` when every file's diagnostics are for its current
  version and publications are quiet, ``settling`` when they are current but still arriving, ``stale``
  when some file's diagnostics are for an older version, ``pending`` when some file has none yet.

Pure: the caller hands in each file's server-facing version and latest publication (the LSP layer's
diagnostics store entry, or anything with ``version``, ``diagnostics`` and ``received_at``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from kandev_lsp.intel.files.text import Document, PositionEncoding
from kandev_lsp.intel.files.workspace import WorkspaceFile
from kandev_lsp.intel.reading.output import DEFAULT_LIMIT
from kandev_lsp.intel.reading.problems import file_problems, problems_view

__all__ = ["FileDiagnostics", "Publication", "diagnostic_snapshot"]

Scope = Literal["file", "root", "workspace"]
#: Seconds without a new publication after which diagnostics count as settled.
DEFAULT_QUIET: Final = 0.5
#: Per-file freshness rows listed at most (counts cover every file).
MAX_DOCUMENT_ROWS: Final = 50


class Publication(Protocol):
    """The latest ``publishDiagnostics`` for one URI (``kandev_lsp.lsp.DiagnosticsEntry`` fits)."""

    @property
    def version(self) -> int | None: ...
    @property
    def diagnostics(self) -> Sequence[Any]: ...
    @property
    def received_at(self) -> float: ...


@dataclass(frozen=True, slots=True)
class FileDiagnostics:
    """One file in scope: its server-facing version (None when not open) and its latest publication."""

    file: WorkspaceFile
    document_version: int | None
    publication: Publication | None
    text: Document | None = None


def _state(item: FileDiagnostics) -> str:
    if item.publication is None:
        return "pending"
    if item.publication.version is None or item.document_version is None:
        return "unversioned"
    return "current" if item.publication.version >= item.document_version else "stale"


def diagnostic_snapshot(
    files: Sequence[FileDiagnostics],
    *,
    scope: Scope,
    now: float,
    encoding: PositionEncoding,
    severity: str | None = None,
    limit: int = DEFAULT_LIMIT,
    activated: int = 0,
    eligible_files: int | None = None,
    quiet: float = DEFAULT_QUIET,
    root_id: str | None = None,
) -> dict[str, Any]:
    """The snapshot result of ``code_diagnostics`` (see the module docstring)."""
    problems: list[dict[str, Any]] = []
    states: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    last_received: float | None = None
    for item in files:
        state = _state(item)
        states[state] = states.get(state, 0) + 1
        if item.publication is not None:
            problems += file_problems(item.file, item.publication.diagnostics, item.text, encoding)
            received = item.publication.received_at
            last_received = received if last_received is None else max(last_received, received)
        if len(rows) < MAX_DOCUMENT_ROWS and (scope == "file" or state != "current"):
            row: dict[str, Any] = {"path": item.file.display, "state": state}
            if item.document_version is not None:
                row["version"] = item.document_version
            if item.publication is not None and item.publication.version is not None:
                row["diagnosticsVersion"] = item.publication.version
            rows.append(row)
    settled = last_received is None or now - last_received >= quiet
    published = sum(1 for item in files if item.publication is not None)
    opened = sum(1 for item in files if item.document_version is not None)
    if scope != "file" and activated == 0:
        status, coverage_kind = "published_workspace", "partial"
    else:
        if states.get("pending"):
            status = "pending"
        elif states.get("stale"):
            status = "stale"
        else:
            status = "current" if settled else "settling"
        complete = eligible_files is not None and published >= eligible_files and status == "current"
        coverage_kind = "complete" if (scope == "file" and status == "current") or complete else "partial"
    coverage: dict[str, Any] = {"kind": coverage_kind, "filesWithDiagnostics": published, "filesOpen": opened}
    if eligible_files is not None:
        coverage["eligibleFiles"] = eligible_files
        coverage["ratio"] = round(published / eligible_files, 3) if eligible_files else 1.0
    if activated:
        coverage["activated"] = activated
    scope_json: dict[str, Any] = {"kind": scope}
    if scope == "file" and files:
        scope_json["path"] = files[0].file.display
    if root_id is not None:
        scope_json["rootId"] = root_id
    freshness: dict[str, Any] = {"settled": settled, "states": states}
    if last_received is not None:
        freshness["lastPublishedMsAgo"] = round(max(0.0, now - last_received) * 1000)
    return {
        "status": status,
        "scope": scope_json,
        **problems_view(problems, severity=severity, limit=limit),
        "freshness": freshness,
        "documents": rows,
        "coverage": coverage,
    }
