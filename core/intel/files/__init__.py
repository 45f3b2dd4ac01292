"""The workspace's files as the tools see them: roots and path safety, text and coordinates, safe reads.

* :mod:`~kandev_lsp.intel.files.workspace`: roots, root ids, model-facing paths, path safety (B8.6, B8.11);
* :mod:`~kandev_lsp.intel.files.text`: document text, 1-based model columns <-> LSP positions;
* :mod:`~kandev_lsp.intel.files.regular`: reads of regular files only (a FIFO is refused, never waited on).

The ground floor of the intel rooms: it imports nothing of them but :mod:`~kandev_lsp.intel.errors`.
"""
