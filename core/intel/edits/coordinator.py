"""The mutation coordinator: one per workspace, every mutation through one queue (B7.1-B7.5, B3.6-B3.7).

A mutating tool hands :meth:`MutationCoordinator.mutate` its target files and a *producer* (an async
callable that asks the server for the edit: rename, code action, formatting ...). Under the workspace's
one lock the coordinator then:

1. runs the producer and validates its ``WorkspaceEdit`` into an :class:`~kandev_lsp.intel.edits.plan.EditPlan`
   (every URI inside an open root, ranges inside the documents: room A's applier, B3.1, B8.11);
2. previews it and decides approval (B2.4, B7.4): ``autoApprove`` applies at once unless the plan needs
   an explicit yes (resource operations, commands, an incomplete diff); a host that can ask its user
   (``ctx.elicit``, MCP elicitation) is asked with the preview; otherwise the mutation is *parked* as a
   transaction and the result carries ``needsApproval`` + ``transactionId``;
3. on approval (now, or in :meth:`approve`: the model's ``approve: true``, or, when the host can ask its
   user, that person's accept of the same question asked again: a dismissed prompt is never an
   approval), revalidates the bound document versions and the digests of
   the files the preview was made from (B3.6): a file edited since is a conflict, nothing is written;
4. commits atomically (room A), with the diagnostics baseline of the touched files taken before (while
   the person reads the preview, when there is one), tells the servers (``didChangeWatchedFiles`` and
   ``workspace/did{Create,Rename,Delete}Files`` where registered, then ``didChange`` through the pool's
   sync path and ``didSave`` where ``textDocumentSync.save`` asks), runs the commands
   (``workspace/executeCommand``) with the server's own ``workspace/applyEdit`` requests going through
   the same applier (:meth:`apply_server_edit`) and the files a command wrote by itself observed (B6.23),
   then collects the post-edit diagnostics (B7.3);
5. answers with a receipt (B7.5), whatever the outcome: rejected, declined, conflict, failed, uncertain
   (a failed restore, or a command that timed out, B8.8).

An elicitation nobody answers is parked after the approval window; a cancelled call still waits for its
commit's thread before releasing the lock, so no mutation ever starts on half-written files.

Read tools never take the lock (B7.2): only mutations queue behind each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from kandev_lsp.intel.edits.commit import CommitOutcome, FileSystem, commit, disk_text
from kandev_lsp.intel.edits.plan import EditPlan, plan_edit
from kandev_lsp.intel.edits.preview import approval_for, preview
from kandev_lsp.intel.edits.receipts import (
    SaveState,
    diagnostics_delta,
    elsewhere_delta,
    receipt,
    resource_entry,
    unchanged_receipt,
)
from kandev_lsp.intel.edits.transactions import PendingMutation, TransactionError, TransactionStore
from kandev_lsp.intel.errors import IntelError
from kandev_lsp.intel.files.regular import read_regular
from kandev_lsp.intel.files.workspace import Workspace, WorkspaceFile
from kandev_lsp.intel.reading.problems import file_problems
from kandev_lsp.intel.reading.tools import PUBLISH_WAIT, QUIET
from kandev_lsp.intel.runtime.executor import Deadline, ProviderUnavailable
from kandev_lsp.intel.runtime.notices import NO_SERVER
from kandev_lsp.intel.runtime.pool import (
    UNANSWERED,
    ManagedServer,
    ServerMissing,
    ServerPool,
    unanswered_reason,
    unanswered_result,
)
from kandev_lsp.lsp.errors import LspError
from kandev_lsp.lsp.positions import PositionEncoding
from kandev_lsp.session import log_event

if TYPE_CHECKING:
    from kandev_lsp.intel.reading.tools import LspReadTools
    from kandev_lsp.intel.surface.dispatch import Elicit, IntelContext

__all__ = ["MAX_DIAGNOSTIC_FILES", "MutationCoordinator", "ProducedEdit"]

#: Display path -> (problems, freshness of the server's diagnostics for the file's current text).
_Diagnosed = dict[str, tuple[list[dict[str, Any]], str]]

_log = logging.getLogger("kandev_lsp.intel")

#: Touched files whose diagnostics a receipt compares at most (a rename across a large project).
MAX_DIAGNOSTIC_FILES: Final = 40
#: Seconds a command (``workspace/executeCommand``) may take at least, whatever is left of the deadline.
MIN_COMMAND_TIMEOUT: Final = 5.0
#: Files directly in the command's folders (its targets', its server's project root) whose changes a
#: command's run observes at most (B6.23).
MAX_OBSERVED: Final = 2000
#: Seconds post-edit diagnostics may take at least, whatever is left of the call's deadline.
POST_EDIT_WAIT: Final = 5.0
#: Seconds the post-edit window may go on waiting for publications about untouched files to go quiet.
ELSEWHERE_WAIT: Final = 2.0
#: Untouched files whose new publications a receipt compares at most.
MAX_ELSEWHERE_FILES: Final = 200
#: Seconds after a command's answer during which its server's ``workspace/applyEdit`` is still its own.
COMMAND_GRACE: Final = 0.3
_EXECUTE: Final = "workspace/executeCommand"
_WATCHED: Final = "workspace/didChangeWatchedFiles"
#: ``FileChangeType`` values.
_CREATED, _CHANGED, _DELETED = 1, 2, 3


@dataclass(frozen=True, slots=True)
class ProducedEdit:
    """What a tool's producer hands the coordinator.

    :param edit: an LSP ``WorkspaceEdit`` (``{}`` when only a command runs).
    :param commands: LSP ``Command`` values to run after the edit (code actions).
    :param result: the tool's own result fields (``newName``, ``locations`` ...), merged into the answer.
    :param incomplete_diff: the preview cannot show everything (commands): explicit approval (B6.22).
    :param bound: URI -> the document version the edit was made against (revalidated before apply).
    """

    edit: Mapping[str, Any]
    commands: tuple[Mapping[str, Any], ...] = ()
    result: Mapping[str, Any] = field(default_factory=dict)
    incomplete_diff: bool = False
    bound: Mapping[str, int | None] = field(default_factory=dict)


@dataclass(slots=True)
class _CommandRun:
    """A command running under an approval: what the server's ``workspace/applyEdit`` requests did."""

    server: ManagedServer
    text_edits: int = 0
    files: dict[str, WorkspaceFile] = field(default_factory=dict)
    #: Absolute paths the server's edits changed the text of (the result's ``files`` counts them).
    edited: set[str] = field(default_factory=set)
    resources: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    saved: SaveState = "saved"
    #: Server edits being applied now, and when the last one started (monotonic seconds).
    busy: int = 0
    last_activity: float = 0.0

    async def settle(self, grace: float) -> None:
        """Wait until no server edit is being applied and none started for ``grace`` seconds: servers
        send ``workspace/applyEdit`` around their ``executeCommand`` answer, pyright right after it."""
        quiet_since = time.monotonic()
        while True:
            now = time.monotonic()
            if self.busy == 0 and now - max(quiet_since, self.last_activity) >= grace:
                return
            await asyncio.sleep(0.02)


def _digest(path: str) -> str | None:
    """The file's sha256, or None when it cannot be read (a FIFO or device is refused, never waited on)."""
    try:
        return hashlib.sha256(read_regular(path).data or b"").hexdigest()
    except OSError:
        return None


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class MutationCoordinator:
    """The mutation queue of one workspace (see the module docstring).

    :param transactions: where parked mutations wait (a fresh store by default).
    :param reader: the read tools whose diagnostics collection the receipts reuse (built from ``pool``
        by default).
    :param fs: the file system the commits write through (the disk by default; tests inject failures).
    """

    def __init__(
        self,
        workspace: Workspace,
        pool: ServerPool,
        *,
        transactions: TransactionStore | None = None,
        reader: LspReadTools | None = None,
        fs: FileSystem | None = None,
    ) -> None:
        if reader is None:
            from kandev_lsp.intel.reading.tools import LspReadTools

            reader = LspReadTools(pool)
        self.workspace = workspace
        self.pool = pool
        self.transactions = transactions if transactions is not None else TransactionStore()
        self._reader = reader
        self._fs = fs
        self._lock = asyncio.Lock()
        self._command: _CommandRun | None = None
        #: Transaction id -> its diagnostics baseline, taken while the person reads the preview.
        self._early: dict[str, asyncio.Task[_Diagnosed]] = {}
        # Servers started from now on offer workspace.applyEdit and send it here (B6.23).
        pool.edit_applier = self.apply_server_edit

    # -- the two entry points ------------------------------------------------------------------------------
    async def mutate(
        self,
        tool: str,
        files: Sequence[WorkspaceFile],
        produce: Callable[[Deadline], Awaitable[ProducedEdit]],
        ctx: IntelContext,
    ) -> dict[str, Any]:
        """Produce, preview, approve (or park), apply: the result always carries ``receipt``."""
        deadline = Deadline(ctx.deadline)
        started = time.monotonic()
        targets = tuple(files)
        async with self._lock:
            try:
                produced = await produce(deadline)
                server = await self._server_of(targets, deadline)
                encoding = server.encoding if server is not None else PositionEncoding.UTF16
                plan = await asyncio.to_thread(self._plan, produced.edit, encoding)
                approval = approval_for(plan, commands=len(produced.commands))
                view = preview(plan)
            except IntelError as error:
                return self._finish(tool, started, self._rejected(error.to_result(), targets))
            except (ProviderUnavailable, ServerMissing, LspError, ConnectionError) as error:
                return self._finish(tool, started, self._rejected(unanswered_result(error), targets))
            if not plan.files and not plan.resources and not produced.commands:
                result = {
                    **produced.result,
                    "ok": True,
                    "changed": False,
                    "receipt": unchanged_receipt(),
                }
                return self._finish(tool, started, result)
            required = approval.required or produced.incomplete_diff or bool(produced.commands)
            reasons = list(approval.reasons)
            if produced.incomplete_diff and not any("command" in reason for reason in reasons):
                reasons.append("the preview cannot show everything the change does (it runs a command)")
            bound = dict(produced.bound)
            for item in plan.files:
                if item.version is not None:
                    bound[item.file.uri] = item.version
            pending = PendingMutation(
                tool=tool,
                plan=plan,
                digests=plan.digests(),
                bound=bound,
                files=targets,
                commands=tuple(produced.commands),
                result=dict(produced.result),
                preview=view,
                reasons=tuple(reasons),
                continuable=not required,
            )
            if ctx.auto_approve and not required:
                return self._finish(tool, started, await self._apply(pending, ctx, deadline))
            elicit = getattr(ctx, "elicit", None)
            early = self._baseline_soon(pending, ctx)
            if elicit is not None:
                answer = await self._ask(elicit, pending, self.transactions.ttl)
                if answer is True:
                    applied = await self._apply(pending, ctx, Deadline(ctx.deadline), early)
                    return self._finish(tool, started, applied)
                if answer is False:
                    early.cancel()
                    return self._finish(tool, started, self._declined(pending, None))
            transaction_id = self.transactions.put(pending)
            for stale in [t for t in self._early if self.transactions.peek(t) is None]:
                self._early.pop(stale).cancel()  # expired, dropped or forgotten transactions
            self._early[transaction_id] = early
            parked = self._parked(transaction_id, pending, asks_person=elicit is not None)
            return self._finish(tool, started, parked)

    async def approve(self, transaction_id: str, approve: bool, ctx: IntelContext) -> dict[str, Any]:
        """The second step of a parked mutation: apply it (after revalidation) or discard it.

        When the host can ask its user (``ctx.elicit``), the model's ``approve: true`` is only a request:
        the person is asked again with the parked preview, and only their accept applies (B2.4; a
        dismissed prompt is no approval, whoever sends the transaction id). Their decline discards it; a
        dismissed, failed or unanswered prompt leaves it parked. An "approve all" session applies a
        previewable edit without asking, as it would a fresh one (B7.4); resource operations and commands
        are asked whatever the session says. Without ``ctx.elicit`` the model's approval is the approval
        (the headless two-step flow).
        """
        started = time.monotonic()
        async with self._lock:
            try:
                pending = self.transactions.check(transaction_id)
            except TransactionError as error:
                result = {**error.to_result(), "transactionId": transaction_id}
                result["receipt"] = receipt(outcome="rejected")
                return self._finish("approve", started, result)
            elicit = getattr(ctx, "elicit", None)
            if approve and elicit is not None and not (ctx.auto_approve and pending.continuable):
                answer = await self._ask(elicit, pending, self.transactions.remaining(transaction_id))
                if answer is None:
                    still = self._parked(transaction_id, pending, asks_person=True, dismissed=True)
                    return self._finish(pending.tool, started, still)
                approve = answer
            try:
                pending = self.transactions.take(transaction_id)
            except TransactionError as error:  # expired while the person read the question
                result = {**error.to_result(), "transactionId": transaction_id}
                result["receipt"] = receipt(outcome="rejected")
                return self._finish("approve", started, result)
            early = self._early.pop(transaction_id, None)
            if not approve:
                if early is not None:
                    early.cancel()
                self.transactions.settle(transaction_id, "declined")
                return self._finish(pending.tool, started, self._declined(pending, transaction_id))
            result = await self._apply(pending, ctx, Deadline(ctx.deadline), early)
            self.transactions.settle(transaction_id, result["receipt"]["outcome"])
            result["transactionId"] = transaction_id
            return self._finish(pending.tool, started, result)

    async def apply_server_edit(self, server: ManagedServer, edit: Mapping[str, Any]) -> dict[str, Any]:
        """A server's ``workspace/applyEdit``: applied through the same plan and atomic commit, but only
        while a command the user approved runs on that server; returns an ``ApplyWorkspaceEditResult``."""
        run = self._command
        if run is None or run.server is not server:
            return {
                "applied": False,
                "failureReason": (
                    "kandev-lsp applies a server's edit only while running a command the user approved; "
                    "return the edit to the caller instead"
                ),
            }
        run.busy += 1
        run.last_activity = time.monotonic()
        try:
            return await self._apply_for_command(run, server, edit)
        finally:
            run.busy -= 1
            run.last_activity = time.monotonic()

    async def _apply_for_command(
        self, run: _CommandRun, server: ManagedServer, edit: Mapping[str, Any]
    ) -> dict[str, Any]:
        try:
            plan = await asyncio.to_thread(self._plan, edit, server.encoding)
        except IntelError as error:
            run.refused.append(error.message)
            return {"applied": False, "failureReason": error.message}
        outcome = await self._commit(plan)
        if outcome.status != "applied":
            run.refused.append(outcome.message)
            if outcome.status == "uncertain":
                run.saved = "uncertain"
            return {"applied": False, "failureReason": outcome.message}
        run.text_edits += plan.text_edit_count()
        run.edited.update(item.file.absolute for item in plan.files)
        for touched in plan.touched():
            run.files.setdefault(touched.absolute, touched)
        for op in plan.resources:
            run.resources.append({**resource_entry(op), "fromCommand": True})
        await self._announce_safely(plan)
        return {"applied": True}

    # -- steps ---------------------------------------------------------------------------------------------
    def _plan(self, edit: Mapping[str, Any], encoding: PositionEncoding) -> EditPlan:
        if not edit:
            return EditPlan((), (), {})
        return plan_edit(edit, self.workspace, disk_text, encoding)

    async def _commit(self, plan: EditPlan) -> CommitOutcome:
        """The atomic commit, in a thread; a cancelled call still waits for it to end before the lock is
        released (the thread cannot be stopped halfway, and the next mutation must find the files whole)."""
        roots = [root.path for root in self.workspace.roots]  # the real disk anchors at them (B8.11)
        writing = asyncio.ensure_future(asyncio.to_thread(commit, plan, fs=self._fs, roots=roots))
        cancelled = False
        while True:
            try:
                outcome = await asyncio.shield(writing)
                break
            except asyncio.CancelledError:
                if writing.cancelled():
                    raise
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError
        return outcome

    def _baseline_soon(self, pending: PendingMutation, ctx: IntelContext) -> asyncio.Task[_Diagnosed]:
        """Start taking the diagnostics baseline while the person reads the preview: the approval then
        only waits for what is left of it. It stays valid: the apply first checks that no touched file
        changed since the preview (a changed one is a conflict, and nothing is applied)."""
        scope = self._scope(pending.files, pending.plan.touched())
        return asyncio.ensure_future(self._diagnostics(scope, Deadline(ctx.deadline), ctx))

    async def _apply(
        self,
        pending: PendingMutation,
        ctx: IntelContext,
        deadline: Deadline,
        early: asyncio.Task[_Diagnosed] | None = None,
    ) -> dict[str, Any]:
        plan = pending.plan
        conflicts = await self._revalidate(pending)
        if conflicts:
            if early is not None:
                early.cancel()
            return self._conflict(pending, conflicts)
        scope = self._scope(pending.files, plan.touched())
        baseline: _Diagnosed | None = None
        if early is not None and not early.cancelled():
            with contextlib.suppress(Exception):  # then taken afresh below
                baseline = await early
        if baseline is None:
            baseline = await self._diagnostics(scope, deadline, ctx)
        published = self._published()
        outcome = await self._commit(plan)
        if outcome.status == "conflict":
            return self._conflict(pending, list(outcome.conflicts), outcome.message)
        if outcome.status != "applied":
            saved: SaveState = "uncertain" if outcome.status == "uncertain" else "not-saved"
            return {
                **pending.result,
                "ok": False,
                "status": outcome.status,
                "error": outcome.message,
                "receipt": self._receipt(pending, outcome.status, saved=saved),
            }
        sent_at = asyncio.get_running_loop().time()
        await self._announce_safely(plan)
        commands, run = await self._run_commands(pending, deadline)
        extra = tuple(run.files.values()) if run is not None else ()
        # The edit is on disk whatever the clock says: its diagnostics get a short budget of their own.
        report = Deadline(max(deadline.remaining(), POST_EDIT_WAIT))
        unchecked: dict[str, str] = {}
        after = await self._diagnostics(self._scope(scope, extra), report, ctx, unchecked=unchecked)
        status = NO_SERVER if unchecked else _freshness(after)
        # Files a command touched beyond the preview had no baseline: compared only when the command
        # created them (nothing before), otherwise listed as not compared (never all "introduced").
        created = {
            entry.get("newPath", entry["path"])
            for entry in (run.resources if run is not None else [])
            if entry.get("kind") in ("create", "rename")
        }
        compared = {p: items for p, (items, _) in after.items() if p in baseline or p in created}
        delta = diagnostics_delta({p: items for p, (items, _) in baseline.items()}, compared)
        uncompared = sorted(set(after) - set(compared))
        if uncompared:
            delta["uncompared"] = uncompared[:MAX_DIAGNOSTIC_FILES]
        if unchecked:  # no server answered for these: their diagnostics after the edit are not known
            delta["notChecked"] = [{"path": path, "reason": why} for path, why in sorted(unchecked.items())]
        touched_all = {f.display for f in self._scope(scope, extra)} | set(after)
        elsewhere = await self._elsewhere(published, sent_at, touched_all, report)
        delta["elsewhere"] = elsewhere
        failed = [c for c in commands if c.get("status") != "ok"]
        timed_out = [c for c in commands if c.get("status") == "timeout"]
        result: dict[str, Any] = {
            **pending.result,
            "ok": bool(plan.files or plan.resources or (run is not None and run.text_edits)) or not failed,
            "applied": True,
            # What was applied, the server's own edits during a command included (trial C)
            "files": len({item.file.absolute for item in plan.files} | (run.edited if run else set())),
            "edits": plan.text_edit_count() + (run.text_edits if run is not None else 0),
        }
        if failed:
            message = "; ".join(f"{c['command']}: {c['status']} ({c.get('error', '')})" for c in failed)
            result["notice" if result["ok"] else "error"] = f"command failed: {message}"
        warning = _elsewhere_notice(elsewhere)
        if warning:
            result["notice"] = f"{result['notice']}; {warning}" if result.get("notice") else warning
        if timed_out:  # B8.8: the command may still be changing files
            result.update(
                ok=False,
                status="uncertain",
                error=(
                    f"{timed_out[0]['command']} timed out: the server may still be changing files (its later "
                    "edits are refused). Check the touched files (git status, git diff) before going on."
                ),
            )
        saved_state: SaveState = run.saved if run is not None else "saved"
        result["receipt"] = receipt(
            outcome="uncertain" if timed_out else "applied",
            text_edits=plan.text_edit_count() + (run.text_edits if run is not None else 0),
            resources=[resource_entry(op) for op in plan.resources] + (run.resources if run else []),
            commands=commands,
            touched=[f.display for f in plan.touched()] + [f.display for f in extra],
            saved=saved_state,
            diagnostics=delta,
            diagnostics_status=status,
        )
        return result

    def _published(self) -> dict[int, dict[str, Sequence[Any]]]:
        """Every running server's diagnostics now (id(server) -> URI -> diagnostics): the baseline of the
        files the edit does not touch (trial finding A). What it published, and where a pull answered
        since for the text it still has, that pull: typescript-language-server had never published a
        file kandev-lsp's pulls had answered (each pull cancels its own check), so that file's old error
        counted as introduced elsewhere by an edit of another file (a round-3 trial)."""
        known: dict[int, dict[str, Sequence[Any]]] = {}
        for server in self.pool.servers:
            if server.client.closed:
                continue
            snapshot = server.client.endpoint.diagnostics.snapshot()
            found: dict[str, Sequence[Any]] = {uri: entry.diagnostics for uri, entry in snapshot.items()}
            for uri, pulled in self._reader.current_pulls(server).items():
                published = snapshot.get(uri)
                if published is None or published.received_at <= pulled.received_at:
                    found[uri] = pulled.diagnostics
            known[id(server)] = found
        return known

    async def _elsewhere(
        self,
        before: Mapping[int, Mapping[str, Sequence[Any]]],
        since: float,
        touched: set[str],
        deadline: Deadline,
    ) -> dict[str, Any]:
        """Diagnostics the servers published during the post-edit window for files the edit did not
        touch, against what they had published for them before (:func:`elsewhere_delta`).

        A rename that misses a use (Debian gopls renames a concrete method, not the interface it
        implements) breaks a file the edit never touched; the touched files' delta says nothing of it.
        The window goes on (bounded by ELSEWHERE_WAIT) until publications go quiet for QUIET seconds.
        Only push publications are seen: a server that reports only when pulled is not covered."""
        servers = [s for s in self.pool.servers if not s.client.closed]
        loop = asyncio.get_running_loop()
        wait_until = time.monotonic() + min(ELSEWHERE_WAIT, max(deadline.remaining(), 0.0))
        while time.monotonic() < wait_until:
            latest = max(
                (
                    entry.received_at
                    for server in servers
                    for entry in server.client.endpoint.diagnostics.snapshot().values()
                    if entry.received_at >= since
                ),
                default=None,
            )
            if latest is None or loop.time() - latest >= QUIET:
                break
            await asyncio.sleep(0.05)
        earlier: dict[str, list[Any]] = {}
        later: dict[str, list[Any]] = {}
        for server in servers:
            known = before.get(id(server), {})
            for uri, entry in server.client.endpoint.diagnostics.snapshot().items():
                if entry.received_at < since or len(later) >= MAX_ELSEWHERE_FILES:
                    continue
                found = self.workspace.try_uri(uri)
                if not isinstance(found, WorkspaceFile) or found.display in touched:
                    continue
                later[found.display] = list(entry.diagnostics)
                old = known.get(uri)
                if old is not None:
                    earlier[found.display] = list(old)
        return elsewhere_delta(earlier, later)

    async def _revalidate(self, pending: PendingMutation) -> list[str]:
        """Display paths whose disk content or server version moved since the preview (B3.6)."""
        conflicts: list[str] = []
        shown = {item.file.absolute: item.file.display for item in pending.plan.files}
        for path, digest in pending.digests.items():
            if await asyncio.to_thread(_digest, path) != digest:
                conflicts.append(shown.get(path, path))
        for uri, version in pending.bound.items():
            if version is None:
                continue
            found = self.workspace.try_uri(uri)
            if not isinstance(found, WorkspaceFile) or found.display in conflicts:
                continue
            for server in self._servers_owning(found):
                current = server.client.endpoint.documents.current(uri)
                if current is not None and current != version:
                    conflicts.append(found.display)
                    break
        return conflicts

    async def _announce_safely(self, plan: EditPlan) -> None:
        """:meth:`_announce`; a server that fails meanwhile is left to the next call's re-sync (B8.12):
        the files are written, and the receipt must still reach the caller."""
        try:
            await self._announce(plan)
        except (LspError, ProviderUnavailable, ConnectionError, OSError) as error:
            log_event(_log, "intel_mutation_notify_failed", logging.WARNING, error=type(error).__name__)

    async def _announce(self, plan: EditPlan) -> None:
        """Tell the running servers what changed on disk (B3.7): file operations where they registered
        for them; for an open document a full-text ``didChange`` (the pool's sync path) then ``didSave``
        where ``textDocumentSync.save`` asks; for a file the server does not have open, a
        ``workspace/didChangeWatchedFiles`` event where it watches files (it may have read the file from
        disk, as pyright does for imported modules)."""
        events: list[tuple[WorkspaceFile, int]] = []
        for op in plan.resources:
            if op.skipped:
                continue
            for server in self.pool.servers:
                if not server.client.closed:
                    await server.notify_file_operation(op.kind, op.file, op.new_file)
            if op.kind == "create":
                events.append((op.file, _CREATED))
            elif op.kind == "delete":
                events.append((op.file, _DELETED))
            elif op.new_file is not None:
                events += [(op.file, _DELETED), (op.new_file, _CREATED)]
        await self._tell(events, [item.file for item in plan.files])

    async def _tell(self, events: list[tuple[WorkspaceFile, int]], changed: Sequence[WorkspaceFile]) -> None:
        """Announce ``events`` (file, ``FileChangeType``) and the ``changed`` files' new text."""
        opened: list[tuple[ManagedServer, WorkspaceFile]] = []
        for file in changed:
            for server in self._servers_owning(file):
                if file.uri in server.documents and os.path.exists(file.absolute):
                    opened.append((server, file))
                elif file.uri not in server.seen:  # a seen file is announced by refresh() below
                    events.append((file, _CHANGED))
        # Files first, then documents: a document's new text may import a file created or moved just
        # now, and a server that analyses it before hearing of the file reports the import unresolved.
        for server in self.pool.servers:
            owned = [(file, kind) for file, kind in events if server in self._servers_owning(file)]
            if (
                owned
                and not server.client.closed
                and server.client.endpoint.registrations.for_method(_WATCHED)
            ):
                changes = [{"uri": file.uri, "type": kind} for file, kind in owned]
                await server.client.notify(_WATCHED, {"changes": changes})
                for file, _ in owned:
                    server.noted(file.uri, file.display)
        for server, file in opened:
            if not server.client.closed:
                await server.sync(file)  # a full-text didChange with the next version
                await server.notify_saved(file)
        for server in self.pool.servers:
            if not server.client.closed:
                await server.refresh()  # files it saw in answers: didChangeWatchedFiles, or opened afresh

    async def _observe(
        self, run: _CommandRun, before: Mapping[str, tuple[int, int]], folders: Sequence[str]
    ) -> None:
        """B6.23: files a command created, changed or deleted on disk by itself (not through
        ``workspace/applyEdit``) in the folders it was watched in widen the receipt (as inexact
        operations) and the post-edit diagnostics, and the servers are told."""
        after = await asyncio.to_thread(_folder_stamps, folders)
        events: list[tuple[WorkspaceFile, int]] = []
        changed: list[WorkspaceFile] = []
        listed = {
            entry.get("newPath", entry.get("path"))
            for entry in run.resources
            if entry.get("kind") in ("create", "rename")
        }
        for path in sorted(set(before) | set(after)):
            if path in run.files:
                # Written by the applier (already counted), but possibly created by the server itself
                # first: typescript-language-server writes an empty file, then edits it (trial C).
                made = run.files[path]
                if path not in before and path in after and made.display not in listed:
                    run.resources.append(
                        {"kind": "create", "path": made.display, "exact": False, "observed": True}
                    )
                    events.append((made, _CREATED))
                continue
            if before.get(path) == after.get(path):
                continue  # unchanged
            try:
                found: WorkspaceFile | None = self.workspace.from_absolute(path)
            except IntelError:
                found = None
            if not isinstance(found, WorkspaceFile):
                continue
            if path not in before:
                events.append((found, _CREATED))
                run.resources.append(
                    {"kind": "create", "path": found.display, "exact": False, "observed": True}
                )
            elif path not in after:
                events.append((found, _DELETED))
                run.resources.append(
                    {"kind": "delete", "path": found.display, "exact": False, "observed": True}
                )
            else:
                changed.append(found)
            run.files.setdefault(path, found)
        if events or changed:
            await self._tell(events, changed)

    async def _run_commands(
        self, pending: PendingMutation, deadline: Deadline
    ) -> tuple[list[dict[str, Any]], _CommandRun | None]:
        if not pending.commands:
            return [], None
        try:
            server = await self._server_of(pending.files, deadline)
        except (ProviderUnavailable, ServerMissing, LspError, ConnectionError):
            server = None
        if server is None:
            missing = [
                {
                    "command": _command_name(c),
                    "status": "unavailable",
                    "error": "no server for the target file",
                }
                for c in pending.commands
            ]
            return missing, None
        run = _CommandRun(server)
        outcomes: list[dict[str, Any]] = []
        folders = sorted({os.path.dirname(f.absolute) for f in pending.files} | {server.project_root})
        stamps = await asyncio.to_thread(_folder_stamps, folders)
        self._command = run
        try:
            for command in pending.commands:
                before = run.text_edits
                entry: dict[str, Any] = {"command": _command_name(command)}
                params = {
                    "command": command.get("command"),
                    "arguments": list(command.get("arguments") or []),
                }
                try:
                    await server.request(_EXECUTE, params, max(MIN_COMMAND_TIMEOUT, deadline.remaining()))
                    entry["status"] = "ok"
                    await run.settle(COMMAND_GRACE)
                except (TimeoutError, LspError, ProviderUnavailable, ConnectionError) as error:
                    entry["status"] = "timeout" if isinstance(error, TimeoutError) else "error"
                    entry["error"] = getattr(error, "message", None) or str(error) or type(error).__name__
                entry["serverEdits"] = run.text_edits - before
                entry["opaque"] = True  # what a command does besides its applyEdit requests is not seen
                outcomes.append(entry)
        finally:
            self._command = None
        try:
            await self._observe(run, stamps, folders)
        except (LspError, ProviderUnavailable, ConnectionError, OSError) as error:
            log_event(_log, "intel_mutation_notify_failed", logging.WARNING, error=type(error).__name__)
        if run.refused:
            outcomes.append(
                {"command": "workspace/applyEdit", "status": "refused", "error": "; ".join(run.refused)}
            )
        return outcomes, run

    async def _diagnostics(
        self,
        files: Iterable[WorkspaceFile],
        deadline: Deadline,
        ctx: IntelContext,
        *,
        unchecked: dict[str, str] | None = None,
    ) -> _Diagnosed:
        """Display path -> (problems, freshness) for each file with a server; files without one are left
        out (never counted as "resolved"). Freshness follows the reading side's rule (issue 20): the
        server's word on the new text (a publication after it had every change, or a pull), ``quiet``
        when none came and it went silent, else ``stale`` or ``pending`` after PUBLISH_WAIT.

        :param unchecked: gets display path -> why, for each file a language owns whose server did not
            answer (not installed, could not start, gone, not ready): not compared, and said so, where a
            file no language owns (a ``.txt``) has nothing to check.
        """

        async def one(file: WorkspaceFile) -> tuple[str, tuple[list[dict[str, Any]], str]] | None:
            if os.path.isfile(file.absolute) and self.pool.language_of(file.absolute) is None:
                return None  # nothing to check (a deleted or renamed-away file has none left: current)
            try:
                found, encoding = await self._reader.diagnostics_now(file, deadline, ctx, wait=PUBLISH_WAIT)
            except UNANSWERED as error:
                if unchecked is not None:
                    unchecked[file.display] = unanswered_reason(error)
                return None
            publication = found.publication
            if publication is None:
                return file.display, ([], "pending")
            # The reading side's freshness rule (issue 20): a publication after the server had this
            # file's new text and every other change, or a pull; "quiet" when none came and the server
            # went silent; anything else is not the server's word on the new text.
            judged = found.freshness.state if found.freshness is not None else "current"
            state = {"current": "current", "quiet": "quiet", "pending": "pending"}.get(judged, "stale")
            problems = file_problems(file, publication.diagnostics, found.text, encoding)
            return file.display, (problems, state)

        chosen = list({f.absolute: f for f in files}.values())[:MAX_DIAGNOSTIC_FILES]
        answers = await asyncio.gather(*(one(file) for file in chosen))
        return {path: value for path, value in (a for a in answers if a is not None)}

    # -- helpers -------------------------------------------------------------------------------------------
    async def _server_of(self, files: Sequence[WorkspaceFile], deadline: Deadline) -> ManagedServer | None:
        for file in files:
            if self.pool.language_of(file.absolute) is not None:
                return await self.pool.server_for(file, deadline)
        return None

    def _servers_owning(self, file: WorkspaceFile) -> list[ManagedServer]:
        spec = self.pool.language_of(file.absolute)
        if spec is None:
            return []
        return [
            s for s in self.pool.servers if s.language.id == spec.id and _under(file.absolute, s.project_root)
        ]

    @staticmethod
    def _scope(first: Iterable[WorkspaceFile], second: Iterable[WorkspaceFile]) -> tuple[WorkspaceFile, ...]:
        merged: dict[str, WorkspaceFile] = {}
        for file in (*first, *second):
            merged.setdefault(file.absolute, file)
        return tuple(merged.values())

    async def _ask(self, elicit: Elicit, pending: PendingMutation, window: float) -> bool | None:
        """The person's answer to the mutation's question (built from its preview, so the second step
        shows what the first did): True, False, or None when the prompt was dismissed, failed or went
        unanswered for ``window`` seconds (an unanswered question holds every mutation of the workspace)."""
        try:
            return await asyncio.wait_for(
                elicit(self._question(pending.tool, pending), pending.preview), max(window, 0.001)
            )
        except Exception:  # a client that cannot ask (or a person away) gave no approval
            return None

    def _parked(
        self, transaction_id: str, pending: PendingMutation, *, asks_person: bool, dismissed: bool = False
    ) -> dict[str, Any]:
        """The ``needsApproval`` answer of a parked mutation, saying who approves it and how."""
        tool = pending.tool
        call = f'{{"transactionId": "{transaction_id}", "approve": true}}'
        if asks_person:
            step = (
                f"the person did not approve it yet; call {tool} again with {call} to ask them again "
                "(only their accept applies it)"
            )
        else:
            step = f"show the preview; call {tool} again with {call} to apply it"
        parked: dict[str, Any] = {
            **pending.result,
            "ok": True,
            "needsApproval": True,
            "transactionId": transaction_id,
            "expiresInSeconds": round(self.transactions.remaining(transaction_id)),
            "approvalReasons": list(pending.reasons),
            "preview": dict(pending.preview),
            "next": step + ', or "approve": false to discard it',
            "receipt": self._receipt(pending, "pending-approval"),
        }
        if dismissed:
            parked["notice"] = (
                "the approval prompt was dismissed, failed or went unanswered: nothing was written and "
                "the change stays parked; only the person's accept applies it"
            )
        return parked

    @staticmethod
    def _question(tool: str, pending: PendingMutation) -> str:
        """What the person is asked: the tool, the code action (title and kind) and its file, the counts
        (singular or plural), each command by title and name, and why review is needed. A command-only
        action has nothing to preview, so its title is the only account of what it will do (trial C)."""
        plan = pending.plan
        head = tool
        action = pending.result.get("action")
        if isinstance(action, Mapping) and action.get("title"):
            head += f' "{action["title"]}"'
            if action.get("kind"):
                head += f" ({action['kind']})"
        targets = sorted({f.display for f in pending.files})
        if targets:
            head += (
                " on "
                + ", ".join(targets[:5])
                + (f" and {len(targets) - 5} more" if len(targets) > 5 else "")
            )
        steps: list[str] = []
        if plan.files or not pending.commands:
            steps.append(
                f"apply {_plural(plan.text_edit_count(), 'edit')} in {_plural(len(plan.files), 'file')}"
            )
        if plan.resources:
            steps.append(f"{_plural(len(plan.resources), 'file operation')}")
        if pending.commands:
            names = ", ".join(_command_label(c) for c in pending.commands)
            verb = "then run" if steps else "run"
            steps.append(f"{verb} {_plural(len(pending.commands), 'command')}: {names}")
            if not plan.files and not plan.resources:
                steps[-1] += ", with no edit to preview"
        text = f"{head}: " + ", ".join(steps)
        if pending.reasons:
            text += " (" + "; ".join(pending.reasons) + ")"
        return text + "?"

    @staticmethod
    def _receipt(pending: PendingMutation, outcome: str, *, saved: SaveState = "not-saved") -> dict[str, Any]:
        plan = pending.plan
        return receipt(
            outcome=outcome,
            text_edits=plan.text_edit_count(),
            resources=[resource_entry(op) for op in plan.resources],
            commands=[{"command": _command_name(c), "status": "not-run"} for c in pending.commands],
            touched=[f.display for f in plan.touched()],
            saved=saved,
        )

    @staticmethod
    def _rejected(failure: dict[str, Any], files: Sequence[WorkspaceFile]) -> dict[str, Any]:
        failure.setdefault("status", "rejected")
        failure["receipt"] = receipt(outcome="rejected", touched=[f.display for f in files])
        return failure

    def _declined(self, pending: PendingMutation, transaction_id: str | None) -> dict[str, Any]:
        result: dict[str, Any] = {
            "ok": True,
            "declined": True,
            "applied": False,
            "notice": "the change was declined: nothing was written",
            "receipt": self._receipt(pending, "declined"),
        }
        if transaction_id is not None:
            result["transactionId"] = transaction_id
        return result

    def _conflict(
        self, pending: PendingMutation, conflicts: list[str], message: str | None = None
    ) -> dict[str, Any]:
        listed = ", ".join(conflicts)
        return {
            **pending.result,
            "ok": False,
            "status": "conflict",
            "conflicts": conflicts,
            "error": message
            or (
                f"conflict: {listed} changed since the preview (edited on disk, or a newer document "
                "version); nothing was written. Run the mutation again for a fresh preview."
            ),
            "receipt": self._receipt(pending, "conflict"),
        }

    @staticmethod
    def _finish(tool: str, started: float, result: dict[str, Any]) -> dict[str, Any]:
        stamp = result.get("receipt") or {}
        log_event(
            _log,
            "intel_mutation",
            logging.INFO,
            tool=tool,
            ok=result.get("ok"),
            outcome=stamp.get("outcome"),
            edits=stamp.get("textEdits"),
            files=len(stamp.get("touched") or ()),
            duration_ms=round((time.monotonic() - started) * 1000, 1),
        )  # B8.14: counts and states only, never paths or text
        return result


def _folder_stamps(folders: Iterable[str], limit: int = MAX_OBSERVED) -> dict[str, tuple[int, int]]:
    """(mtime, size) of the regular files directly in ``folders`` (bounded): what a command may touch."""
    stamps: dict[str, tuple[int, int]] = {}
    for folder in folders:
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                stamps[os.path.realpath(entry.path)] = (info.st_mtime_ns, info.st_size)
                if len(stamps) >= limit:
                    return stamps
    return stamps


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _command_label(command: Mapping[str, Any]) -> str:
    """``"Move to a new file" (_typescript.applyRefactoring)``: a command's title and its name."""
    title, name = command.get("title"), command.get("command")
    if isinstance(title, str) and title and isinstance(name, str) and name and name != title:
        return f'"{title}" ({name})'
    return f'"{title or name or "command"}"'


def _command_name(command: Mapping[str, Any]) -> str:
    name = command.get("title") or command.get("command")
    return str(name) if name is not None else "command"


def _elsewhere_notice(elsewhere: Mapping[str, Any]) -> str:
    """``1 error introduced elsewhere (main.go:16: missing method Put) ...``, or "" when none was."""
    counts = elsewhere.get("counts") or {}
    errors = counts.get("errors", 0)
    if not errors:
        return ""
    first = next((e for e in elsewhere.get("introduced", ()) if e.get("severity") == "error"), None)
    where = ""
    if first is not None:
        line = f":{first['line']}" if "line" in first else ""
        where = f" ({first['path']}{line}: {first['message'][:120]})"
    noun = "error" if errors == 1 else "errors"
    return (
        f"{errors} {noun} introduced elsewhere, in files the edit did not touch{where}: see "
        "receipt.diagnostics.elsewhere and fix them (or undo the change)"
    )


def _freshness(after: Mapping[str, tuple[list[dict[str, Any]], str]]) -> str:
    states = {state for _, state in after.values()}
    if not after:
        return "not-collected"
    for state in ("pending", "stale", "quiet"):
        if state in states:
            return state
    return "current"
