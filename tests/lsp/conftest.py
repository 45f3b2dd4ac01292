"""Fixtures of the endpoint tests: the stream tests' kit on ``sys.path``. The leak check for the processes
a test starts (``tag``) and the real servers (``real_servers``: pyright and typescript-language-server
installed once per run) come from the suite's tests/conftest.py; Debian's gopls is used as it is."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "stream"))
