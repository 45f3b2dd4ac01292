"""The reading side: from what a model names to what it reads back (B §3-§5, B6.1-B6.15, B6.30-B6.31).

Pure rules, each tested with plain values:

* :mod:`~kandev_lsp.intel.reading.targets`: :class:`Target` resolution (B §3, B4);
* :mod:`~kandev_lsp.intel.reading.symbols`: document symbols flattened with qualified names (B4.3);
* :mod:`~kandev_lsp.intel.reading.output`: locations, snippets, bodies and size budgets (B §4, B5);
* :mod:`~kandev_lsp.intel.reading.outline`, :mod:`~kandev_lsp.intel.reading.hints`: what code_symbols and
  code_inlay_hints show (B6.1-B6.2, B6.30-B6.31);
* :mod:`~kandev_lsp.intel.reading.hover`: hover and signature help as plain text (B5.6, B6.10);
* :mod:`~kandev_lsp.intel.reading.graph`: code_hierarchy's bounded traversal (B6.5-B6.8, B8.13);
* :mod:`~kandev_lsp.intel.reading.problems`, :mod:`~kandev_lsp.intel.reading.snapshots`: diagnostics as
  problems, and snapshots with status, freshness, versions and coverage (B6.11-B6.13);
* :mod:`~kandev_lsp.intel.reading.freshness`: when a file's diagnostics are ``current`` (issue 20);
  :mod:`~kandev_lsp.intel.reading.tsserver`: typescript-language-server's diagnostics pulled;
* :mod:`~kandev_lsp.intel.reading.deltas`, :mod:`~kandev_lsp.intel.reading.baselines`: diagnostics
  before and after by position-free keys, and ``code_diagnostics``' ``since`` baselines.

:mod:`~kandev_lsp.intel.reading.tools` wires them to the servers of :mod:`~kandev_lsp.intel.runtime`:
:class:`LspReadTools`, the six read tools behind :class:`~kandev_lsp.intel.surface.dispatch.ReadTools`.
"""
