"""The warm daemon behind ``kandev-lsp code`` (issue 19): one-shot calls answered by warm servers.

The first ``kandev-lsp code`` call for a workspace set starts a background daemon (like gopls'
``-remote=auto``) that holds one :class:`~kandev_lsp.intel.service.IntelService`; later calls connect to it
over a private Unix socket and get the warm answer: the same tools, JSON and exit statuses as the one-shot
path (``--no-daemon``, and always on Windows). Rooms, each one concern:

* :mod:`~kandev_lsp.codedaemon.names`: the user's private runtime folder and what one daemon's files are
  called there (socket, lock, log, owner record), from the identity of its configuration;
* :mod:`~kandev_lsp.codedaemon.wire`: the messages on the socket (one JSON line each way) and the peer's
  uid (``SO_PEERCRED``), checked on both ends;
* :mod:`~kandev_lsp.codedaemon.client`: the calling side: connect, or start the daemon under a lock when
  none answers (a stale socket is replaced), then ask; no asyncio, no intel imports;
* :mod:`~kandev_lsp.codedaemon.starter`: starting a daemon detached (its own session, stdio on the null
  device and a log file, no inherited descriptors, an absolute interpreter, ``/`` as its folder) and
  waiting for its readiness line;
* :mod:`~kandev_lsp.codedaemon.lifetime`: when a daemon stops (idle, its workspace gone, its socket
  replaced, settings changed): pure decisions over its state;
* :mod:`~kandev_lsp.codedaemon.daemon`: the daemon process itself: the service, the socket server, the
  stop that leaves no server behind.

Importing this package imports nothing: ``kandev-lsp code`` reaches the daemon with :mod:`socket` and
:mod:`json` alone, and the heavy parts (the servers' runtime, asyncio) stay in the daemon.
"""
