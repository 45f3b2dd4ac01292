"""The six read tools over managed servers: :class:`LspReadTools` implements
:class:`~kandev_lsp.intel.surface.dispatch.ReadTools` with the :class:`~kandev_lsp.intel.runtime.pool.ServerPool`.

Every tool call follows one path: resolve the path inside the workspace (B8.11), get the file's server
(a missing one becomes a notice, B8.9-B8.10), re-sync what changed on disk, wait for readiness within the
call's one deadline (B8.3), then ask through the executor (B8.1-B8.4) and shape the answer with the pure
modules. Each result carries a ``provider`` block (status, duration, attempts, warm-up) and an
``unavailable`` / ``timeout`` / ``error`` outcome becomes ``ok: false`` with what the server reported.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import stat
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

from kandev_lsp.intel.errors import IntelError, SymbolNotFound
from kandev_lsp.intel.files.text import Document, StampedTexts, TextCache
from kandev_lsp.intel.files.workspace import WorkspaceFile
from kandev_lsp.intel.reading import tsserver
from kandev_lsp.intel.reading.baselines import MAX_BASELINES, Baseline, Baselines
from kandev_lsp.intel.reading.deltas import diagnostics_delta
from kandev_lsp.intel.reading.freshness import Activity, Freshness, Publication, file_freshness
from kandev_lsp.intel.reading.graph import GraphBudgets, traverse
from kandev_lsp.intel.reading.hints import inlay_hints, request_range
from kandev_lsp.intel.reading.hover import hover_text
from kandev_lsp.intel.reading.outline import document_outline, workspace_symbols
from kandev_lsp.intel.reading.output import LocationOptions, build_locations, locate
from kandev_lsp.intel.reading.snapshots import FileDiagnostics, diagnostic_snapshot
from kandev_lsp.intel.reading.symbols import SymbolEntry, SymbolTree, SymbolTrees, enclosing_symbol
from kandev_lsp.intel.reading.targets import (
    ResolvedTarget,
    Target,
    base_anchors,
    member_of_class,
    resolve_target,
)
from kandev_lsp.intel.runtime.executor import (
    Deadline,
    ProviderResult,
    ProviderUnavailable,
    ProviderUnsupported,
    run_provider,
)
from kandev_lsp.intel.runtime.notices import NO_SERVER, no_server_answer
from kandev_lsp.intel.runtime.pathmemo import PlacedTargets
from kandev_lsp.intel.runtime.pool import (
    UNANSWERED,
    ManagedServer,
    ServerMissing,
    ServerPool,
    unanswered_reason,
    unanswered_result,
)
from kandev_lsp.intel.runtime.watch import skipped_folder
from kandev_lsp.intel.surface.arguments import (
    DiagnosticsArgs,
    HierarchyArgs,
    HoverArgs,
    InlayHintsArgs,
    NavigateArgs,
    SymbolsArgs,
)
from kandev_lsp.intel.surface.dispatch import IntelContext
from kandev_lsp.lsp.errors import LspError
from kandev_lsp.lsp.positions import PositionEncoding
from kandev_lsp.session import log_event

__all__ = ["LspReadTools", "ProviderFailed"]

_log = logging.getLogger("kandev_lsp.intel")

NAVIGATE_METHODS: Final = {
    "definition": ("textDocument/definition", "definitionProvider"),
    "typeDefinition": ("textDocument/typeDefinition", "typeDefinitionProvider"),
    "declaration": ("textDocument/declaration", "declarationProvider"),
    "implementation": ("textDocument/implementation", "implementationProvider"),
    "references": ("textDocument/references", "referencesProvider"),
}
#: Seconds of quiet after the last publication before published diagnostics count as settled.
QUIET: Final = 0.5
#: Longest wait for published diagnostics of the current version (within the deadline).
PUBLISH_WAIT: Final = 5.0
#: Seconds of the call's deadline kept for answering when diagnostics are awaited until it.
ANSWER_MARGIN: Final = 0.25
#: How often a wait for diagnostics looks again.
POLL: Final = 0.02
#: Seconds within which an idle server answers a fence (a quiet verdict needs one, see ManagedServer.idle).
PROMPT: Final = 0.25
#: Files scanned at most when counting or activating eligible files of a root.
SCAN_LIMIT: Final = 5000


class ProviderFailed(IntelError):
    """A server read ended ``timeout``, ``error``, ``cancelled`` or ``unavailable`` (B8.1)."""


def _failed(method: str, result: ProviderResult[Any]) -> ProviderFailed:
    status = result.status.value
    return ProviderFailed(
        f"{method}: {status}: {result.error or 'no answer'}", status=status, provider=result.meta()
    )


class LspReadTools:
    """The read tools' bodies over a :class:`ServerPool`."""

    def __init__(self, pool: ServerPool) -> None:
        self.pool = pool
        self.workspace = pool.workspace
        #: Texts of files not open in a server (snippets, bodies), kept across calls by disk stamp.
        self.disk = StampedTexts()
        #: ``documentSymbol`` answers per (server, URI), used while the server has the same document text.
        self.symbol_trees = SymbolTrees()
        #: When each (server, URI) was first opened by a tool call (monotonic): a server ready for long
        #: may still be loading a document (its project) it was just sent, so warm-up restarts there.
        self.opened: dict[tuple[int, str], float] = {}
        #: Target paths' checks and servers, trusted again while the server's disk watch vouches for them.
        self.targets: PlacedTargets[ManagedServer] = PlacedTargets(self.workspace)
        #: Diagnostics baselines handed out by code_diagnostics (``since``, issue 20 item 11).
        self.baselines = Baselines()
        #: One source file per language found in each root (workspace symbols start their servers).
        self._languages: dict[str, list[str]] = {}
        #: Each server's latest pulled report per URI (id(server) -> URI -> report), newest last.
        self._pulls: dict[int, dict[str, _Pulled]] = {}

    # -- shared steps --------------------------------------------------------------------------------------
    async def _ask(
        self,
        server: ManagedServer,
        method: str,
        params: Any,
        deadline: Deadline,
        ctx: IntelContext,
        *,
        warmup: bool = True,
    ) -> ProviderResult[Any]:
        server.in_flight += 1
        try:
            return await run_provider(
                lambda timeout: server.request(method, params, timeout),
                deadline,
                warmup=warmup,
                cancel=ctx.cancel,
                label=method,
                ready_for=self._ready_for(server, params) if warmup else None,
                self_timed=True,  # the server's LspClient times its requests out itself
            )
        finally:
            server.in_flight -= 1
            server.last_used = time.monotonic()

    async def _value(
        self,
        server: ManagedServer,
        method: str,
        params: Any,
        deadline: Deadline,
        ctx: IntelContext,
        **kw: Any,
    ) -> tuple[Any, dict[str, Any]]:
        result = await self._ask(server, method, params, deadline, ctx, **kw)
        if not result.ok:
            raise _failed(method, result)
        return result.value, result.meta()

    def _ready_for(self, server: ManagedServer, params: Any) -> float | None:
        """Seconds ``server`` has been ready for what ``params`` asks about: since its readiness (B8.2's
        warm-up window, :data:`~kandev_lsp.intel.runtime.executor.WARMUP_WINDOW`), or since the document was first
        opened there when that is later. None when the server's readiness time is not known."""
        tracker = server.client.readiness
        if tracker is None or tracker.ready_at is None:
            return None
        ready_for = max(0.0, server.client.now() - tracker.ready_at)
        document = params.get("textDocument") if isinstance(params, dict) else None
        uri = document.get("uri") if isinstance(document, dict) else None
        opened = self.opened.get((id(server), uri)) if isinstance(uri, str) else None
        if opened is not None:
            ready_for = min(ready_for, max(0.0, time.monotonic() - opened))
        return ready_for

    async def _prepare(self, file: WorkspaceFile, deadline: Deadline) -> tuple[ManagedServer, Document]:
        server = await self.pool.server_for(file, deadline)
        server.in_flight += 1
        try:
            await server.refresh()
            return server, await self._open(server, file, deadline)
        finally:
            server.in_flight -= 1

    async def _open(self, server: ManagedServer, file: WorkspaceFile, deadline: Deadline) -> Document:
        """The file as ``server`` has it, once the server is ready. Call right after the re-sync (no
        await between): the disk watch's word from its drain then spares :meth:`ManagedServer.sync`."""
        document = server.watched_document(file)
        if document is None:
            if file.uri not in server.documents:
                key = (id(server), file.uri)
                if key not in self.opened and len(self.opened) >= _MAX_OPENED:
                    self.opened.pop(next(iter(self.opened)))
                self.opened[key] = time.monotonic()
            document = await server.sync(file)
        await server.wait_ready(deadline)
        return document

    async def _prepare_path(
        self, path: str, root_id: str | None, deadline: Deadline
    ) -> tuple[WorkspaceFile, ManagedServer, Document]:
        """:meth:`_prepare` of an agent's path: the path check (B8.11), the file's server and its re-sync.

        The check and the server's lookup are remembered while the server's disk watch vouches for them
        (:class:`~kandev_lsp.intel.runtime.pathmemo.PlacedTargets`): a repeated target then costs the re-sync's
        drain and the roots' ``lstat`` calls. The memory is asked after the drain and before the file is
        read, so a path that changed is checked in full first.
        """
        known = self.targets.known(path, root_id)
        if known is not None and self.pool.current(known[1]):
            file, server = known
            server.in_flight += 1
            try:
                await server.refresh()
                if self.targets.vouched(path, root_id):
                    return file, server, await self._open(server, file, deadline)
            finally:
                server.in_flight -= 1
        record = self.targets.checking(path, root_id)
        file = self.workspace.resolve(path, root_id)
        server, document = await self._prepare(file, deadline)
        record(file, server)
        return file, server, document

    async def _symbols(
        self, server: ManagedServer, document: Document, deadline: Deadline, ctx: IntelContext
    ) -> SymbolTree:
        """The document's symbol tree: asked once per document text the server has (re-synced first by
        the caller), then reused by later calls until the text changes (:class:`SymbolTrees`)."""
        key = (id(server), document.file.uri)
        tree = self.symbol_trees.get(key, document)
        if tree is None:
            value, _ = await self._value(
                server,
                "textDocument/documentSymbol",
                {"textDocument": {"uri": document.file.uri}},
                deadline,
                ctx,
            )
            tree = self.symbol_trees.put(key, document, value)
        return tree

    async def _target(
        self, target: Target, first_match: bool, deadline: Deadline, ctx: IntelContext
    ) -> tuple[ManagedServer, ResolvedTarget]:
        _, server, document = await self._prepare_path(target.path, target.root_id, deadline)
        symbols = None
        if target.symbol is not None:
            symbols = (await self._symbols(server, document, deadline, ctx)).entries
        try:
            return server, resolve_target(target, document, symbols, server.encoding, first_match=first_match)
        except SymbolNotFound:
            if target.symbol is None or symbols is None:
                raise
            found = await self._inherited(server, document, symbols, target, first_match, deadline, ctx)
            if found is None:
                raise
            return server, found

    async def _inherited(
        self,
        server: ManagedServer,
        document: Document,
        symbols: Sequence[SymbolEntry],
        target: Target,
        first_match: bool,
        deadline: Deadline,
        ctx: IntelContext,
        depth: int = 0,
    ) -> ResolvedTarget | None:
        """``Class.member`` not in the document: the member as one of the class's bases declares it,
        found by following the names of the class header with ``textDocument/definition`` (issue 20 item
        8: ``Group.invoke`` in click is ``MultiCommand.invoke``), in this file or another one of the
        workspace; bases of bases up to :data:`_BASE_DEPTH` levels. The resolved target names the base's
        member (its ``qualifiedName`` and path say where it was found)."""
        assert target.symbol is not None
        found = member_of_class(target.symbol, symbols)
        if found is None or depth >= _BASE_DEPTH:
            return None
        owner, member = found
        lookup = server.uri_lookup(self.workspace)
        for line, index in base_anchors(owner, document, server.encoding)[:_MAX_BASES]:
            position = document.lsp_position(line, index, server.encoding)
            result = await self._ask(
                server,
                "textDocument/definition",
                {"textDocument": {"uri": document.file.uri}, "position": position},
                deadline,
                ctx,
                warmup=False,
            )
            if not result.ok:
                continue
            for file, spans in locate(result.value, lookup).by_path.values():
                base_document = document if file.uri == document.file.uri else await server.sync(file)
                base_symbols = (await self._symbols(server, base_document, deadline, ctx)).entries
                base = enclosing_symbol(base_symbols, min(spans)[0]) if spans else None
                if base is None or base.kind not in _CLASS_KIND_NUMBERS:
                    continue
                inherited = dataclasses.replace(
                    target,
                    path=file.display,
                    root_id=file.root.id,
                    symbol=f"{base.qualified_name}.{member}",
                    line=None,
                )
                try:
                    resolved = resolve_target(
                        inherited, base_document, base_symbols, server.encoding, first_match=first_match
                    )
                    return dataclasses.replace(resolved, confidence="inherited")
                except SymbolNotFound:
                    deeper = await self._inherited(
                        server, base_document, base_symbols, inherited, first_match, deadline, ctx, depth + 1
                    )
                    if deeper is not None:
                        return deeper
        return None

    def _add_scope(self, result: dict[str, Any], server: ManagedServer, path: str) -> None:
        """Say which project a search for uses covered when the workspace holds more than it.

        Each project root gets its own server, whose workspace folder is that root (B8.6): its references,
        implementations, callers and subtypes come from that project alone. A workspace of several roots,
        or a root holding several projects (a monorepo's packages), may use the symbol elsewhere: the
        result says so instead of reading as the whole answer. So does a search from a file (``path``)
        that the TypeScript server holds in an inferred project (no ``tsconfig.json`` above it: an npm
        package as published): it covered the open files and their imports only.
        """
        self._add_inferred(result, server, path)
        roots = self.workspace.roots
        project = server.project_root
        if len(roots) == 1 and project == roots[0].path:
            return
        try:
            shown = self.workspace.from_absolute(project).display
        except IntelError:  # the project folder was swapped for a link out of the workspace since
            shown = os.path.basename(project)
        others = [root.id for root in roots if not _within(project, root.path)]
        elsewhere = f"the other roots ({', '.join(others)}) and " if others else ""
        result["searchedProject"] = shown
        _add_notice(
            result,
            f"searched the {server.language.id} project at {shown} only (each project root has its own "
            f"language server): uses in {elsewhere}other projects are not included; ask with a target "
            "in a file there to search that project",
        )

    def _add_inferred(self, result: dict[str, Any], server: ManagedServer, *paths: str) -> None:
        """Flag a search of the TypeScript server that one of ``paths`` (the files it searched from) ran
        in an inferred project: it saw the open files and their imports only. Once per result."""
        if result.get("inferredProject") or not tsserver.offers_pull(server.capabilities):
            return
        root = server.project_root
        first_per_folder: dict[str, str] = {}
        for path in paths:  # a file's project depends on its folder only: one walk up per folder
            first_per_folder.setdefault(os.path.dirname(path), path)
        inferred = next(
            (path for path in first_per_folder.values() if tsserver.configured_project(path, root) is None),
            None,
        )
        if inferred is None:
            return
        try:
            shown = self.workspace.from_absolute(inferred).display
        except IntelError:  # swapped for a link out of the workspace since
            shown = os.path.basename(inferred)
        result["inferredProject"] = True
        _add_notice(
            result,
            f"no tsconfig.json or jsconfig.json applies to {shown}, so the TypeScript server holds it in an "
            "inferred project: only the open files and what they import were searched, and uses in other "
            "files are missing; add a tsconfig.json (with include) at the project's root for complete answers",
        )

    def _texts(self, server: ManagedServer) -> TextCache:
        return TextCache(server.open_documents(), disk=self.disk, stamps=server.checked)

    @staticmethod
    def _deadline(ctx: IntelContext) -> Deadline:
        return Deadline(ctx.deadline)

    async def _guard(
        self,
        tool: str,
        empty: dict[str, Any],
        body: Callable[[Deadline], Awaitable[dict[str, Any]]],
        ctx: IntelContext,
    ) -> dict[str, Any]:
        """Run ``body``; a missing server gives the :data:`NO_SERVER` answer with its notice, an unavailable
        one ``ok: false``."""
        deadline = self._deadline(ctx)
        started = time.monotonic()
        try:
            result = await body(deadline)
        except ServerMissing as missing:
            result = no_server_answer(tool, empty, missing.notice)
        except (ProviderUnavailable, LspError, ConnectionError) as error:  # not ready, or gone mid-call
            result = unanswered_result(error)
        if not _log.isEnabledFor(logging.INFO):  # the fields are not even gathered (issue 9 overhead)
            return result
        log_event(
            _log,
            "intel_tool",
            logging.INFO,
            tool=tool,
            ok=result.get("ok", True),
            status=result.get("status", "ok"),
            duration_ms=round((time.monotonic() - started) * 1000, 1),
            attempts=(result.get("provider") or {}).get("attempts"),
            total=result.get("totalFound"),
            shown=result.get("shown"),
            coverage=(result.get("coverage") or {}).get("kind"),
            ready=False if result.get("readiness") else None,
        )  # B8.14: counts, states and durations only, never paths, source text or messages
        return result

    # -- code_symbols --------------------------------------------------------------------------------------
    async def symbols(self, args: SymbolsArgs, ctx: IntelContext) -> dict[str, Any]:
        async def body(deadline: Deadline) -> dict[str, Any]:
            if args.path is not None:
                file, server, document = await self._prepare_path(args.path, args.root_id, deadline)
                tree = await self._symbols(server, document, deadline, ctx)
                return {
                    "path": file.display,
                    **document_outline(tree.value, limit=args.limit, query=args.query, entries=tree.entries),
                }
            assert args.query is not None
            servers, skipped = await self._workspace_servers(deadline)
            answers: list[Any] = []
            answered = 0
            failure: ProviderUnavailable | ProviderFailed | None = None
            for server in servers:
                try:
                    await server.wait_ready(deadline)
                    value, _ = await self._value(
                        server, "workspace/symbol", {"query": args.query}, deadline, ctx, warmup=False
                    )
                except (ProviderUnavailable, ProviderFailed) as error:
                    failure = error
                    skipped[server.language.id] = error.message
                    continue
                answered += 1
                if isinstance(value, list):
                    answers.extend(value)
            if not answered and failure is not None:
                raise failure  # nothing was searched: not ready, never an empty answer
            out = {
                "query": args.query,
                **workspace_symbols(answers, self.workspace, args.query, limit=args.limit),
                "languages": sorted({s.language.id for s in servers} - skipped.keys()),
            }
            for server in servers:  # tsserver searches the projects its open files loaded
                if server.language.id not in skipped:
                    self._add_inferred(out, server, *server.open_documents())
            if skipped:  # issue 20 item 9: a language whose server could not answer is named, never dropped
                out["notSearched"] = [
                    {"language": lang, "reason": why} for lang, why in sorted(skipped.items())
                ]
                _add_notice(  # after an inferred project's advice, never in place of it
                    out,
                    "not searched: " + "; ".join(f"{lang} ({why})" for lang, why in sorted(skipped.items())),
                )
                if not servers:  # no server answered: never an empty answer's "no symbols"
                    out["status"] = NO_SERVER
            return out

        empty = {"symbols": [], "totalFound": 0, "shown": 0, "truncated": False}
        return await self._guard("code_symbols", empty, body, ctx)

    async def _workspace_servers(self, deadline: Deadline) -> tuple[list[ManagedServer], dict[str, str]]:
        """A server for every language found in the roots (started when none runs, B6.2), and the
        languages that have none, with why (issue 20 item 9: only running servers were asked, so a
        TypeScript match vanished once a Python call had started pyright)."""
        servers: dict[int, ManagedServer] = {}
        skipped: dict[str, str] = {}
        missing: ServerMissing | None = None
        unavailable: ProviderUnavailable | None = None
        for root in self.workspace.roots:
            for path in await self._language_files(root.path):
                file = self.workspace.from_absolute(path)
                spec = self.pool.language_of(path)
                if spec is None:
                    continue
                try:
                    server = await self.pool.server_for(file, deadline)
                except ServerMissing as error:
                    missing = error
                    skipped[spec.id] = error.notice
                    continue
                except ProviderUnavailable as error:
                    unavailable = error
                    skipped[spec.id] = error.message
                    continue
                if id(server) not in servers:
                    await server.sync(file)  # tsserver loads a project only for an open file
                    servers[id(server)] = server
        found = list(servers.values())
        for server in self.pool.servers:  # servers other calls started for projects the scan did not reach
            if id(server) not in servers:
                found.append(server)
        if not found and unavailable is not None:
            raise unavailable  # nothing could be searched: not ready yet, never an empty answer
        if not found and missing is not None and len(skipped) == 1:
            raise missing
        for server in found:
            skipped.pop(server.language.id, None)
        return found, skipped

    async def _language_files(self, root: str) -> list[str]:
        """One source file per language of ``root`` (the first of each, within the first 200 files),
        found once per session and root."""
        known = self._languages.get(root)
        if known is None:
            known = []
            seen: set[str] = set()
            for path in await asyncio.to_thread(_source_files, root, self.pool, 200):
                spec = self.pool.language_of(path)
                if spec is not None and spec.id not in seen:
                    seen.add(spec.id)
                    known.append(path)
            self._languages[root] = known
        return [path for path in known if os.path.isfile(path)]

    # -- code_navigate -------------------------------------------------------------------------------------
    async def navigate(self, args: NavigateArgs, ctx: IntelContext) -> dict[str, Any]:
        method, capability = NAVIGATE_METHODS[args.kind]

        async def body(deadline: Deadline) -> dict[str, Any]:
            server, resolved = await self._target(args.target, args.first_match, deadline, ctx)
            params: dict[str, Any] = {"textDocument": {"uri": resolved.uri}, "position": resolved.position}
            if args.kind == "references":
                params["context"] = {"includeDeclaration": True}
            asked, fallback = method, None
            if not server.offers(capability):
                if args.kind != "declaration" or not server.offers("definitionProvider"):
                    raise ProviderUnsupported(_unsupported_navigation(server, method, args.kind))
                # tsserver and gopls offer no declaration: their definition is where a name is declared.
                asked, fallback = NAVIGATE_METHODS["definition"][0], "definition"
            value, meta = await self._value(server, asked, params, deadline, ctx)
            located = locate(value, server.uri_lookup(self.workspace))
            texts = self._texts(server)
            files = located.files
            server.saw(files)
            outline_cache: dict[str, list[Any]] = {}

            def body_range(file: WorkspaceFile, span: dict[str, Any]) -> dict[str, Any] | None:
                entries = outline_cache.get(file.absolute)
                if entries is None:
                    return None
                start = span["start"]
                named = [e for e in entries if e.selection_range.get("start") == start]  # the symbol itself
                holder = named[0] if named else enclosing_symbol(entries, start["line"])
                return holder.range if holder is not None else None

            if args.include_body:  # declarations' ranges from each file's symbols (10 files at most)
                for file in files[:10]:
                    synced = await server.sync(file)
                    outline_cache[file.absolute] = (
                        await self._symbols(server, synced, deadline, ctx)
                    ).entries
                texts = self._texts(server)
            locations = build_locations(
                located,
                texts,
                server.encoding,
                LocationOptions(args.limit, args.context, args.include_body),
                body_range=body_range,
            )
            out = {"kind": args.kind, "target": resolved.to_json(), **locations, "provider": meta}
            if fallback is not None:
                out["fallback"] = fallback
                out["notice"] = (
                    f"the {server.name} server does not offer {method}: these are its definitions "
                    "(textDocument/definition), which for this language is where the name is declared"
                )
            if args.kind in _USES:
                self._add_scope(out, server, resolved.document.file.absolute)
            return out

        empty = {"kind": args.kind, "files": [], "totalFound": 0, "shown": 0, "truncated": False}
        return await self._guard("code_navigate", empty, body, ctx)

    # -- code_hierarchy ------------------------------------------------------------------------------------
    async def hierarchy(self, args: HierarchyArgs, ctx: IntelContext) -> dict[str, Any]:
        calls = args.kind in ("callers", "callees")
        prepare = "textDocument/prepareCallHierarchy" if calls else "textDocument/prepareTypeHierarchy"
        expand_method = {
            "callers": "callHierarchy/incomingCalls",
            "callees": "callHierarchy/outgoingCalls",
            "supertypes": "typeHierarchy/supertypes",
            "subtypes": "typeHierarchy/subtypes",
        }[args.kind]

        async def body(deadline: Deadline) -> dict[str, Any]:
            server, resolved = await self._target(args.target, args.first_match, deadline, ctx)
            capability = "callHierarchyProvider" if calls else "typeHierarchyProvider"
            if not server.offers(capability):
                raise ProviderUnsupported(_unsupported_hierarchy(server, prepare, args.kind))
            roots, meta = await self._value(
                server,
                prepare,
                {"textDocument": {"uri": resolved.uri}, "position": resolved.position},
                deadline,
                ctx,
            )

            side = "from" if args.kind == "callers" else "to"

            async def expand(item: dict[str, Any]) -> list[tuple[Any, Any]]:
                value, _ = await self._value(
                    server, expand_method, {"item": item}, deadline, ctx, warmup=False
                )
                if not isinstance(value, list):
                    return []
                if calls:  # CallHierarchyIncomingCall {from, fromRanges} / OutgoingCall {to, fromRanges}
                    return [
                        (entry.get(side), entry.get("fromRanges")) for entry in value if type(entry) is dict
                    ]
                return [(entry, ()) for entry in value if type(entry) is dict]

            lookup = server.uri_lookup(self.workspace)
            checked: dict[str, WorkspaceFile | None] = {}  # the walk's path checks, by URI
            result = await traverse(
                [item for item in roots or [] if isinstance(item, dict)],
                expand,
                args.kind,
                workspace=self.workspace,
                texts=self._texts(server),
                encoding=server.encoding,
                deadline=deadline,
                budgets=GraphBudgets(depth=args.depth),
                limit=args.limit,
                lookup=lookup,
                checked=checked,
            )
            # B8.12 as for navigation: the files the walk looked up (every file it shows among them) are
            # re-announced when they change on disk, and (being watched) their later text reads reuse the
            # re-sync's stamps.
            server.saw([file for file in checked.values() if file is not None])
            out = {"target": resolved.to_json(), **result, "provider": meta}
            if args.kind in _USES:
                self._add_scope(out, server, resolved.document.file.absolute)
            return out

        empty = {"kind": args.kind, "items": [], "totalFound": 0, "shown": 0, "truncated": False}
        return await self._guard("code_hierarchy", empty, body, ctx)

    # -- code_hover ----------------------------------------------------------------------------------------
    async def hover(self, args: HoverArgs, ctx: IntelContext) -> dict[str, Any]:
        async def body(deadline: Deadline) -> dict[str, Any]:
            server, resolved = await self._target(args.target, args.first_match, deadline, ctx)
            params = {"textDocument": {"uri": resolved.uri}, "position": resolved.position}
            signature_value = None
            if server.offers("signatureHelpProvider") and _inside_call(resolved):
                # Signature help in parallel, in a task of its own; hover is awaited in this one (one
                # task fewer than gather's two, issue 9), and a cancelled call cancels both.
                signature_task = asyncio.ensure_future(
                    self._ask(server, "textDocument/signatureHelp", params, deadline, ctx, warmup=False)
                )
                try:
                    hover = await self._ask(server, "textDocument/hover", params, deadline, ctx)
                    signature = await signature_task
                finally:
                    if not signature_task.done():
                        signature_task.cancel()
                signature_value = signature.value if signature.ok else None
            else:
                hover = await self._ask(server, "textDocument/hover", params, deadline, ctx)
            if not hover.ok:
                raise _failed("textDocument/hover", hover)
            shown = hover_text(hover.value, signature_value, server.encoding)
            if not shown["text"]:
                return {
                    "ok": False,
                    "error": f"no hover information at {resolved.document.file.display}:{resolved.line}:"
                    f"{resolved.column}; point at a name (target.symbol, or target.matchText on the line)",
                    "target": resolved.to_json(),
                }
            span = hover.value.get("range") if isinstance(hover.value, dict) else None
            if isinstance(span, dict):  # B6.10: the server's range of what the hover describes
                ranges = resolved.document.model_ranges([span], server.encoding)
                if ranges[0] is not None:
                    line, column, end_line, end_column = ranges[0]
                    shown["range"] = {
                        "line": line,
                        "column": column,
                        "endLine": end_line,
                        "endColumn": end_column,
                    }
            return {"target": resolved.to_json(), **shown, "provider": hover.meta()}

        return await self._guard("code_hover", {"text": ""}, body, ctx)

    # -- code_inlay_hints ----------------------------------------------------------------------------------
    async def inlay_hints(self, args: InlayHintsArgs, ctx: IntelContext) -> dict[str, Any]:
        async def body(deadline: Deadline) -> dict[str, Any]:
            file, server, document = await self._prepare_path(args.path, args.root_id, deadline)
            if not server.offers("inlayHintProvider"):
                return {
                    "path": file.display,
                    "hints": [],
                    "totalFound": 0,
                    "shown": 0,
                    "truncated": False,
                    "notice": f"the {server.name} server offers no inlay hints",
                }
            span = request_range(document, server.encoding, args.lines)
            value, meta = await self._value(
                server,
                "textDocument/inlayHint",
                {"textDocument": {"uri": file.uri}, "range": span},
                deadline,
                ctx,
                warmup=False,
            )
            return {
                "path": file.display,
                **inlay_hints(value, document, server.encoding, limit=args.limit),
                "provider": meta,
            }

        empty = {"hints": [], "totalFound": 0, "shown": 0, "truncated": False}
        return await self._guard("code_inlay_hints", empty, body, ctx)

    # -- code_diagnostics ----------------------------------------------------------------------------------
    async def diagnostics(self, args: DiagnosticsArgs, ctx: IntelContext) -> dict[str, Any]:
        async def body(deadline: Deadline) -> dict[str, Any]:
            baseline = self.baselines.find(args.since) if args.since is not None else None
            if args.since is not None and baseline is None:
                raise IntelError(_no_baseline(args.since), status="invalid")
            items: list[FileDiagnostics] = []
            result = await self._snapshot(args, deadline, ctx, items)
            if result["status"] == NO_SERVER:
                return result  # nothing to compare with, nor to keep as a baseline
            compared: list[FileDiagnostics] = []
            if baseline is not None:
                unchecked: dict[str, str] = {}
                compared = await self._changed_since(baseline, items, deadline, ctx, unchecked)
                now = asyncio.get_running_loop().time()
                result["delta"] = _delta(baseline, compared, now, unchecked)
            result["baselineId"] = self._take_baseline([*items, *compared]).id
            return result

        empty = {
            "problems": [],
            "totalFound": 0,
            "shown": 0,
            "truncated": False,
        }
        return await self._guard("code_diagnostics", empty, body, ctx)

    async def _snapshot(
        self, args: DiagnosticsArgs, deadline: Deadline, ctx: IntelContext, gathered: list[FileDiagnostics]
    ) -> dict[str, Any]:
        """The diagnostics snapshot of the call's scope; ``gathered`` gets the files it covered."""
        if args.path is not None:
            file, server, document = await self._prepare_path(args.path, args.root_id, deadline)
            item = await self._file_diagnostics(server, document, deadline, ctx)
            gathered.append(item)
            return diagnostic_snapshot(
                [item],
                scope="file",
                now=server.client.now(),
                encoding=server.encoding,
                severity=args.severity,
                limit=args.limit,
                quiet=QUIET,
            )
        root = self.workspace.root(args.root_id) if args.root_id is not None else None
        roots = [root] if root is not None else list(self.workspace.roots)
        activated = 0
        eligible: int | None = None
        #: Language -> why no server of it answered (activation tries every language found).
        missing: dict[str, str] = {}
        if args.activate_workspace:
            paths: list[str] = []
            for each in roots:
                paths += await asyncio.to_thread(_source_files, each.path, self.pool, SCAN_LIMIT)
            eligible = len(paths)
            for path in paths[: args.activation_limit]:
                file = self.workspace.from_absolute(path)
                try:
                    server = await self.pool.server_for(file, deadline)
                except ServerMissing as error:
                    missing.setdefault(error.language or os.path.basename(path), error.notice)
                    continue
                await server.sync(file)
                activated += 1
            for server in self.pool.servers:
                await server.wait_ready(deadline)
            await self._settle(self.pool.servers, deadline)
        items: list[FileDiagnostics] = []
        now = time.monotonic()
        encoding = None
        servers = [server for each in roots for server in self.pool.servers_of(each)]
        for server in servers:
            await server.refresh()
            encoding = encoding or server.encoding
            now = server.client.now()
            activity = server.activity()
            for uri, entry in server.client.endpoint.diagnostics.snapshot().items():
                found = self.workspace.try_uri(uri)
                if not isinstance(found, WorkspaceFile):
                    continue
                if root is not None and found.root.id != root.id:
                    continue
                synced = server.documents.get(uri)
                text = synced.document if synced is not None else None
                version = server.client.endpoint.documents.current(uri)
                freshness = self.freshness(server, found, version, entry, activity=activity)
                items.append(FileDiagnostics(found, version, entry, text, freshness))
        gathered.extend(items)
        snapshot = diagnostic_snapshot(
            items,
            scope="root" if root is not None else "workspace",
            now=now,
            encoding=encoding or PositionEncoding.UTF16,
            severity=args.severity,
            limit=args.limit,
            activated=activated,
            eligible_files=eligible,
            quiet=QUIET,
            root_id=root.id if root is not None else None,
        )
        reasons = "; ".join(f"{language} ({why})" for language, why in sorted(missing.items()))
        if missing:  # a language found in the scope whose server could not be had is named, never dropped
            snapshot["notChecked"] = [
                {"language": lang, "reason": why} for lang, why in sorted(missing.items())
            ]
        if not servers:  # nothing answered: why, never an empty answer's "0 errors" (a user trial)
            snapshot["status"] = NO_SERVER
            if missing:
                snapshot["notice"] = f"no server answered: {reasons}"
            else:
                snapshot["notice"] = _NOTHING_ACTIVATED if args.activate_workspace else _NONE_RUNS
        elif missing:
            snapshot["notice"] = f"not checked: {reasons}"
        return snapshot

    async def _changed_since(
        self,
        baseline: Baseline,
        scope: list[FileDiagnostics],
        deadline: Deadline,
        ctx: IntelContext,
        unchecked: dict[str, str],
    ) -> list[FileDiagnostics]:
        """The current diagnostics of the files to compare with ``baseline``: the call's open files, those
        changed since (any server's ledger), those the servers published for since (re-checked
        dependents), and those the baseline held; each awaited by the freshness rule within the
        deadline (a workspace read's own snapshot does not wait). ``unchecked`` gets the files whose
        server did not answer, with why."""
        files: dict[str, WorkspaceFile] = {}

        def add(found: WorkspaceFile | IntelError) -> None:
            if isinstance(found, WorkspaceFile) and len(files) < MAX_DELTA_FILES:
                files.setdefault(found.display, found)

        for item in scope:
            if item.document_version is not None:
                add(item.file)

        for server in self.pool.servers:
            for change in server.ledger.since(baseline.at):
                add(self.workspace.try_uri(change.uri))
            for uri, entry in server.client.endpoint.diagnostics.snapshot().items():
                if entry.received_at > baseline.at:
                    add(self.workspace.try_uri(uri))
        for path in baseline.problems:
            try:
                add(self.workspace.resolve(path))
            except IntelError:
                continue  # gone, or no longer inside the workspace: left out, never "all resolved"

        async def current(file: WorkspaceFile) -> FileDiagnostics | None:
            try:
                return (await self.diagnostics_now(file, deadline, ctx))[0]
            except UNANSWERED as error:
                unchecked[file.display] = unanswered_reason(error)
                return None

        found = await asyncio.gather(*(current(file) for file in files.values()))
        return [item for item in found if item is not None]

    def _take_baseline(self, items: list[FileDiagnostics]) -> Baseline:
        """Record this answer's diagnostics (and every other file's whose freshness is final) as a
        baseline for a later ``since``."""
        problems: dict[str, list[Any]] = {}
        for server in self.pool.servers:
            if tsserver.offers_pull(server.capabilities):
                # typescript-language-server's publications are not final: only pulls count
                for uri, pulled in self.current_pulls(server).items():
                    found = self.workspace.try_uri(uri)
                    if isinstance(found, WorkspaceFile):
                        problems[found.display] = list(pulled.diagnostics)
                continue
            activity = server.activity()
            for uri, entry in server.client.endpoint.diagnostics.snapshot().items():
                found = self.workspace.try_uri(uri)
                if not isinstance(found, WorkspaceFile):
                    continue
                version = server.client.endpoint.documents.current(uri)
                if self.freshness(server, found, version, entry, activity=activity).final:
                    problems[found.display] = list(entry.diagnostics)
        for item in items:
            if item.publication is not None and (item.freshness is None or item.freshness.final):
                problems[item.file.display] = list(item.publication.diagnostics)
        return self.baselines.record(asyncio.get_running_loop().time(), problems)

    async def diagnostics_now(
        self, file: WorkspaceFile, deadline: Deadline, ctx: IntelContext, *, wait: float | None = None
    ) -> tuple[FileDiagnostics, PositionEncoding]:
        """``file``'s diagnostics now, by the freshness rule within the deadline (or ``wait`` seconds),
        opened in its server if it is not, and the encoding of their ranges; a deleted file has none left
        (``current``). What a ``since`` delta and a mutation's receipt compare.

        :raises: one of :data:`~kandev_lsp.intel.runtime.pool.UNANSWERED` when its server cannot answer.
        """
        if not os.path.isfile(file.absolute):
            gone = _Pulled(None, (), asyncio.get_running_loop().time())
            return FileDiagnostics(file, None, gone, None, Freshness("current")), PositionEncoding.UTF16
        server = await self.pool.server_for(file, deadline)
        document = await server.sync(file)
        found = await self._file_diagnostics(server, document, deadline, ctx, wait=wait)
        return found, server.encoding

    async def _file_diagnostics(
        self,
        server: ManagedServer,
        document: Document,
        deadline: Deadline,
        ctx: IntelContext,
        *,
        wait: float | None = None,
    ) -> FileDiagnostics:
        """The file's diagnostics once they are the server's word on its current text (issue 20 items
        1-2, :mod:`~kandev_lsp.intel.reading.freshness`), or, when that did not happen within the
        call's deadline (or ``wait`` seconds), as they are, with what is awaited."""
        uri = document.file.uri
        if server.offers("diagnosticProvider"):
            value, _ = await self._value(
                server, "textDocument/diagnostic", {"textDocument": {"uri": uri}}, deadline, ctx, warmup=False
            )
            items = value.get("items") if isinstance(value, dict) else None
            pulled = self._pulled(server, uri, document.version, tuple(items or ()))
            freshness = self.freshness(server, document.file, document.version, pulled, pulled=True)
            return FileDiagnostics(document.file, document.version, pulled, document, freshness)
        if tsserver.offers_pull(server.capabilities):
            found = await self._tsserver_diagnostics(server, uri, deadline, ctx)
            if found is not None:
                pulled = self._pulled(server, uri, document.version, tuple(found))
                freshness = self.freshness(server, document.file, document.version, pulled, pulled=True)
                return FileDiagnostics(document.file, document.version, pulled, document, freshness)
        store = server.client.endpoint.diagnostics
        budget = max(0.0, deadline.remaining() - ANSWER_MARGIN)
        until = time.monotonic() + (budget if wait is None else min(wait, budget))
        while True:
            entry = store.get(uri)
            freshness = self.freshness(server, document.file, document.version, entry)
            if freshness.state == "quiet" and not await self._still_quiet(server, uri, entry):
                continue  # the server was busy: what it published meanwhile is judged again
            if (
                freshness.final
                or time.monotonic() >= until
                or (ctx.cancel is not None and ctx.cancel.is_set())
            ):
                return FileDiagnostics(document.file, document.version, entry, document, freshness)
            await asyncio.sleep(POLL)

    def _pulled(
        self, server: ManagedServer, uri: str, version: int | None, found: tuple[Any, ...]
    ) -> _Pulled:
        """A pull's answer, kept as the file's latest word until its text changes (:meth:`current_pulls`)."""
        pulled = _Pulled(version, found, server.client.now())
        pulls = self._pulls.setdefault(id(server), {})
        pulls.pop(uri, None)
        pulls[uri] = pulled
        if len(pulls) > MAX_KEPT_PULLS:  # the oldest go first
            del pulls[next(iter(pulls))]
        return pulled

    def current_pulls(self, server: ManagedServer) -> dict[str, _Pulled]:
        """The pulls of ``server``'s files that are still its word on them (URI -> report): the file is
        open at the version pulled, and nothing changed since, by the freshness rule. A server that is
        pulled (typescript-language-server, one offering textDocument/diagnostic) may never publish the
        file, so this is what it said of it: a baseline for a later ``since`` and a mutation's
        "elsewhere"."""
        pulls = self._pulls.get(id(server))
        if not pulls:  # a server that publishes (pyright): no scan of its publications for nothing
            return {}
        documents, activity = server.client.endpoint.documents, server.activity()
        kept: dict[str, _Pulled] = {}
        for uri, pulled in pulls.items():
            version = documents.current(uri)
            found = self.workspace.try_uri(uri)
            if version is None or version != pulled.version or not isinstance(found, WorkspaceFile):
                continue
            if self.freshness(server, found, version, pulled, pulled=True, activity=activity).final:
                kept[uri] = pulled
        return kept

    async def _tsserver_diagnostics(
        self, server: ManagedServer, uri: str, deadline: Deadline, ctx: IntelContext
    ) -> list[dict[str, Any]] | None:
        """``uri``'s diagnostics asked of typescript-language-server's TypeScript server (its publications
        cannot say they are complete, :mod:`~kandev_lsp.intel.reading.tsserver`), or None when it did not
        answer them (then its publications are awaited)."""
        answers = []
        for kind in tsserver.PULL_KINDS:
            result = await self._ask(
                server,
                "workspace/executeCommand",
                tsserver.pull_params(kind, uri),
                deadline,
                ctx,
                warmup=False,
            )
            if not result.ok:
                return None
            answers.append(result.value)
        return tsserver.lsp_diagnostics(answers)

    @staticmethod
    async def _still_quiet(server: ManagedServer, uri: str, entry: Publication | None) -> bool:
        """A ``quiet`` verdict (the server said nothing for a while) holds when the server is idle now
        (a fence answered at once) and published nothing new for the file meanwhile."""
        idle = await server.idle(PROMPT)
        return idle and server.client.endpoint.diagnostics.get(uri) is entry

    @staticmethod
    def freshness(
        server: ManagedServer,
        file: WorkspaceFile,
        version: int | None,
        publication: Publication | None,
        *,
        pulled: bool = False,
        activity: Activity | None = None,
    ) -> Freshness:
        """How fresh ``publication`` is for ``file`` on ``server``, from what the server was told.

        :param activity: ``server.activity()``, taken once by a caller judging many files of the server in
            one pass (it scans every publication: once per file made a pass over n files cost n²).
        """
        return file_freshness(
            label=file.display,
            version=version,
            publication=publication,
            pulled=pulled,
            own=server.ledger.own(file.uri),
            other=server.ledger.latest_other(file.uri),
            activity=activity if activity is not None else server.activity(),
            now=server.client.now(),
            quiet=QUIET,
        )

    async def _settle(self, servers: list[ManagedServer], deadline: Deadline) -> None:
        """Wait until every open document of ``servers`` has final diagnostics (current or quiet),
        bounded by the deadline and PUBLISH_WAIT."""
        wait_until = time.monotonic() + min(PUBLISH_WAIT, max(0.0, deadline.remaining() - ANSWER_MARGIN))
        while time.monotonic() < wait_until:
            if all(self._settled(server) for server in servers):
                return
            await asyncio.sleep(POLL)

    def _settled(self, server: ManagedServer) -> bool:
        """Whether every open document of ``server`` has final diagnostics now."""
        store, activity = server.client.endpoint.diagnostics, server.activity()
        return all(
            self.freshness(
                server, synced.document.file, synced.document.version, store.get(uri), activity=activity
            ).final
            for uri, synced in server.documents.items()
            if synced.document is not None
        )


#: Bases of a class followed at most, and how many levels up, for an inherited member (issue 20 item 8).
_MAX_BASES: Final = 4
_BASE_DEPTH: Final = 3
_CLASS_KIND_NUMBERS: Final = frozenset({5, 11, 23})
#: Why a workspace or root read without activation has no answer at all.
_NONE_RUNS: Final = (
    "No language server runs for this workspace yet, so none has published diagnostics: ask about a file "
    "(`path`), or pass `activateWorkspace: true` to start the servers of the languages it holds"
)
_NOTHING_ACTIVATED: Final = (
    "No file of a language served here was found to activate, so no server was started and none answered"
)
#: Files a ``since`` delta compares at most besides the call's scope.
MAX_DELTA_FILES: Final = 100
#: Pulled reports kept per server (the newest), for baselines and receipts (:meth:`current_pulls`).
MAX_KEPT_PULLS: Final = 4096


def _delta(
    baseline: Baseline, items: list[FileDiagnostics], now: float, unchecked: dict[str, str]
) -> dict[str, Any]:
    """``code_diagnostics``' ``delta``: introduced / resolved / persisting since ``baseline`` over the
    compared files with a publication (a file still pending is left out, never "all resolved"), how
    fresh their "after" side is (the least fresh decides; :data:`NO_SERVER` when a file's server did not
    answer: ``unchecked`` names them in ``notChecked``), and which baseline it was."""
    after = {
        item.file.display: list(item.publication.diagnostics)
        for item in items
        if item.publication is not None
    }
    states = [item.freshness.state if item.freshness is not None else "current" for item in items]
    if any(state not in ("current", "quiet") for state in states):
        status = "settling"
    else:
        status = "quiet" if "quiet" in states else "current"
    delta = {
        "since": baseline.id,
        "ageSeconds": round(max(0.0, now - baseline.at), 1),
        "status": NO_SERVER if unchecked else status,
        **diagnostics_delta(baseline.problems, after),
        "files": len(after),
    }
    # Files the baseline knew nothing of (not open then, so no server's word on them): compared against
    # none, so each of their diagnostics counts as introduced, and the delta says which files those are.
    without = [path for path in sorted(after) if after[path] and path not in baseline.problems]
    if without:
        delta["withoutBaseline"] = without
    if unchecked:
        delta["notChecked"] = [{"path": path, "reason": why} for path, why in sorted(unchecked.items())]
    return delta


#: Open times kept for the warm-up window (the oldest go first; they matter for seconds only).
_MAX_OPENED: Final = 4096

#: Kinds that search for uses of the target: their answer covers one project (see ``_add_scope``).
_USES: Final = frozenset({"references", "implementation", "callers", "subtypes"})


def _unsupported_navigation(server: ManagedServer, method: str, kind: str) -> str:
    """Why ``kind`` cannot be asked of ``server``, and what to ask instead (B8.10: say what to do next)."""
    instead = {
        "implementation": "ask code_navigate with kind 'references' on the same target instead: the uses "
        "of a class or interface include the declarations of its subclasses and implementations",
        "typeDefinition": "ask code_hover on the same target for its type, then code_navigate with kind "
        "'definition' on that type's name",
        "declaration": "ask code_navigate with kind 'definition' instead",
        "definition": "ask code_navigate with kind 'references' instead (the declaration is among them)",
    }.get(kind, "")
    return f"the {server.name} server does not offer {method}" + (f": {instead}" if instead else "")


def _unsupported_hierarchy(server: ManagedServer, method: str, kind: str) -> str:
    """Why ``kind`` cannot be asked of ``server``, and what works instead on the same server.

    None of pyright, typescript-language-server and gopls offers type hierarchies (the MCP user trial);
    their implementation and definition requests answer the same questions one hop at a time.
    """
    implementation = server.offers("implementationProvider")
    if kind == "subtypes":
        instead = (
            "code_navigate with kind 'implementation' on the same target lists the classes and types "
            "that implement or extend it"
            if implementation
            else "code_navigate with kind 'references' on the same target lists its uses, which include "
            "the declarations of the classes that extend it"
        )
    elif kind == "supertypes":
        instead = (
            "for a base named in the declaration (extends, implements, a base class), code_navigate with "
            "kind 'definition' and target {line: <the declaration's line>, matchText: <the base's name>}; "
            "code_hover on the target shows its declaration"
        )
        if implementation:
            instead += (
                "; on a concrete type some servers (gopls) list the interfaces it implements with kind "
                "'implementation'"
            )
    else:
        instead = "code_hierarchy with kind 'callers' or 'callees' may be offered"
    return f"the {server.name} server does not offer {method} (type hierarchy): {instead}"


def _no_baseline(since: str) -> str:
    """Why ``since`` has nothing to compare with, and what to call instead (``last`` itself, when no
    answer came before: never "or since: 'last'" to a call that sent it)."""
    if since == "last":
        return (
            "since: 'last' found no earlier code_diagnostics answer in this session to compare with: "
            "call code_diagnostics without since first (before the edit: its answer is the baseline), "
            "then with since: 'last' after it"
        )
    return (
        f"no diagnostics baseline {since!r} in this session (the last {MAX_BASELINES} answers are kept): "
        "call code_diagnostics without since to take one, or since: 'last' for this session's previous answer"
    )


def _add_notice(result: dict[str, Any], notice: str) -> None:
    """Add ``notice`` to the result's, after any it holds already."""
    before = result.get("notice")
    result["notice"] = f"{before}; {notice}" if before else notice


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


#: Lines above the target searched for the call it may be an argument of.
_CALL_LINES: Final = 8


def _inside_call(resolved: ResolvedTarget) -> bool:
    """Whether the target may be inside a call's parentheses (an unclosed ``(`` before it, a few lines
    up at most): only there does signature help have an active parameter to mark. Elsewhere it answers
    nothing, and asking would double what a single-threaded server does for one hover."""
    document = resolved.document
    line, column = resolved.line - 1, resolved.column - 1
    depth = 0
    for number in range(line, max(-1, line - _CALL_LINES), -1):
        text = document.line(number)
        if number == line:
            text = text[:column]
        for char in reversed(text):
            if char == ")":
                depth += 1
            elif char == "(":
                if depth == 0:
                    return True
                depth -= 1
    return False


class _Pulled:
    """A pulled diagnostic report in the shape of a publication (for the snapshot)."""

    def __init__(self, version: int | None, diagnostics: tuple[Any, ...], received_at: float) -> None:
        self.version = version
        self.diagnostics = diagnostics
        self.received_at = received_at


def _regular_file(path: str) -> bool:
    """A regular file itself: not a link (it may lead out of the workspace), nor a FIFO, socket or device
    (a FIFO would fail the whole activation: the document sync refuses it)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _source_files(root: str, pool: ServerPool, limit: int) -> list[str]:
    """Up to ``limit`` files under ``root`` some language here owns, skipping the folders a project tree
    leaves out (:func:`~kandev_lsp.intel.runtime.watch.skipped_folder`: vendored, build output, hidden)."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not skipped_folder(d))
        for name in sorted(files):
            path = os.path.join(folder, name)
            if pool.language_of(path) is not None and _regular_file(path):
                found.append(path)
                if len(found) >= limit:
                    return found
    return found
