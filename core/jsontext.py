"""JSON read from files and peers kandev-lsp does not write itself, where unreadable text is a ``ValueError``.

Why: ``json.loads`` raises ``RecursionError``, not ``ValueError``, for arrays or objects nested past the
interpreter's recursion limit, and a few KB of ``[`` are enough. Every "not JSON" branch caught
``ValueError`` only, so a settings file, an env file, a release origin's metadata, an npm package's
``package.json`` or an edited receipt nested that deep ended the command with a traceback instead of its
error. :func:`loads` is ``json.loads`` with that case turned into :class:`NestedTooDeeply`.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["NestedTooDeeply", "loads"]


class NestedTooDeeply(ValueError):
    """JSON text whose arrays or objects nest deeper than the parser can follow."""

    def __str__(self) -> str:
        return "arrays or objects nested too deeply to read"


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``; nesting too deep to parse raises :class:`NestedTooDeeply` (a ``ValueError``)
    like every other unreadable text, so callers need one ``except ValueError`` (or ``JSONDecodeError``
    and this)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise NestedTooDeeply from None
