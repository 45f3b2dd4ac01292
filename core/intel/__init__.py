"""Code intelligence for coding agents: twelve tools over managed language servers (issues 9, 11, 20; B1-B11).

Rooms, each a package with one concern, bottom up (:mod:`~kandev_lsp.intel.errors`, the failures every
room raises, sits beside them all):

* :mod:`~kandev_lsp.intel.files`: the workspace's roots and path safety, document text and coordinates,
  reads of regular files only;
* :mod:`~kandev_lsp.intel.runtime`: the server pool (one managed server per project root and language),
  the provider executor, the disk watch and what each server asked to watch;
* :mod:`~kandev_lsp.intel.reading`: targets, symbols, locations and budgets, outline, hover, hints, the
  hierarchy graph, diagnostics and their snapshots (pure), and :class:`LspReadTools` wiring them to servers;
* :mod:`~kandev_lsp.intel.surface`: the tools' schemas, validation, typed arguments, ``dispatch(op,
  payload, ctx)`` and result summaries (B2, B9.4); it builds on the pure reading rules (targets, budgets)
  and declares the protocols the two wirings implement: :class:`~kandev_lsp.intel.reading.tools.LspReadTools`
  and :class:`~kandev_lsp.intel.edits.mutations.MutatingTools`;
* :mod:`~kandev_lsp.intel.edits`: the six mutating tools (B6.16-B6.29: mutations, action handles,
  placement) and the one applier of every mutation (plan, preview, commit, the per-workspace coordinator,
  transactions, receipts; B3, B7).

The entry points for Python callers sit on top: :mod:`~kandev_lsp.intel.service` (:class:`IntelService`:
the pool, the wired tools and the dispatcher together) and :mod:`~kandev_lsp.intel.api` (:class:`CodeIntel`,
typed helpers over dispatch). ``kandev-lsp mcp`` and ``kandev-lsp code`` (core/cli) put them on MCP stdio
and the command line.
"""

from __future__ import annotations

from kandev_lsp.intel.errors import IntelError
from kandev_lsp.intel.files.workspace import Root, Workspace, WorkspaceFile
from kandev_lsp.intel.reading.targets import ResolvedTarget, Target, resolve_target
from kandev_lsp.intel.runtime.executor import (
    Deadline,
    Outcome,
    ProviderResult,
    ProviderUnavailable,
    run_provider,
)
from kandev_lsp.intel.surface.dispatch import (
    Dispatcher,
    DispatchOutcome,
    IntelContext,
    MutationTools,
    ReadTools,
    UnwiredTools,
)
from kandev_lsp.intel.surface.schemas import ALL_TOOLS, MUTATING_TOOLS, TOOLS, ToolSpec

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
