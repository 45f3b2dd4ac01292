"""What an intel tool call can fail with, each error turning into the ``ok: false`` result of B2.5.

A tool call never raises at the agent: every failure becomes ``{"ok": false, "error": ...}`` plus the
fields that let the model fix its next call (candidates, the current line, the allowed values). The
classes are named after what went wrong, and their messages say what to do next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "AmbiguousPath",
    "AmbiguousTarget",
    "AnchorNotFound",
    "EditRejected",
    "IntelError",
    "InvalidArguments",
    "NotWired",
    "PathIsFolder",
    "PathNotFound",
    "PathOutsideWorkspace",
    "SymbolNotFound",
    "TargetOutOfRange",
    "UnknownTool",
]


class IntelError(Exception):
    """A failed tool call: :meth:`to_result` is the ``ok: false`` answer the agent sees."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.fields: dict[str, Any] = fields

    def to_result(self) -> dict[str, Any]:
        """``{"ok": false, "error": <message>, ...}`` with this error's extra fields."""
        return {"ok": False, "error": self.message, **self.fields}


class InvalidArguments(IntelError):
    """The payload does not match the tool's schema or a rule between its fields."""

    def __init__(self, tool: str, problems: Sequence[str]) -> None:
        listed = "; ".join(problems)
        super().__init__(f"invalid arguments for {tool}: {listed}", problems=list(problems))
        self.problems = list(problems)


class UnknownTool(IntelError):
    """No tool has that name (or it is disabled by ``lsp_disabled_tools``)."""


class PathOutsideWorkspace(IntelError):
    """A path or URI that does not stay inside an open root (B8.11): refused, never followed."""


class PathNotFound(IntelError):
    """A workspace path that names no file in any root."""


class PathIsFolder(IntelError):
    """A path that names a folder where a tool needs a file (``path: "src"``)."""


class AmbiguousPath(IntelError):
    """A relative path that exists in several roots (B4.2, B8.6): the call must name ``rootId``."""

    def __init__(self, message: str, candidates: Sequence[Mapping[str, Any]]) -> None:
        super().__init__(message, ambiguous=True, candidates=[dict(item) for item in candidates])


class SymbolNotFound(IntelError):
    """No symbol of the document matches (B4.4); ``candidates`` are the nearest names."""

    def __init__(self, message: str, candidates: Sequence[str]) -> None:
        super().__init__(message, candidates=list(candidates))


class AmbiguousTarget(IntelError):
    """More than one symbol matches (B4.5); ``candidates`` carry ids the next call can name."""

    def __init__(self, message: str, candidates: Sequence[Mapping[str, Any]]) -> None:
        super().__init__(message, ambiguous=True, candidates=[dict(item) for item in candidates])


class AnchorNotFound(IntelError):
    """``matchText`` is not on the given line (B4.7); ``currentLine`` shows what is there now."""

    def __init__(self, message: str, line: int, current_line: str) -> None:
        super().__init__(message, line=line, currentLine=current_line)


class TargetOutOfRange(IntelError):
    """A line or column past the end of the document."""


class NotWired(IntelError):
    """The tool's pure part is complete but nothing connects it to a language server yet."""


class EditRejected(IntelError):
    """A WorkspaceEdit the applier will not apply (B3.1, B3.6): malformed, overlapping or out-of-range text
    edits, a resource operation whose precondition does not hold, or a shape it does not know (unknown
    shapes fail closed rather than being guessed). Nothing was written."""
