"""Code intelligence for coding agents: the pure core of the read tools (issue 9, clauses B1-B11).

Rooms, each a small module with one concern:

* :mod:`~kandev_lsp.intel.workspace`: roots, root ids, model-facing paths, path safety (B8.6, B8.11);
* :mod:`~kandev_lsp.intel.text`: document text, 1-based model columns <-> LSP positions;
* :mod:`~kandev_lsp.intel.symbols`: document symbols flattened with qualified names;
* :mod:`~kandev_lsp.intel.targets`: :class:`Target` resolution (B §3, B4);
* :mod:`~kandev_lsp.intel.output`: locations, snippets, bodies and size budgets (B §4, B5);
* :mod:`~kandev_lsp.intel.outline`, :mod:`~kandev_lsp.intel.hints`, :mod:`~kandev_lsp.intel.problems`:
  what code_symbols, code_inlay_hints and code_diagnostics show (B6.1-B6.2, B6.30-B6.31, B6.11-B6.12);
* :mod:`~kandev_lsp.intel.snapshots`: diagnostic snapshots: status, freshness, versions, coverage (B6.12-B6.13);
* :mod:`~kandev_lsp.intel.hover`: hover and signature help as plain text (B5.6, B6.10);
* :mod:`~kandev_lsp.intel.graph`: code_hierarchy's bounded traversal (B6.5-B6.8, B8.13);
* :mod:`~kandev_lsp.intel.executor`: provider outcomes inside one deadline (B8.1-B8.4, B8.7);
* :mod:`~kandev_lsp.intel.notices`: actionable notices for a language without a server (B8.9-B8.10);
* :mod:`~kandev_lsp.intel.schemas`, :mod:`~kandev_lsp.intel.validation`, :mod:`~kandev_lsp.intel.arguments`,
  :mod:`~kandev_lsp.intel.dispatch`: the twelve tools' schemas and ``dispatch(op, payload, ctx)`` (B2);
* :mod:`~kandev_lsp.intel.summaries`: one-line result summaries (B9.4);
* :mod:`~kandev_lsp.intel.api`: :class:`CodeIntel`, typed helpers over dispatch for Python callers;
* :mod:`~kandev_lsp.intel.mutations`: the six mutating tools (B6.16-B6.29) over the coordinator of
  :mod:`~kandev_lsp.intel.edits`, with :mod:`~kandev_lsp.intel.actions` (code action handles) and
  :mod:`~kandev_lsp.intel.placement` (where inserted and replacing text goes).

Nothing here talks to a server: server answers come in as plain values or through async callables, so
every rule is tested with plain values. :class:`~kandev_lsp.intel.tools.LspReadTools` and
:class:`~kandev_lsp.intel.mutations.MutatingTools` wire them to managed servers, implementing
:class:`~kandev_lsp.intel.dispatch.ReadTools` and :class:`~kandev_lsp.intel.dispatch.MutationTools`.
"""

from __future__ import annotations

from kandev_lsp.intel.dispatch import (
    Dispatcher,
    DispatchOutcome,
    IntelContext,
    MutationTools,
    ReadTools,
    UnwiredTools,
)
from kandev_lsp.intel.errors import IntelError
from kandev_lsp.intel.executor import Deadline, Outcome, ProviderResult, ProviderUnavailable, run_provider
from kandev_lsp.intel.schemas import ALL_TOOLS, MUTATING_TOOLS, TOOLS, ToolSpec
from kandev_lsp.intel.targets import ResolvedTarget, Target, resolve_target
from kandev_lsp.intel.workspace import Root, Workspace, WorkspaceFile

__all__ = [
    "ALL_TOOLS",
    "MUTATING_TOOLS",
    "TOOLS",
    "Deadline",
    "DispatchOutcome",
    "Dispatcher",
    "IntelContext",
    "IntelError",
    "MutationTools",
    "Outcome",
    "ProviderResult",
    "ProviderUnavailable",
    "ReadTools",
    "ResolvedTarget",
    "Root",
    "Target",
    "ToolSpec",
    "UnwiredTools",
    "Workspace",
    "WorkspaceFile",
    "resolve_target",
    "run_provider",
]
