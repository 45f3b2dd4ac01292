"""``python -P -m kandev_lsp.codedaemon``: the daemon process (:func:`kandev_lsp.codedaemon.daemon.main`)."""

from __future__ import annotations

import sys

from kandev_lsp.codedaemon.daemon import main

sys.exit(main())
