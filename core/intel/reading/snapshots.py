"""Diagnostic snapshots (B6.12, B6.13): what the servers said, how fresh it is, how much it covers.

A list of diagnostics alone cannot tell a model whether "0 errors" means "the code is fine" or "nobody
looked yet". A snapshot says it: for each file in scope, how fresh its diagnostics are
(:mod:`~kandev_lsp.intel.reading.freshness`: ``current``, ``quiet``, or not yet: ``stale``, ``pending``,
``rechecking``, ``settling``, each with what it awaits), the document version the server has and the one
its diagnostics are for, and a measured coverage: files with diagnostics out of the eligible source files
in scope.

Status rules (issue 20 items 1-2):

- a workspace or root read without activation is always ``published_workspace`` with ``partial``
  coverage (B6.13): servers publish for the files they chose to look at, never a promise about the rest;
- with activation, or for one file: ``current`` when every file's diagnostics are current (a publication
  after its own last change and after the server had every other change since); ``quiet`` when the
  others are current and some file got no publication after a change though the server went silent
  (its last word stands, unconfirmed); otherwise ``settling``, with ``awaiting`` saying what did not come
  within the call's deadline. ``settling`` is worth asking again; ``current`` and ``quiet`` are not.

Pure: the caller hands in each file's server-facing version, latest publication (the LSP layer's
diagnostics store entry, or anything with ``version``, ``diagnostics`` and ``received_at``) and its
freshness; without one, the freshness is judged from the publications alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from kandev_lsp.intel.files.text import Document, PositionEncoding
from kandev_lsp.intel.files.workspace import WorkspaceFile
from kandev_lsp.intel.reading.freshness import Freshness, Publication, file_freshness
from kandev_lsp.intel.reading.output import DEFAULT_LIMIT
from kandev_lsp.intel.reading.problems import file_problems, problems_view
from kandev_lsp.intel.runtime.ledger import Activity

__all__ = ["FileDiagnostics", "Publication", "diagnostic_snapshot"]

Scope = Literal["file", "root", "workspace"]
#: Seconds without a new publication after which diagnostics count as settled.
DEFAULT_QUIET: Final = 0.5
#: Per-file freshness rows listed at most (counts cover every file).
MAX_DOCUMENT_ROWS: Final = 50
#: What a settling answer awaits, listed at most.
MAX_AWAITING: Final = 10


@dataclass(frozen=True, slots=True)
class FileDiagnostics:
    """One file in scope: its server-facing version (None when not open), its latest publication and,
    from the caller who knows what the server was told, how fresh that is."""

    file: WorkspaceFile
    document_version: int | None
    publication: Publication | None
    text: Document | None = None
    freshness: Freshness | None = None


def _freshness(item: FileDiagnostics, activity: Activity, now: float, quiet: float) -> Freshness:
    if item.freshness is not None:
        return item.freshness
    return file_freshness(
        label=item.file.display,
        version=item.document_version,
        publication=item.publication,
        own=None,
        other=None,
        activity=activity,
        now=now,
        quiet=quiet,
    )


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
    awaiting: list[str] = []
    received_times = [item.publication.received_at for item in files if item.publication is not None]
    activity = Activity(max(received_times, default=None))
    last_received: float | None = None
    for item in files:
        judged = _freshness(item, activity, now, quiet)
        state = judged.state
        states[state] = states.get(state, 0) + 1
        if judged.awaiting is not None and len(awaiting) < MAX_AWAITING:
            awaiting.append(judged.awaiting)
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
    settled = all(state in ("current", "quiet") for state in states)
    published = sum(1 for item in files if item.publication is not None)
    opened = sum(1 for item in files if item.document_version is not None)
    if scope != "file" and activated == 0:
        status, coverage_kind = "published_workspace", "partial"
    else:
        if any(state not in ("current", "quiet") for state in states):
            status = "settling"
        else:
            status = "quiet" if states.get("quiet") else "current"
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
    out: dict[str, Any] = {
        "status": status,
        "scope": scope_json,
        **problems_view(problems, severity=severity, limit=limit),
        "freshness": freshness,
        "documents": rows,
        "coverage": coverage,
    }
    if status == "settling" and awaiting:
        out["awaiting"] = awaiting
    return out
