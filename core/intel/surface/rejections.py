"""The receipt of a mutation refused before it changed anything (B7.5), kept small.

Every mutating result carries a receipt, rejected ones included. A call refused before a change was
planned (invalid arguments, ``firstMatch``, an ambiguous target, a refused rename, a path outside the
workspace, a used or unknown transaction) has nothing to count: no edits, no operations, no commands,
nothing written, no diagnostics compared. The full receipt of such a call was ~450 bytes of zeros and
empty lists that a model reads on every mistake; this one says the same in its three facts:
``{"outcome": "rejected", "textEdits": 0, "saved": "not-saved"}``. A rejection that did plan something
(a receipt with edits, operations or commands) keeps its full receipt.

Pure; the dispatcher (refusals before a tool runs) and the mutating tools (refusals by the coordinator)
both use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["compact_rejection", "rejected_receipt"]


def rejected_receipt() -> dict[str, Any]:
    """The receipt of a mutation refused before anything was planned: nothing edited, nothing saved."""
    return {"outcome": "rejected", "textEdits": 0, "saved": "not-saved"}


def _planned_nothing(receipt: Mapping[str, Any]) -> bool:
    diagnostics = receipt.get("diagnostics")
    compared = isinstance(diagnostics, Mapping) and diagnostics.get("status") not in (None, "not-collected")
    return (
        receipt.get("outcome") == "rejected"
        and receipt.get("textEdits", 0) == 0
        and not receipt.get("resourceOperations")
        and not receipt.get("commands")
        and receipt.get("saved", "not-saved") == "not-saved"
        and not compared
    )


def compact_rejection(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with a rejected receipt that records nothing replaced by :func:`rejected_receipt`
    (in place, and returned); any other result as it is."""
    receipt = result.get("receipt")
    if isinstance(receipt, Mapping) and _planned_nothing(receipt):
        result["receipt"] = rejected_receipt()
    return result
