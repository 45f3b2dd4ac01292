"""Code intelligence for coding agents: the pure core of the read tools (issue 9, clauses B1-B11).

Rooms, each a small module with one concern:

* :mod:`~kandev_lsp.intel.workspace`: roots, root ids, model-facing paths, path safety (B8.6, B8.11);
* :mod:`~kandev_lsp.intel.text`: document text, 1-based model columns <-> LSP positions;
* :mod:`~kandev_lsp.intel.symbols`: document symbols flattened with qualified names;
* :mod:`~kandev_lsp.intel.targets`: :class:`Target` resolution (B §3, B4);
* :mod:`~kandev_lsp.intel.output`: locations, snippets, bodies and size budgets (B §4, B5);
* :mod:`~kandev_lsp.intel.hover`: hover and signature help as plain text (B5.6, B6.10);
* :mod:`~kandev_lsp.intel.executor`: provider outcomes inside one deadline (B8.1-B8.4, B8.7);
* :mod:`~kandev_lsp.intel.schemas`, :mod:`~kandev_lsp.intel.validation`,
  :mod:`~kandev_lsp.intel.dispatch`: the six read tools' schemas and ``dispatch(op, payload, ctx)`` (B2);
* :mod:`~kandev_lsp.intel.summaries`: one-line result summaries (B9.4).

Nothing here talks to a server: the tools get server answers through callables, so every rule is tested
with plain values.
"""
