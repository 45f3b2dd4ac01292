"""Fixtures of the intel tests: the helpers' folder on ``sys.path``. The leak check for the processes a
test starts (``tag``) and pyright and typescript-language-server (``real_servers``, installed once per run)
come from the suite's tests/conftest.py."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "stream"))
sys.path.insert(0, str(Path(__file__).parent))
