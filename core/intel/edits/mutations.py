"""The six mutating tools over managed servers (B6.16-B6.29): :class:`MutatingTools` implements
:class:`~kandev_lsp.intel.surface.dispatch.MutationTools`.

Every tool hands the workspace's :class:`~kandev_lsp.intel.edits.coordinator.MutationCoordinator` its
target files and a *producer*; the coordinator runs the producer under the workspace's mutation lock
(B7.1: target resolution, document sync and the server's edit are serialized with every other
mutation), then previews, asks or parks for approval, revalidates, applies atomically and answers with a
receipt. The producers:

* ``code_rename``: ``textDocument/prepareRename`` first when the server offers it; a refusal is returned
  with the server's own words (B6.16, e.g. "You cannot rename this element"); then
  ``textDocument/rename``'s ``WorkspaceEdit`` (B6.17).
* ``code_actions``: listing (no change, no lock) registers opaque, version-bound handles
  (:mod:`~kandev_lsp.intel.edits.actions`); applying takes a handle by id or an exact unique title, refuses a
  disabled or stale one, resolves it (``codeAction/resolve``) when the server left its edit out, and
  hands over its edit and command; a command makes the diff incomplete and the approval explicit (B6.22).
* ``code_format``: ``textDocument/formatting`` or ``rangeFormatting`` with the file's own indentation.
* ``code_insert`` / ``code_replace`` / ``code_replace_batch``: edits placed by
  :mod:`~kandev_lsp.intel.edits.placement`, each bound to the document version its target was resolved in
  (B6.28); a batch resolves every target before anything else and refuses overlaps (B6.29).

Targets are resolved by the read tools' resolver (never with ``firstMatch``, B4.6): an ambiguous symbol
(or a ``matchText`` found more than once on its line) answers with candidates, and nothing is changed. A
call refused before anything was planned answers with the small rejected receipt of
:mod:`~kandev_lsp.intel.surface.rejections` (B7.5), not a receipt of zeros.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from kandev_lsp.intel.edits.actions import (
    ActionHandle,
    ActionNotApplicable,
    ActionRegistry,
    action_entry,
    by_title,
    command_of,
    edit_of,
    needs_resolve,
)
from kandev_lsp.intel.edits.coordinator import MutationCoordinator, ProducedEdit
from kandev_lsp.intel.edits.placement import (
    Placed,
    check_overlaps,
    detect_indentation,
    document_edit,
    insert_at,
    replace_range,
)
from kandev_lsp.intel.errors import IntelError, TargetOutOfRange
from kandev_lsp.intel.files.text import Document
from kandev_lsp.intel.reading.tools import ProviderFailed
from kandev_lsp.intel.runtime.executor import (
    Deadline,
    Outcome,
    ProviderResult,
    ProviderUnsupported,
)
from kandev_lsp.intel.runtime.pool import ManagedServer
from kandev_lsp.intel.surface.arguments import (
    ActionsArgs,
    FormatArgs,
    InsertArgs,
    RenameArgs,
    ReplaceArgs,
    ReplaceBatchArgs,
)
from kandev_lsp.intel.surface.dispatch import IntelContext
from kandev_lsp.intel.surface.rejections import compact_rejection, rejected_receipt

if TYPE_CHECKING:
    from kandev_lsp.intel.reading.tools import LspReadTools

__all__ = ["MAX_RESOLVED_ON_LISTING", "MutatingTools", "RenameRefused"]

#: Unresolved actions a listing resolves at most (their edit/command flags become exact).
MAX_RESOLVED_ON_LISTING: Final = 8
_Producer = Callable[[Deadline], Awaitable[ProducedEdit]]
_WRAPPED: Final = re.compile(r"^Request \S+ failed with message: ")


class RenameRefused(IntelError):
    """The server refused the rename (prepareRename or rename): its reason, as it gave it (B6.16)."""


def _failed(method: str, result: ProviderResult[Any]) -> ProviderFailed:
    status = result.status.value
    return ProviderFailed(
        f"{method}: {status}: {result.error or 'no answer'}", status=status, provider=result.meta()
    )


def _lines_range(document: Document, first: int, last: int, server: ManagedServer) -> dict[str, Any]:
    """The LSP range of 1-based lines ``first``..``last`` (whole lines, breaks excluded)."""
    if last > document.line_count:
        raise TargetOutOfRange(
            f"line {last} is past the end of {document.file.display} ({document.shown_line_count} lines)",
            lineCount=document.shown_line_count,
        )
    end_text = document.line(last - 1)
    return {
        "start": document.lsp_position(first - 1, 0, server.encoding),
        "end": document.lsp_position(last - 1, len(end_text), server.encoding),
    }


def _overlaps(diagnostic: Any, first: int, last: int) -> bool:
    """Whether a diagnostic's lines meet the 0-based lines ``first``..``last``."""
    span = diagnostic.get("range") if isinstance(diagnostic, Mapping) else None
    try:
        start, end = span["start"]["line"], span["end"]["line"]  # type: ignore[index]
    except (TypeError, KeyError):
        return False
    return isinstance(start, int) and isinstance(end, int) and start <= last and end >= first


class MutatingTools:
    """The mutating tools' bodies (see the module docstring).

    :param reads: the read tools whose target resolution, document sync and executor these reuse.
    :param coordinator: the workspace's mutation coordinator.
    :param actions: the code action handles (a fresh registry by default).
    """

    def __init__(
        self,
        reads: LspReadTools,
        coordinator: MutationCoordinator,
        *,
        actions: ActionRegistry | None = None,
    ) -> None:
        self.reads = reads
        self.pool = reads.pool
        self.workspace = reads.workspace
        self.coordinator = coordinator
        self.handles = actions if actions is not None else ActionRegistry()

    # -- shared steps --------------------------------------------------------------------------------------
    async def _mutate(
        self,
        tool: str,
        paths: Sequence[tuple[str, str | None]],
        produce: _Producer,
        ctx: IntelContext,
    ) -> dict[str, Any]:
        """Resolve the target files (B8.11), then hand the producer to the coordinator. A refusal before
        anything was planned carries the small rejected receipt (:mod:`~kandev_lsp.intel.surface.rejections`)."""
        try:
            files = list({f.absolute: f for f in (self.workspace.resolve(p, r) for p, r in paths)}.values())
        except IntelError as error:
            return {**error.to_result(), "status": "rejected", "receipt": rejected_receipt()}
        return compact_rejection(await self.coordinator.mutate(tool, files, produce, ctx))

    async def _ask(
        self,
        server: ManagedServer,
        method: str,
        params: Any,
        deadline: Deadline,
        ctx: IntelContext,
    ) -> ProviderResult[Any]:
        # Mutations never warm up: an empty answer (no edits, no actions) is a real answer here.
        return await self.reads._ask(server, method, params, deadline, ctx, warmup=False)

    async def _value(
        self, server: ManagedServer, method: str, params: Any, deadline: Deadline, ctx: IntelContext
    ) -> Any:
        result = await self._ask(server, method, params, deadline, ctx)
        if not result.ok:
            raise _failed(method, result)
        return result.value

    @staticmethod
    def _require(server: ManagedServer, capability: str, what: str) -> None:
        if not server.offers(capability):
            raise ProviderUnsupported(f"the {server.name} server does not offer {what}")

    # -- code_rename ---------------------------------------------------------------------------------------
    async def rename(self, args: RenameArgs, ctx: IntelContext) -> dict[str, Any]:
        async def produce(deadline: Deadline) -> ProducedEdit:
            server, resolved = await self.reads._target(args.target, False, deadline, ctx)
            self._require(server, "renameProvider", "rename")
            params = {"textDocument": {"uri": resolved.uri}, "position": resolved.position}
            where = f"{resolved.document.file.display}:{resolved.line}:{resolved.column}"
            provider = server.capabilities.get("renameProvider")
            if isinstance(provider, Mapping) and provider.get("prepareProvider"):
                prepared = await self._ask(server, "textDocument/prepareRename", params, deadline, ctx)
                self._refused_or_failed("textDocument/prepareRename", prepared, where)
                if prepared.value is None:
                    raise RenameRefused(
                        f"the {server.name} server cannot rename at {where} (prepareRename answered "
                        "nothing there): point target at the name of a symbol defined in the workspace",
                        status="refused",
                        target=resolved.to_json(),
                    )
            renamed = await self._ask(
                server, "textDocument/rename", {**params, "newName": args.new_name}, deadline, ctx
            )
            self._refused_or_failed("textDocument/rename", renamed, where)
            if not isinstance(renamed.value, Mapping):
                raise RenameRefused(
                    f"the {server.name} server returned no edit for renaming at {where}",
                    status="refused",
                    target=resolved.to_json(),
                )
            return ProducedEdit(
                renamed.value,
                result={"newName": args.new_name, "target": resolved.to_json()},
                bound={resolved.uri: resolved.version},
            )

        target = args.target
        return await self._mutate("code_rename", [(target.path, target.root_id)], produce, ctx)

    @staticmethod
    def _refused_or_failed(method: str, result: ProviderResult[Any], where: str) -> None:
        """A server error answer is its refusal, shown as given (B6.16); other outcomes are failures."""
        if result.ok:
            return
        if result.status is Outcome.ERROR and result.error:
            # The reason as the server gave it; vscode-languageserver wraps a thrown error's message in
            # "Request <method> failed with message: ", which is transport, not reason.
            reason = _WRAPPED.sub("", result.error, count=1) or result.error
            raise RenameRefused(
                reason, status="refused", refusedBy=method, where=where, provider=result.meta()
            )
        raise _failed(method, result)

    # -- code_actions --------------------------------------------------------------------------------------
    async def actions(self, args: ActionsArgs, ctx: IntelContext) -> dict[str, Any]:
        if args.apply is None:
            return await self._list_actions(args, ctx)
        apply = args.apply

        async def produce(deadline: Deadline) -> ProducedEdit:
            file = self.workspace.resolve(args.path, args.root_id)
            server, document = await self.reads._prepare(file, deadline)
            self._require(server, "codeActionProvider", "code actions")
            handle = self.handles.get(apply)
            if handle is not None:
                handle = self.handles.take(apply, file.uri, document.version, display=file.display)
            else:
                listed = await self._fetch_actions(server, document, args, deadline, ctx)
                try:
                    handle = by_title(listed, apply)
                except ActionNotApplicable:
                    if " " not in apply and len(apply) == 12:  # the shape of an id: say it is gone
                        self.handles.take(apply, file.uri, document.version, display=file.display)
                    raise
            if handle.server != id(server):
                raise ActionNotApplicable(
                    f"the {server.name} server was restarted since action {handle.title!r} was listed: "
                    "list the actions again",
                    actionId=handle.action_id,
                    status="stale",
                )
            handle = await self._resolved(server, handle, deadline, ctx)
            edit, command = edit_of(handle.item), command_of(handle.item)
            if edit is None and command is None:
                raise ActionNotApplicable(
                    f"action {handle.title!r} carries neither an edit nor a command (even resolved): "
                    "there is nothing to apply",
                    actionId=handle.action_id,
                )
            return ProducedEdit(
                edit or {},
                commands=(command,) if command is not None else (),
                result={"action": action_entry(handle), "path": file.display},
                incomplete_diff=command is not None,
                bound={file.uri: document.version},
            )

        return await self._mutate("code_actions", [(args.path, args.root_id)], produce, ctx)

    async def _list_actions(self, args: ActionsArgs, ctx: IntelContext) -> dict[str, Any]:
        async def body(deadline: Deadline) -> dict[str, Any]:
            file = self.workspace.resolve(args.path, args.root_id)
            server, document = await self.reads._prepare(file, deadline)
            shown = {"path": file.display, "line": args.line, "endLine": args.end_line}
            if not server.offers("codeActionProvider"):
                return {**shown, "actions": [], "notice": f"the {server.name} server offers no code actions"}
            handles = await self._fetch_actions(server, document, args, deadline, ctx)
            result: dict[str, Any] = {
                **shown,
                "version": document.version,
                "actions": [action_entry(h) for h in handles],
                "next": "apply one with code_actions {path, line, apply: <actionId>}",
            }
            if not handles:
                only = f" of kind {args.only}" if args.only else ""
                result["notice"] = f"the {server.name} server offers no code actions{only} for these lines"
                result.pop("next")
            return result

        return await self.reads._guard("code_actions", {"actions": []}, body, ctx)

    async def _fetch_actions(
        self,
        server: ManagedServer,
        document: Document,
        args: ActionsArgs,
        deadline: Deadline,
        ctx: IntelContext,
    ) -> list[ActionHandle]:
        """Ask for the actions of the lines, resolve a few unresolved ones, and register handles."""
        span = _lines_range(document, args.line, args.end_line, server)
        diagnostics: list[Any] = []
        found = await self.reads._file_diagnostics(server, document, deadline, ctx)
        if found.publication is not None:
            diagnostics = [
                d for d in found.publication.diagnostics if _overlaps(d, args.line - 1, args.end_line - 1)
            ]
        context: dict[str, Any] = {"diagnostics": diagnostics, "triggerKind": 1}
        if args.only:
            context["only"] = [args.only]
        value = await self._value(
            server,
            "textDocument/codeAction",
            {"textDocument": {"uri": document.file.uri}, "range": span, "context": context},
            deadline,
            ctx,
        )
        items = [item for item in value or [] if isinstance(item, Mapping)]
        if args.only:  # servers may answer more than asked: keep the kind and its sub-kinds
            items = [
                item
                for item in items
                if not isinstance(item.get("kind"), str)
                or item["kind"] == args.only
                or item["kind"].startswith(args.only + ".")
            ]
        handles = self.handles.register(document.file.uri, document.version, id(server), items)
        resolved = []
        budget = MAX_RESOLVED_ON_LISTING
        for handle in handles:
            if budget and needs_resolve(handle.item) and handle.disabled is None and self._resolvable(server):
                budget -= 1
                handle = await self._resolved(server, handle, deadline, ctx)
            resolved.append(handle)
        return resolved

    @staticmethod
    def _resolvable(server: ManagedServer) -> bool:
        provider = server.capabilities.get("codeActionProvider")
        return isinstance(provider, Mapping) and bool(provider.get("resolveProvider"))

    async def _resolved(
        self, server: ManagedServer, handle: ActionHandle, deadline: Deadline, ctx: IntelContext
    ) -> ActionHandle:
        """The handle with its item resolved (``codeAction/resolve``, B6.24) when it needs it and can be."""
        if handle.resolved or not needs_resolve(handle.item) or not self._resolvable(server):
            return handle
        value = await self._value(server, "codeAction/resolve", dict(handle.item), deadline, ctx)
        if not isinstance(value, Mapping):
            return handle
        return self.handles.update(handle, value)

    # -- code_format ---------------------------------------------------------------------------------------
    async def format(self, args: FormatArgs, ctx: IntelContext) -> dict[str, Any]:
        async def produce(deadline: Deadline) -> ProducedEdit:
            file = self.workspace.resolve(args.path, args.root_id)
            server, document = await self.reads._prepare(file, deadline)
            params: dict[str, Any] = {
                "textDocument": {"uri": file.uri},
                "options": detect_indentation(document),
            }
            if args.lines is None:
                self._require(server, "documentFormattingProvider", "document formatting")
                method = "textDocument/formatting"
            else:
                self._require(server, "documentRangeFormattingProvider", "range formatting")
                method = "textDocument/rangeFormatting"
                params["range"] = _lines_range(document, args.lines[0], args.lines[1], server)
            value = await self._value(server, method, params, deadline, ctx)
            edits = [edit for edit in value or [] if isinstance(edit, Mapping)]
            result: dict[str, Any] = {"path": file.display}
            if args.lines is not None:
                result["range"] = {"startLine": args.lines[0], "endLine": args.lines[1]}
            return ProducedEdit(
                {"documentChanges": [document_edit(document, edits)]} if edits else {},
                result=result,
                bound={file.uri: document.version},
            )

        return await self._mutate("code_format", [(args.path, args.root_id)], produce, ctx)

    # -- code_insert / code_replace / code_replace_batch ---------------------------------------------------
    async def insert(self, args: InsertArgs, ctx: IntelContext) -> dict[str, Any]:
        async def produce(deadline: Deadline) -> ProducedEdit:
            server, resolved = await self.reads._target(args.target, False, deadline, ctx)
            placed = insert_at(resolved, args.position, args.text, server.encoding)
            return self._produced(
                [placed], {"target": resolved.to_json(), "position": args.position, "at": placed.location()}
            )

        target = args.target
        return await self._mutate("code_insert", [(target.path, target.root_id)], produce, ctx)

    async def replace(self, args: ReplaceArgs, ctx: IntelContext) -> dict[str, Any]:
        async def produce(deadline: Deadline) -> ProducedEdit:
            server, resolved = await self.reads._target(args.target, False, deadline, ctx)
            placed = replace_range(resolved, args.text, args.end_line, server.encoding)
            return self._produced([placed], {"target": resolved.to_json(), "replaced": placed.location()})

        target = args.target
        return await self._mutate("code_replace", [(target.path, target.root_id)], produce, ctx)

    async def replace_batch(self, args: ReplaceBatchArgs, ctx: IntelContext) -> dict[str, Any]:
        async def produce(deadline: Deadline) -> ProducedEdit:
            placed: list[Placed] = []
            targets: list[dict[str, Any]] = []
            versions: dict[str, int | None] = {}
            for item in args.edits:  # every target first (B6.29)
                server, resolved = await self.reads._target(item.target, False, deadline, ctx)
                seen = versions.setdefault(resolved.uri, resolved.version)
                if seen != resolved.version:
                    raise IntelError(
                        f"{resolved.document.file.display} changed while the batch's targets were resolved "
                        f"(version {seen}, then {resolved.version}): nothing was changed; send it again",
                        status="conflict",
                    )
                placed.append(replace_range(resolved, item.text, item.end_line, server.encoding))
                targets.append(resolved.to_json())
            check_overlaps(placed, [f"edits[{i}]" for i in range(len(placed))])
            locations = [
                {"index": index, **each.location(), "target": target}
                for index, (each, target) in enumerate(zip(placed, targets, strict=True))
            ]
            return self._produced(placed, {"locations": locations})

        paths = [(item.target.path, item.target.root_id) for item in args.edits]
        return await self._mutate("code_replace_batch", paths, produce, ctx)

    @staticmethod
    def _produced(placed: Sequence[Placed], result: Mapping[str, Any]) -> ProducedEdit:
        """One ``WorkspaceEdit`` of every placed edit, a ``TextDocumentEdit`` per document, each bound to
        its version (B6.28)."""
        documents: dict[str, tuple[Document, list[dict[str, Any]]]] = {}
        for item in placed:
            documents.setdefault(item.document.file.uri, (item.document, []))[1].append(item.edit)
        changes = [document_edit(document, edits) for document, edits in documents.values()]
        return ProducedEdit(
            {"documentChanges": changes},
            result=dict(result),
            bound={uri: document.version for uri, (document, _) in documents.items()},
        )

    # -- the second step -----------------------------------------------------------------------------------
    async def approve(
        self, tool: str, transaction_id: str, approve: bool, ctx: IntelContext
    ) -> dict[str, Any]:
        """Apply (after revalidation) or discard a parked change (B2.4); the coordinator's answer.

        A transaction answers to the tool that previewed it: another tool's call is refused without
        consuming it (the model mixed up its calls; the right one can still approve it).
        """
        pending = self.coordinator.transactions.peek(transaction_id)
        if pending is not None and pending.tool != tool:
            return {
                "ok": False,
                "status": "rejected",
                "error": f"transaction {transaction_id!r} is a pending {pending.tool} change, not a {tool} "
                f"one: call {pending.tool} with it (it is still pending)",
                "transactionId": transaction_id,
                "receipt": rejected_receipt(),
            }
        return compact_rejection(await self.coordinator.approve(transaction_id, approve, ctx))
