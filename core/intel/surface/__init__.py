"""The tool surface: the twelve tools as data, their arguments, and one dispatch for every client (B2, B9).

* :mod:`~kandev_lsp.intel.surface.schemas`: names, titles, descriptions and JSON schemas (B2.1, B6);
* :mod:`~kandev_lsp.intel.surface.validation`: payloads checked against them, with messages that say what
  to fix;
* :mod:`~kandev_lsp.intel.surface.arguments`, :mod:`~kandev_lsp.intel.surface.names`: typed arguments and
  the rules between fields (which new names a rename refuses);
* :mod:`~kandev_lsp.intel.surface.dispatch`: ``dispatch(op, payload, ctx)`` (B2.3-B2.6), the one entry
  point of the MCP server, ``kandev-lsp code`` and Python callers;
* :mod:`~kandev_lsp.intel.surface.summaries`: one-line result summaries (B9.4);
* :mod:`~kandev_lsp.intel.surface.rejections`: the short receipt of a mutation refused before it planned
  anything (B7.5).

Nothing here talks to a server: the tools come in through the protocols dispatch declares.
"""
