"""The ``kandev-lsp`` command as people and scripts run it: real processes, helpers in ``clikit``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
