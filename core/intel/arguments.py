"""The read tools' arguments as typed values, parsed from schema-checked payloads.

:func:`~kandev_lsp.intel.validation.validate` checks each field on its own; the rules *between* fields
(``code_symbols`` needs a path or a query, a range's end is not before its start, ``activationLimit`` only
means something with ``activateWorkspace``) are checked here, with the same kind of message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kandev_lsp.intel.errors import InvalidArguments
from kandev_lsp.intel.output import DEFAULT_LIMIT
from kandev_lsp.intel.targets import Target

__all__ = [
    "PARSERS",
    "DiagnosticsArgs",
    "HierarchyArgs",
    "HoverArgs",
    "InlayHintsArgs",
    "NavigateArgs",
    "SymbolsArgs",
]


@dataclass(frozen=True, slots=True)
class SymbolsArgs:
    """``code_symbols``: a file's outline (``path``), a workspace search (``query``), or the file's
    symbols filtered by ``query``."""

    path: str | None
    root_id: str | None
    query: str | None
    limit: int = DEFAULT_LIMIT


@dataclass(frozen=True, slots=True)
class NavigateArgs:
    """``code_navigate``."""

    target: Target
    kind: str
    include_body: bool = False
    limit: int = DEFAULT_LIMIT
    context: int = 0
    first_match: bool = False


@dataclass(frozen=True, slots=True)
class HierarchyArgs:
    """``code_hierarchy``."""

    target: Target
    kind: str
    depth: int = 1
    limit: int = DEFAULT_LIMIT
    first_match: bool = False


@dataclass(frozen=True, slots=True)
class HoverArgs:
    """``code_hover``."""

    target: Target
    first_match: bool = False


@dataclass(frozen=True, slots=True)
class DiagnosticsArgs:
    """``code_diagnostics``: one file (``path``), one root (``root_id``), or the workspace."""

    path: str | None
    root_id: str | None
    severity: str | None
    limit: int = DEFAULT_LIMIT
    activate_workspace: bool = False
    activation_limit: int = 50


@dataclass(frozen=True, slots=True)
class InlayHintsArgs:
    """``code_inlay_hints``; ``lines`` is the 1-based inclusive line range, None for the whole file."""

    path: str
    root_id: str | None
    lines: tuple[int, int] | None
    limit: int = DEFAULT_LIMIT


def _int(payload: Mapping[str, Any], key: str, default: int) -> int:
    value = payload.get(key)
    return default if value is None else int(value)


def _symbols(payload: Mapping[str, Any]) -> SymbolsArgs:
    if payload.get("path") is None and payload.get("query") is None:
        raise InvalidArguments(
            "code_symbols",
            ["give `path` (a file's outline), `query` (a name to search the workspace for), or both"],
        )
    if payload.get("rootId") is not None and payload.get("path") is None:
        raise InvalidArguments("code_symbols", ["`rootId` chooses the root of `path`: give path too"])
    return SymbolsArgs(
        payload.get("path"),
        payload.get("rootId"),
        payload.get("query"),
        _int(payload, "limit", DEFAULT_LIMIT),
    )


def _navigate(payload: Mapping[str, Any]) -> NavigateArgs:
    return NavigateArgs(
        Target.from_json(payload["target"], tool="code_navigate"),
        payload["kind"],
        bool(payload.get("includeBody", False)),
        _int(payload, "limit", DEFAULT_LIMIT),
        _int(payload, "context", 0),
        bool(payload.get("firstMatch", False)),
    )


def _hierarchy(payload: Mapping[str, Any]) -> HierarchyArgs:
    return HierarchyArgs(
        Target.from_json(payload["target"], tool="code_hierarchy"),
        payload["kind"],
        _int(payload, "depth", 1),
        _int(payload, "limit", DEFAULT_LIMIT),
        bool(payload.get("firstMatch", False)),
    )


def _hover(payload: Mapping[str, Any]) -> HoverArgs:
    return HoverArgs(
        Target.from_json(payload["target"], tool="code_hover"), bool(payload.get("firstMatch", False))
    )


def _diagnostics(payload: Mapping[str, Any]) -> DiagnosticsArgs:
    problems = []
    if payload.get("activationLimit") is not None and not payload.get("activateWorkspace"):
        problems.append(
            "`activationLimit` bounds activateWorkspace: set activateWorkspace to true, or drop it"
        )
    if payload.get("activateWorkspace") and payload.get("path") is not None:
        problems.append("`activateWorkspace` widens a workspace or root read: drop `path`, or drop it")
    if problems:
        raise InvalidArguments("code_diagnostics", problems)
    return DiagnosticsArgs(
        payload.get("path"),
        payload.get("rootId"),
        payload.get("severity"),
        _int(payload, "limit", DEFAULT_LIMIT),
        bool(payload.get("activateWorkspace", False)),
        _int(payload, "activationLimit", 50),
    )


def _inlay_hints(payload: Mapping[str, Any]) -> InlayHintsArgs:
    lines = None
    if payload.get("range") is not None:
        start, end = int(payload["range"]["startLine"]), int(payload["range"]["endLine"])
        if end < start:
            raise InvalidArguments(
                "code_inlay_hints", [f"`range.endLine` ({end}) is before `range.startLine` ({start})"]
            )
        lines = (start, end)
    return InlayHintsArgs(
        payload["path"], payload.get("rootId"), lines, _int(payload, "limit", DEFAULT_LIMIT)
    )


#: Tool name -> parser of its (schema-valid) payload.
PARSERS: Final[dict[str, Callable[[Mapping[str, Any]], Any]]] = {
    "code_symbols": _symbols,
    "code_navigate": _navigate,
    "code_hierarchy": _hierarchy,
    "code_hover": _hover,
    "code_diagnostics": _diagnostics,
    "code_inlay_hints": _inlay_hints,
}
