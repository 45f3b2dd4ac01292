"""A module imported at its first use, for imports that only a rare path needs.

Why: ``kandev-lsp run`` is on an editor's time-to-initialized, and everything it imports before it
spawns the server is added to the editor's wait. psutil, for instance, is needed only to stop a process
tree (and on systems without ``/proc``), yet importing it cost as much as the resolver.

Write it as an import that type checkers still see::

    if TYPE_CHECKING:
        import psutil
    else:
        psutil = LazyModule("psutil")

Every attribute access goes through :func:`importlib.import_module`, which holds the import system's
per-module lock, so the first use from two threads at once is safe (``importlib.util.LazyLoader`` is not
on Python 3.11), and later accesses cost a ``sys.modules`` lookup.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["LazyModule"]


class LazyModule:
    """Stands for the module ``name``; imports it on the first attribute access."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported at first use>"
