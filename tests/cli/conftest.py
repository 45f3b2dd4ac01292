"""The ``kandev-lsp`` command as people and scripts run it: real processes, helpers in ``clikit``; the
stream tests' kit (``stream_testkit``: the real servers' HOME, an LSP peer) for the ``run`` tests."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "stream"))
