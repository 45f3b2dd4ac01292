"""The broker tests share ``leasekit`` (a settable clock, a book with readable ids)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
