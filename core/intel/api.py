"""Typed helpers over :meth:`Dispatcher.dispatch` for Python callers (issue 9, "typed helpers on top").

Each method builds the same JSON payload an MCP client would send and goes through the same dispatch:
the same validation, the same ``ok`` / ``error`` results and summaries. Nothing here bypasses a rule: the
mutating helpers preview and ask for approval like any call (pass ``IntelContext(auto_approve=True)`` for
unattended text edits, or answer a ``needsApproval`` result with :meth:`CodeIntel.approve`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from kandev_lsp.intel.reading.targets import Target
from kandev_lsp.intel.surface.dispatch import Dispatcher, IntelContext

__all__ = ["CodeIntel", "HierarchyKind", "InsertPosition", "NavigateKind", "Replacement", "Severity"]

NavigateKind = Literal["definition", "typeDefinition", "declaration", "implementation", "references"]
HierarchyKind = Literal["callers", "callees", "supertypes", "subtypes"]
Severity = Literal["error", "warning", "info", "hint"]
InsertPosition = Literal["before", "after", "start", "end"]
#: One replacement of :meth:`CodeIntel.replace_batch`: the target, the text, and an optional end line.
Replacement = tuple[Target, str, int | None]


def _payload(**fields: Any) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


class CodeIntel:
    """The six read tools as async methods; each returns the tool's result dict."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    async def symbols(
        self,
        path: str | None = None,
        *,
        query: str | None = None,
        root_id: str | None = None,
        limit: int | None = None,
        ctx: IntelContext | None = None,
    ) -> dict[str, Any]:
        """A file's outline (``path``), workspace symbols (``query``), or the file's symbols matching."""
        payload = _payload(path=path, query=query, rootId=root_id, limit=limit)
        return await self.dispatcher.dispatch("symbols", payload, ctx)

    async def navigate(
        self,
        target: Target,
        kind: NavigateKind,
        *,
        include_body: bool | None = None,
        limit: int | None = None,
        context: int | None = None,
        first_match: bool | None = None,
        ctx: IntelContext | None = None,
    ) -> dict[str, Any]:
        """Definitions, declarations, implementations or references of ``target``."""
        payload = _payload(
            target=target.to_json(),
            kind=kind,
            includeBody=include_body,
            limit=limit,
            context=context,
            firstMatch=first_match,
        )
        return await self.dispatcher.dispatch("navigate", payload, ctx)

    async def hierarchy(
        self,
        target: Target,
        kind: HierarchyKind,
        *,
        depth: int | None = None,
        limit: int | None = None,
        first_match: bool | None = None,
        ctx: IntelContext | None = None,
    ) -> dict[str, Any]:
        """Callers, callees, supertypes or subtypes of ``target``, up to ``depth`` levels."""
        payload = _payload(
            target=target.to_json(), kind=kind, depth=depth, limit=limit, firstMatch=first_match
        )
        return await self.dispatcher.dispatch("hierarchy", payload, ctx)

    async def hover(
        self, target: Target, *, first_match: bool | None = None, ctx: IntelContext | None = None
    ) -> dict[str, Any]:
        """Type, signature and documentation of ``target``."""
        payload = _payload(target=target.to_json(), firstMatch=first_match)
        return await self.dispatcher.dispatch("hover", payload, ctx)

    async def diagnostics(
        self,
        path: str | None = None,
        *,
        root_id: str | None = None,
        severity: Severity | None = None,
        limit: int | None = None,
        activate_workspace: bool | None = None,
        activation_limit: int | None = None,
        ctx: IntelContext | None = None,
    ) -> dict[str, Any]:
        """Diagnostics of a file, a root or the workspace."""
        payload = _payload(
            path=path,
            rootId=root_id,
            severity=severity,
            limit=limit,
            activateWorkspace=activate_workspace,
            activationLimit=activation_limit,
        )
        return await self.dispatcher.dispatch("diagnostics", payload, ctx)

    async def inlay_hints(
        self,
        path: str,
        *,
        root_id: str | None = None,
        lines: tuple[int, int] | None = None,
        limit: int | None = None,
        ctx: IntelContext | None = None,
    ) -> dict[str, Any]:
        """Inlay hints of a file, or of ``lines`` (1-based, inclusive)."""
        span = {"startLine": lines[0], "endLine": lines[1]} if lines is not None else None
        payload = _payload(path=path, rootId=root_id, range=span, limit=limit)
        return await self.dispatcher.dispatch("inlay_hints", payload, ctx)

    # -- mutations (B6.16-B6.29): each previews, and applies once approved ---------------------------------
    async def rename(
        self, target: Target, new_name: str, *, ctx: IntelContext | None = None
    ) -> dict[str, Any]:
        """Rename the symbol at ``target`` everywhere (prepareRename first)."""
        return await self.dispatcher.dispatch(
            "rename", {"target": target.to_json(), "newName": new_name}, ctx
        )

    async def actions(
        self,
        path: str,
        line: int,
        *,
        end_line: int | None = None,
        only: str | None = None,
        apply: str | None = None,
        root_id: str | None = None,
        ctx: IntelContext | None = None,
    ) -> dict[str, Any]:
        """List the code actions for lines ``line``..``end_line``, or apply one (an actionId or exact title)."""
        payload = _payload(path=path, rootId=root_id, line=line, endLine=end_line, only=only, apply=apply)
        return await self.dispatcher.dispatch("actions", payload, ctx)

    async def format(
        self,
        path: str,
        *,
        lines: tuple[int, int] | None = None,
        root_id: str | None = None,
        ctx: IntelContext | None = None,
    ) -> dict[str, Any]:
        """Format a file, or ``lines`` of it (1-based, inclusive)."""
        span = {"startLine": lines[0], "endLine": lines[1]} if lines is not None else None
        return await self.dispatcher.dispatch("format", _payload(path=path, rootId=root_id, range=span), ctx)

    async def insert(
        self, target: Target, position: InsertPosition, text: str, *, ctx: IntelContext | None = None
    ) -> dict[str, Any]:
        """Insert ``text`` before/after/at the start/at the end of ``target``."""
        payload = {"target": target.to_json(), "position": position, "text": text}
        return await self.dispatcher.dispatch("insert", payload, ctx)

    async def replace(
        self, target: Target, text: str, *, end_line: int | None = None, ctx: IntelContext | None = None
    ) -> dict[str, Any]:
        """Replace ``target``'s symbol range, its anchor, or the lines ``target.line``..``end_line``."""
        payload = _payload(target=target.to_json(), text=text, endLine=end_line)
        return await self.dispatcher.dispatch("replace", payload, ctx)

    async def replace_batch(
        self, edits: Sequence[Replacement], *, ctx: IntelContext | None = None
    ) -> dict[str, Any]:
        """Several replacements as one atomic change (overlaps refused)."""
        items = [_payload(target=t.to_json(), text=text, endLine=end) for t, text, end in edits]
        return await self.dispatcher.dispatch("replace_batch", {"edits": items}, ctx)

    async def approve(
        self, tool: str, transaction_id: str, approve: bool = True, *, ctx: IntelContext | None = None
    ) -> dict[str, Any]:
        """Apply (``approve``) or discard a change that answered ``needsApproval``."""
        payload = {"transactionId": transaction_id, "approve": approve}
        return await self.dispatcher.dispatch(tool, payload, ctx)
