"""Transaction receipts: what a mutation did, in a shape the model can check (B7.3, B7.5).

Every mutating result carries one, rejected, conflicting and uncertain ones included: the number of
text edits, the resource operations, the outcome of each command, the touched files, whether the new
text reached the disk (``saved`` / ``not-saved`` / ``uncertain``), and the diagnostics of the touched
files before and after, as a delta.

The delta (:mod:`~kandev_lsp.intel.reading.deltas`) compares diagnostics by a key without positions
(file, source, code, severity, message), so a shifted error is neither "introduced" nor "resolved".

Pure: the coordinator hands in plain values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from kandev_lsp.intel.reading.deltas import (
    MAX_DELTA_ENTRIES,
    diagnostic_key,
    diagnostics_delta,
    elsewhere_delta,
)

if TYPE_CHECKING:
    from kandev_lsp.intel.edits.plan import ResourceOp

__all__ = [
    "MAX_DELTA_ENTRIES",
    "SaveState",
    "diagnostic_key",
    "diagnostics_delta",
    "elsewhere_delta",
    "receipt",
    "resource_entry",
    "unchanged_receipt",
]

SaveState = Literal["saved", "not-saved", "uncertain"]


def resource_entry(op: ResourceOp, *, exact: bool = True) -> dict[str, Any]:
    """A resource operation as the receipt lists it (the preview's shape, room A's
    :func:`~kandev_lsp.intel.edits.preview.resource_summary`); ``exact`` False when only observed (a
    command's effect), not previewed."""
    from kandev_lsp.intel.edits.preview import resource_summary

    return {**resource_summary(op), "exact": exact}


def unchanged_receipt() -> dict[str, Any]:
    """The receipt of a mutation whose server answer changes nothing (a formatted file formatted again, an
    action without an edit): nothing to count, approve or write, so as small as a rejection's
    (:func:`~kandev_lsp.intel.surface.rejections.rejected_receipt`)."""
    return {"outcome": "unchanged", "textEdits": 0, "saved": "not-saved"}


def receipt(
    *,
    outcome: str,
    text_edits: int = 0,
    resources: Sequence[Mapping[str, Any]] = (),
    commands: Sequence[Mapping[str, Any]] = (),
    touched: Iterable[str] = (),
    saved: SaveState = "not-saved",
    diagnostics: Mapping[str, Any] | None = None,
    diagnostics_status: str = "not-collected",
) -> dict[str, Any]:
    """The receipt of one mutation (B7.5).

    :param outcome: what happened: ``applied``, ``pending-approval``, ``declined``, ``rejected``,
        ``conflict``, ``failed``, ``uncertain`` (``unchanged`` has :func:`unchanged_receipt`).
    :param diagnostics: a :func:`diagnostics_delta`, or None when none was taken (nothing changed, or the
        servers could not say); ``diagnostics_status`` then says why.
    :param diagnostics_status: how fresh the "after" diagnostics are (``current``, ``quiet``, ``stale``,
        ``pending``, ``no_server``, ``not-collected``; docs/intel.md "Receipts" says what each means).
    """
    delta: dict[str, Any] = (
        dict(diagnostics)
        if diagnostics is not None
        else {
            "introduced": [],
            "resolved": [],
            "persisting": 0,
            "counts": {"introduced": 0, "resolved": 0, "persisting": 0},
            "truncated": False,
            "files": 0,
        }
    )
    delta["status"] = diagnostics_status
    return {
        "outcome": outcome,
        "textEdits": text_edits,
        "resourceOperations": [dict(item) for item in resources],
        "commands": [dict(item) for item in commands],
        "touched": sorted(set(touched)),
        "saved": saved,
        "diagnostics": delta,
    }
