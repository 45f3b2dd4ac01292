"""The tools' arguments as typed values, parsed from schema-checked payloads.

:func:`~kandev_lsp.intel.surface.validation.validate` checks each field on its own; the rules *between* fields
(``code_symbols`` needs a path or a query, a range's end is not before its start, ``activationLimit`` only
means something with ``activateWorkspace``) are checked here, with the same kind of message.

The mutating tools' rules (B6.16-B6.29): no ``firstMatch`` anywhere (B4.6, :func:`refuse_first_match`,
checked before the schema so the model learns *why*), ``code_replace``'s ``endLine`` makes a line range
from ``target.line`` (never with a symbol, never before the start, B6.27), a batch's targets each follow
the same rules, ``code_rename``'s ``newName`` must be a possible name (:mod:`~kandev_lsp.intel.surface.names`),
and ``{transactionId, approve}`` is the second step of a parked change (:func:`approval_request`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from kandev_lsp.intel.errors import InvalidArguments
from kandev_lsp.intel.reading.output import DEFAULT_LIMIT
from kandev_lsp.intel.reading.targets import Target
from kandev_lsp.intel.surface.names import new_name_problems

__all__ = [
    "PARSERS",
    "ActionsArgs",
    "ApprovalRequest",
    "DiagnosticsArgs",
    "FormatArgs",
    "HierarchyArgs",
    "HoverArgs",
    "InlayHintsArgs",
    "InsertArgs",
    "InsertPosition",
    "NavigateArgs",
    "RenameArgs",
    "ReplaceArgs",
    "ReplaceBatchArgs",
    "SymbolsArgs",
    "approval_request",
    "refuse_first_match",
    "repeated_differences",
]

InsertPosition = Literal["before", "after", "start", "end"]


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
    #: A baseline id of an earlier answer, or "last": the answer adds the delta since it (item 11).
    since: str | None = None


@dataclass(frozen=True, slots=True)
class InlayHintsArgs:
    """``code_inlay_hints``; ``lines`` is the 1-based inclusive line range, None for the whole file."""

    path: str
    root_id: str | None
    lines: tuple[int, int] | None
    limit: int = DEFAULT_LIMIT


@dataclass(frozen=True, slots=True)
class RenameArgs:
    """``code_rename`` (B6.16-B6.17)."""

    target: Target
    new_name: str


@dataclass(frozen=True, slots=True)
class ActionsArgs:
    """``code_actions`` (B6.18-B6.24): list for lines ``line``..``end_line``, or apply ``apply``."""

    path: str
    root_id: str | None
    line: int
    end_line: int
    only: str | None = None
    apply: str | None = None


@dataclass(frozen=True, slots=True)
class FormatArgs:
    """``code_format`` (B6.25); ``lines`` is the 1-based inclusive range, None for the whole file."""

    path: str
    root_id: str | None
    lines: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class InsertArgs:
    """``code_insert`` (B6.26)."""

    target: Target
    position: InsertPosition
    text: str


@dataclass(frozen=True, slots=True)
class ReplaceArgs:
    """``code_replace`` (B6.27-B6.28): the symbol's range, ``target.line``..``end_line``, or the anchor."""

    target: Target
    text: str
    end_line: int | None = None


@dataclass(frozen=True, slots=True)
class ReplaceBatchArgs:
    """``code_replace_batch`` (B6.29): every replacement, in the order given."""

    edits: tuple[ReplaceArgs, ...]


_FIRST_MATCH_REFUSED: Final = (
    "`{where}` is for reads only: a change needs an exact target (B4.6). Drop it; when several symbols "
    "match, name one by the candidate id the ambiguous answer lists, or add target.kind or target.line"
)


def refuse_first_match(tool: str, payload: Mapping[str, Any]) -> None:
    """Refuse ``firstMatch`` wherever a mutation's payload carries it (top level, a target, a batch item).

    :raises InvalidArguments: saying why and what to send instead.
    """
    found: list[str] = []
    if "firstMatch" in payload:
        found.append("firstMatch")
    target = payload.get("target")
    if isinstance(target, Mapping) and "firstMatch" in target:
        found.append("target.firstMatch")
    edits = payload.get("edits")
    for index, item in enumerate(edits if isinstance(edits, list) else []):
        if not isinstance(item, Mapping):
            continue
        if "firstMatch" in item:
            found.append(f"edits[{index}].firstMatch")
        inner = item.get("target")
        if isinstance(inner, Mapping) and "firstMatch" in inner:
            found.append(f"edits[{index}].target.firstMatch")
    if found:
        raise InvalidArguments(tool, [_FIRST_MATCH_REFUSED.format(where=where) for where in found])


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """The second step of a parked change: its transaction, the answer, and the first step's arguments
    the call repeated (a client that enforces the tool's schema must send its required arguments again)."""

    transaction_id: str
    approve: bool
    repeated: Mapping[str, Any]


def approval_request(
    tool: str, payload: Mapping[str, Any], context_id: str | None = None
) -> ApprovalRequest | None:
    """The :class:`ApprovalRequest` when the call is the second step of a parked change, else None.

    The id comes from the payload or from the context (B2.4); ``approve`` must be given explicitly. The
    tool's other arguments may come with it, repeated from the call that previewed the change (MCP clients
    that check calls against the tool's schema send its required arguments every time); the caller checks
    them against that call (:func:`repeated_differences`): the change was fixed when it was previewed.

    :raises InvalidArguments: a malformed second step, with what to send.
    """
    transaction_id = payload.get("transactionId", context_id)
    if transaction_id is None:
        if "approve" in payload:
            raise InvalidArguments(
                tool, ["`approve` answers a pending change: send it with the `transactionId` it returned"]
            )
        return None
    problems: list[str] = []
    if not isinstance(transaction_id, str) or not transaction_id:
        problems.append("`transactionId` must be the non-empty string a needsApproval answer returned")
    approve = payload.get("approve")
    if not isinstance(approve, bool):
        problems.append("send `approve`: true to apply the previewed change, false to discard it")
    if problems:
        raise InvalidArguments(tool, problems)
    assert isinstance(transaction_id, str) and isinstance(approve, bool)
    repeated = {key: value for key, value in payload.items() if key not in ("transactionId", "approve")}
    return ApprovalRequest(transaction_id, approve, repeated)


def repeated_differences(previewed: Mapping[str, Any] | None, repeated: Mapping[str, Any]) -> list[str]:
    """The arguments of a second step that differ from the previewing call's (``previewed``; None when
    that call is not known here), as names to show. Arguments left out are fine; one the first call did not
    have, or with another value, differs: the previewed change is what gets applied, never a changed one.
    """
    if not repeated:
        return []
    if previewed is None:
        return sorted(repeated)
    return sorted(key for key, value in repeated.items() if key not in previewed or previewed[key] != value)


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
        payload.get("since"),
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


def _rename(payload: Mapping[str, Any]) -> RenameArgs:
    new_name = str(payload["newName"])
    problems = new_name_problems(new_name)  # before any server sees it (names.py says what and why)
    if problems:
        raise InvalidArguments("code_rename", problems)
    return RenameArgs(Target.from_json(payload["target"], tool="code_rename"), new_name)


def _actions(payload: Mapping[str, Any]) -> ActionsArgs:
    line = int(payload["line"])
    end_line = _int(payload, "endLine", line)
    if end_line < line:
        raise InvalidArguments("code_actions", [f"`endLine` ({end_line}) is before `line` ({line})"])
    return ActionsArgs(
        payload["path"], payload.get("rootId"), line, end_line, payload.get("only"), payload.get("apply")
    )


def _format(payload: Mapping[str, Any]) -> FormatArgs:
    lines = None
    if payload.get("range") is not None:
        start, end = int(payload["range"]["startLine"]), int(payload["range"]["endLine"])
        if end < start:
            raise InvalidArguments(
                "code_format", [f"`range.endLine` ({end}) is before `range.startLine` ({start})"]
            )
        lines = (start, end)
    return FormatArgs(payload["path"], payload.get("rootId"), lines)


def _insert(payload: Mapping[str, Any]) -> InsertArgs:
    position = payload["position"]
    assert position in ("before", "after", "start", "end")  # the schema's enum
    return InsertArgs(Target.from_json(payload["target"], tool="code_insert"), position, str(payload["text"]))


def _replace_item(item: Mapping[str, Any], tool: str, where: str) -> ReplaceArgs:
    target = Target.from_json(item["target"], tool=tool)
    end_line = item.get("endLine")
    problems = []
    if end_line is not None:
        if target.symbol is not None:
            problems.append(
                f"`{where}endLine` makes a line range from target.line: drop target.symbol (and point with "
                "target.line), or drop endLine to replace the symbol's whole range"
            )
        elif target.line is not None and int(end_line) < target.line:
            problems.append(f"`{where}endLine` ({end_line}) is before `{where}target.line` ({target.line})")
        if target.column is not None:
            problems.append(
                f"`{where}target.column` points inside a line; a line range replaces whole lines: drop it"
            )
        if target.match_text is not None:  # was ignored: the whole lines were replaced (MCP user trial)
            problems.append(
                f"`{where}target.matchText` replaces that text on the line, `{where}endLine` whole lines "
                f"{target.line}..{end_line}: give one of them"
            )
    elif target.symbol is None and target.column is not None and target.match_text is None:
        problems.append(
            f"`{where}target.column` alone marks a position, not text to replace: give target.matchText "
            "(the text on the line to replace), endLine (whole lines), or use code_insert"
        )
    if problems:
        raise InvalidArguments(tool, problems)
    return ReplaceArgs(target, str(item["text"]), int(end_line) if end_line is not None else None)


def _replace(payload: Mapping[str, Any]) -> ReplaceArgs:
    return _replace_item(payload, "code_replace", "")


def _replace_batch(payload: Mapping[str, Any]) -> ReplaceBatchArgs:
    return ReplaceBatchArgs(
        tuple(
            _replace_item(item, "code_replace_batch", f"edits[{index}].")
            for index, item in enumerate(payload["edits"])
        )
    )


#: Tool name -> parser of its (schema-valid) payload.
PARSERS: Final[dict[str, Callable[[Mapping[str, Any]], Any]]] = {
    "code_symbols": _symbols,
    "code_navigate": _navigate,
    "code_hierarchy": _hierarchy,
    "code_hover": _hover,
    "code_diagnostics": _diagnostics,
    "code_inlay_hints": _inlay_hints,
    "code_rename": _rename,
    "code_actions": _actions,
    "code_format": _format,
    "code_insert": _insert,
    "code_replace": _replace,
    "code_replace_batch": _replace_batch,
}
