"""Diagnostic snapshots (B6.12, B6.13): status, scope, counts, freshness, versions, measured coverage."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.intel.files.text import PositionEncoding
from kandev_lsp.intel.files.workspace import Workspace, WorkspaceFile
from kandev_lsp.intel.reading.snapshots import FileDiagnostics, diagnostic_snapshot
from kandev_lsp.lsp.diagnostics import DiagnosticsStore

UTF16 = PositionEncoding.UTF16


@dataclass(frozen=True)
class Published:
    version: int | None
    diagnostics: tuple[Any, ...]
    received_at: float


def _error(line: int, message: str = "boom", severity: int = 1) -> dict[str, Any]:
    span = {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 1}}
    return {"range": span, "severity": severity, "message": message}


@pytest.fixture
def files(tmp_path: Path) -> list[WorkspaceFile]:
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text("x = 1\ny = 2\n")
    workspace = Workspace([tmp_path])
    return [workspace.resolve(name) for name in ("a.py", "b.py", "c.py")]


def test_a_default_workspace_read_is_published_workspace_and_partial(files: list[WorkspaceFile]) -> None:
    items = [
        FileDiagnostics(files[0], 3, Published(3, (_error(0), _error(1, "w", 2)), 10.0)),
        FileDiagnostics(files[1], None, Published(None, (_error(1),), 9.0)),
    ]
    snapshot = diagnostic_snapshot(items, scope="workspace", now=20.0, encoding=UTF16, eligible_files=3)
    assert snapshot["status"] == "published_workspace"
    assert snapshot["scope"] == {"kind": "workspace"}
    assert snapshot["counts"] == {"error": 2, "warning": 1, "info": 0, "hint": 0}
    assert snapshot["coverage"] == {
        "kind": "partial", "filesWithDiagnostics": 2, "filesOpen": 1, "eligibleFiles": 3, "ratio": 0.667,
    }  # fmt: skip
    assert snapshot["freshness"] == {
        "settled": True, "states": {"current": 2}, "lastPublishedMsAgo": 10000,
    }  # fmt: skip
    assert snapshot["documents"] == []  # only rows worth a look
    assert [p["path"] for p in snapshot["problems"]] == ["a.py", "b.py", "a.py"]  # errors first


def test_even_every_file_published_stays_partial_without_activation(files: list[WorkspaceFile]) -> None:
    items = [FileDiagnostics(f, 1, Published(1, (), 1.0)) for f in files]
    snapshot = diagnostic_snapshot(
        items, scope="root", root_id="proj", now=9.0, encoding=UTF16, eligible_files=3
    )
    assert (snapshot["status"], snapshot["coverage"]["kind"]) == ("published_workspace", "partial")
    assert snapshot["scope"] == {"kind": "root", "rootId": "proj"}


@pytest.mark.parametrize(
    ("document_version", "publication", "now", "status", "state"),
    [
        (4, Published(4, (), 10.0), 11.0, "current", "current"),
        (4, Published(4, (), 10.0), 10.05, "settling", "settling"),  # progress may follow it: a grace
        (5, Published(4, (_error(0),), 10.0), 11.0, "settling", "stale"),  # awaiting version 5
        (5, None, 11.0, "settling", "pending"),  # awaiting the first publication
        (None, Published(None, (), 10.0), 11.0, "current", "current"),  # unversioned and quiet
        (None, Published(None, (), 10.0), 10.2, "settling", "settling"),  # inside the quiet window
    ],
)
def test_file_status_and_freshness(
    files: list[WorkspaceFile],
    document_version: int | None,
    publication: Any,
    now: float,
    status: str,
    state: str,
) -> None:
    snapshot = diagnostic_snapshot(
        [FileDiagnostics(files[0], document_version, publication)], scope="file", now=now, encoding=UTF16
    )
    assert snapshot["status"] == status
    assert snapshot["scope"] == {"kind": "file", "path": "a.py"}
    assert snapshot["documents"][0]["state"] == state
    assert snapshot["coverage"]["kind"] == ("complete" if status == "current" else "partial")


def test_versions_are_listed_per_document(files: list[WorkspaceFile]) -> None:
    snapshot = diagnostic_snapshot(
        [FileDiagnostics(files[0], 5, Published(4, (_error(0),), 10.0))],
        scope="file",
        now=11.0,
        encoding=UTF16,
    )
    assert snapshot["documents"] == [
        {"path": "a.py", "state": "stale", "version": 5, "diagnosticsVersion": 4}
    ]


def test_activation_measures_coverage(files: list[WorkspaceFile]) -> None:
    items = [FileDiagnostics(f, 1, Published(1, (), 1.0)) for f in files]
    snapshot = diagnostic_snapshot(
        items, scope="workspace", now=9.0, encoding=UTF16, activated=3, eligible_files=3
    )
    assert snapshot["status"] == "current"
    assert snapshot["coverage"] == {
        "kind": "complete", "filesWithDiagnostics": 3, "filesOpen": 3, "eligibleFiles": 3, "ratio": 1.0, "activated": 3,
    }  # fmt: skip
    fewer = diagnostic_snapshot(
        items[:2], scope="workspace", now=9.0, encoding=UTF16, activated=2, eligible_files=3
    )
    assert fewer["coverage"]["kind"] == "partial" and fewer["coverage"]["ratio"] == 0.667


def test_severity_filter_and_limit(files: list[WorkspaceFile]) -> None:
    publication = Published(1, (_error(0), _error(1, "w", 2), _error(1, "h", 4)), 1.0)
    snapshot = diagnostic_snapshot(
        [FileDiagnostics(files[0], 1, publication)],
        scope="file",
        now=9.0,
        encoding=UTF16,
        severity="warning",
        limit=1,
    )
    assert snapshot["counts"] == {"error": 1, "warning": 1, "info": 0, "hint": 0}
    assert snapshot["allCounts"]["hint"] == 1
    assert (snapshot["shown"], snapshot["totalFound"], snapshot["truncated"]) == (1, 2, True)


def test_the_lsp_diagnostics_store_entries_fit(files: list[WorkspaceFile]) -> None:
    store = DiagnosticsStore()
    entry = store.publish({"uri": files[0].uri, "version": 2, "diagnostics": [_error(1)]}, now=5.0)
    assert entry is not None
    snapshot = diagnostic_snapshot(
        [FileDiagnostics(files[0], 2, entry)], scope="file", now=6.0, encoding=UTF16
    )
    assert snapshot["status"] == "current" and snapshot["problems"][0]["line"] == 2
