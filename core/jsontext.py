"""JSON read from files and peers kandev-lsp does not write itself, where unreadable text is a ``ValueError``.

Why: ``json.loads`` raises ``RecursionError``, not ``ValueError``, for arrays or objects nested past the
interpreter's recursion limit (a few KB of ``[`` are enough), and it *accepts* ``NaN``, ``Infinity`` and
numbers past a double's range (``1e999`` reads as inf), none of which is JSON: a settings file holding one
was taken, and the session that then sent it to a server in a ``workspace/configuration`` answer died on
``json.dumps(..., allow_nan=False)``. Every "not JSON" branch caught ``ValueError`` only, so such text ended
a command with a traceback instead of its error. :func:`loads` is ``json.loads`` that refuses all of them
with :class:`UnacceptableJson` (a ``ValueError``); malformed text stays ``json.JSONDecodeError``.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["UnacceptableJson", "finite_float", "loads", "reject_constant"]


class UnacceptableJson(ValueError):
    """Text that parses but is not acceptable JSON: nested too deeply, NaN/Infinity, a number out of range,
    an integer with more digits than Python converts."""


def reject_constant(name: str) -> Any:
    """``parse_constant``: Python's json accepts NaN and Infinity, which are not JSON (other peers choke)."""
    raise UnacceptableJson(f"{name} is not valid JSON")


def finite_float(text: str) -> float:
    """``parse_float``: a number past a double's range (1e400) reads as inf, which ``json.dumps`` writes
    back as Infinity (not JSON), so it is refused like the constants."""
    value = float(text)
    if math.isinf(value):
        raise UnacceptableJson(f"the number {text[:32]} is out of range")
    return value


def loads(text: str | bytes) -> Any:
    """``json.loads(text)`` for JSON as RFC 8259 has it: malformed text raises ``json.JSONDecodeError``,
    anything else unacceptable :class:`UnacceptableJson` (both ``ValueError``)."""
    try:
        return json.loads(text, parse_constant=reject_constant, parse_float=finite_float)
    except RecursionError:
        raise UnacceptableJson("arrays or objects nested too deeply to read") from None
    except (json.JSONDecodeError, UnacceptableJson):
        raise
    except ValueError as exc:  # an integer past int's digit limit
        raise UnacceptableJson(str(exc)) from None
