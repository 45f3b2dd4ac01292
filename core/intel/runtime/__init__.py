"""The servers behind the tools and the watch over the workspace they read (issue 9 runtime).

* :mod:`~kandev_lsp.intel.runtime.pool`: :class:`ServerPool`, one managed server per project root and
  language through the lifecycle: document re-sync from disk, readiness within the call's deadline, idle
  stop, bounded count;
* :mod:`~kandev_lsp.intel.runtime.executor`: one provider request with typed outcomes inside one deadline
  (B8.1-B8.4, B8.7);
* :mod:`~kandev_lsp.intel.runtime.watch`: :class:`DiskWatch`, which files changed on disk (inotify), which
  appeared or left;
* :mod:`~kandev_lsp.intel.runtime.watchers`: which of those a server's ``didChangeWatchedFiles``
  registrations and ``fileOperations`` filters ask for;
* :mod:`~kandev_lsp.intel.runtime.pathmemo`: path checks remembered while the watch vouches for them;
* :mod:`~kandev_lsp.intel.runtime.notices`: actionable notices for a language without a server (B8.9-B8.10);
* :mod:`~kandev_lsp.intel.runtime.ledger`: what each server was sent, and since when it has it (a fence).
"""
