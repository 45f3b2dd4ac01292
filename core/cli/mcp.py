"""``kandev-lsp mcp --workspace DIR [--workspace DIR ...]``: the code-intelligence tools as an MCP server
over stdio, on the official ``mcp`` SDK (issues 9 and 11, B2, B7.4, B9).

Every enabled tool is listed with its JSON schema and honest annotations: the read tools read-only and
idempotent, the mutating ones (code_rename, code_actions, code_format, code_insert, code_replace,
code_replace_batch) not read-only, destructive unless they only add text or re-format. A call returns the
tool's result as structured content and as text: a one-line summary ("12 references · 4 files"), then the
same result as JSON (clients that pass the model only text content lose nothing), with ``isError`` set
when the result is ``ok: false``.

Mutations are approved headless (:mod:`kandev_lsp.cli.mcp_approval`): a client that declared form
elicitation is asked during the call with the preview; otherwise the tool answers ``needsApproval`` with a
``transactionId`` and the preview, and the model calls the same tool again with
``{"transactionId": ..., "approve": true}``. When the client can ask, only the person approves: an edit
parked because the prompt was dismissed (or failed, or went unanswered) is asked again at that second
step, and applied only on the person's accept. An "approve all" answer lasts for the MCP session;
``--auto-approve`` starts the session that way (unattended runs). Tools named in ``lsp_disabled_tools`` (or
``--disable-tool``) are neither listed nor callable. Language servers start on the first call that needs
them and stay warm for the life of the MCP session (stopped after ``--idle-timeout`` seconds without a
call); all are stopped gracefully when the client closes stdin or stops reading stdout, and on SIGINT,
SIGTERM or SIGHUP.

stdout carries MCP only; logs go to stderr. stdin and stdout are served on the event loop
(:mod:`kandev_lsp.cli.mcp_stdio`) rather than through the SDK's worker threads: an MCP round trip takes
about a third less time.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kandev_lsp.cli.code import add_intel_arguments, open_service
from kandev_lsp.cli.common import positive_seconds
from kandev_lsp.cli.mcp_approval import (
    APPROVAL_SCHEMA,
    SessionApprovals,
    approval_message,
    read_answer,
    supports_form_elicitation,
)

if TYPE_CHECKING:
    from kandev_lsp.intel.service import IntelService
    from kandev_lsp.intel.surface.schemas import ToolSpec

log = logging.getLogger("kandev_lsp.mcp")


def add_mcp_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the code-intelligence tools (code_navigate, code_hover, ...) as an MCP server on stdio",
        description=(
            "An MCP server over stdio for coding agents: code_symbols, code_navigate, code_hierarchy, "
            "code_hover, code_diagnostics, code_inlay_hints, answered by the language servers kandev-lsp "
            "manages, kept warm for the session; and code_rename, code_actions, code_format, code_insert, "
            "code_replace, code_replace_batch, whose edits are previewed and approved (through the "
            "client's elicitation, or a transactionId the model approves) before any file changes. Add "
            "it to an MCP client's config as the command `kandev-lsp mcp --workspace DIR`."
        ),
    )
    add_intel_arguments(parser)
    parser.add_argument(
        "--idle-timeout",
        type=positive_seconds,
        default=1800.0,
        metavar="SECONDS",
        help="stop a language server after this long without a call (default: 1800)",
    )
    parser.add_argument(
        "--max-servers",
        type=int,
        default=8,
        metavar="N",
        help="language servers running at once (default: 8)",
    )
    parser.add_argument(
        "--deadline",
        type=positive_seconds,
        default=9.0,
        metavar="SECONDS",
        help="one tool call's time budget, server start and readiness included (default: 9, B8.3)",
    )
    parser.add_argument(
        "--stdio",
        default="loop",
        choices=["loop", "sdk"],
        help=(
            "how stdin and stdout are served: 'loop' (default) on the event loop's pipe transports when "
            "they are pipes or sockets, else as 'sdk': the MCP SDK's own transport, a worker thread per read "
            "and write (slower per call; see docs/intel.md)"
        ),
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="stderr log level",
    )
    parser.set_defaults(handler=run_mcp)


def tool_annotations(spec: ToolSpec) -> Any:
    """The spec's MCP annotations (:meth:`ToolSpec.annotations`: read tools read-only and idempotent;
    mutations not read-only, destructive unless they only add text or re-format) as the SDK's type."""
    import mcp_types as types

    hints = spec.annotations()
    return types.ToolAnnotations(
        title=hints.get("title"),
        read_only_hint=hints.get("readOnlyHint"),
        destructive_hint=hints.get("destructiveHint"),
        idempotent_hint=hints.get("idempotentHint"),
        open_world_hint=hints.get("openWorldHint"),
    )


def approval_text(tool: str, result: Mapping[str, Any], *, asks_person: bool = False) -> str | None:
    """What the model reads next to a parked edit: why, how to approve or discard, and the diff.

    :param asks_person: the client can ask its user (form elicitation): the second step then asks that
        person again, and only their accept applies the edit.
    """
    transaction = result.get("transactionId")
    if not result.get("needsApproval") or not isinstance(transaction, str):
        return None
    preview = result.get("preview")
    view = dict(preview) if isinstance(preview, Mapping) else {}
    view.setdefault("reasons", result.get("approvalReasons") or [])
    body = approval_message("", view)
    call = json.dumps({"transactionId": transaction, "approve": True})
    if asks_person:
        return (
            "Not applied: the person has not approved this edit (the prompt was dismissed, failed or "
            f"went unanswered). Calling {tool} again with {call} asks them again, and only their accept "
            "applies it; approve: false discards it. The transaction is single-use and expires.\n" + body
        )
    return (
        f"Not applied yet: this edit needs approval. To apply it, call {tool} again with {call}; "
        f"to discard it, with approve: false. The transaction is single-use and expires.\n" + body
    )


def build_server(service: IntelService, deadline: float = 9.0, *, auto_approve: bool = False) -> Any:
    """The SDK's low-level :class:`mcp.server.lowlevel.Server` over ``service``'s dispatcher.

    Each ``run`` of the server (one MCP session: on stdio, the process's one client) gets its own
    :class:`SessionApprovals`, starting with ``auto_approve``.
    """
    import contextlib
    from collections.abc import AsyncIterator
    from importlib.metadata import PackageNotFoundError, version

    import mcp_types as types
    from kandev_lsp.intel.surface.dispatch import IntelContext
    from mcp.server.lowlevel import Server

    try:
        __version__ = version("kandev-lsp")
    except PackageNotFoundError:
        __version__ = "0"

    specs = {spec.name: spec for spec in service.dispatcher.tools()}
    tools = [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.mcp_definition()["inputSchema"],
            annotations=tool_annotations(spec),
        )
        for spec in specs.values()
    ]

    @contextlib.asynccontextmanager
    async def session_state(_: Any) -> AsyncIterator[dict[str, Any]]:
        yield {"approvals": SessionApprovals(auto_approve=auto_approve)}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    def elicitor(ctx: Any, approvals: SessionApprovals) -> Any:
        """``IntelContext.elicit`` for this call, or None when the client cannot be asked."""
        session = ctx.session
        capabilities = session.client_capabilities
        if capabilities is None or not supports_form_elicitation(capabilities.elicitation):
            return None

        async def elicit(message: str, preview: Mapping[str, Any]) -> bool | None:
            approvals.asked += 1
            try:
                # No timer here: the coordinator parks an unanswered question after its approval window
                # (a transaction's lifetime) by cancelling this call.
                answer = await session.elicit_form(
                    approval_message(message, preview),
                    APPROVAL_SCHEMA,
                    related_request_id=ctx.request_id,
                )
            except Exception as error:  # the client failed to ask: no approval (the edit stays parked)
                log.warning(
                    "approval prompt failed (%s): the edit waits for a transaction", type(error).__name__
                )
                return None
            decision, approve_all = read_answer(answer.action, answer.content)
            if approve_all:
                approvals.remember_all()
            return decision

        return elicit

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        approvals: SessionApprovals = ctx.lifespan_context["approvals"]
        arguments = params.arguments or {}
        spec = specs.get(params.name)
        context = IntelContext(deadline=deadline)
        if spec is not None and not spec.read_only:
            # With an elicitor the person approves: a parked edit's second step asks them again.
            context = IntelContext(
                deadline=deadline,
                auto_approve=approvals.auto_approve,
                elicit=elicitor(ctx, approvals),
            )
        outcome = await service.dispatcher.dispatch_for_host(params.name, arguments, context)
        result = outcome.result  # autoApproveAll already stripped: the model never sees it (B2.6)
        if outcome.auto_approve_all:
            approvals.remember_all()
        # The summary line first, then the whole result as JSON text: many clients hand the model only
        # `content` (never `structuredContent`), and the MCP spec asks a tool with structured content to
        # send its serialized JSON as text too.
        summary = str(result.get("summary", ""))
        answer = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
        content: list[types.ContentBlock] = [types.TextContent(text=summary), types.TextContent(text=answer)]
        approve = approval_text(
            spec.name if spec else params.name, result, asks_person=context.elicit is not None
        )
        if approve is not None:
            content.append(types.TextContent(text=approve))
        return types.CallToolResult(
            content=content,
            structured_content=result,
            is_error=not result.get("ok", False),
        )

    return Server(
        "kandev-lsp",
        version=__version__,
        instructions=(
            "Code intelligence from real language servers: definitions, references, call and type "
            "hierarchies, hover types, diagnostics and inlay hints, and safe edits (rename, code actions, "
            "format, insert, replace) that are previewed and approved before any file changes. Paths are "
            "workspace-relative; point at code with target.symbol ('Class.method') or target.line + "
            "target.matchText. An edit answering needsApproval is applied only by calling the same tool "
            "again with its transactionId and approve: true."
        ),
        lifespan=session_state,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def run_mcp(args: argparse.Namespace) -> int:
    import anyio
    from kandev_lsp.cli.serve import configure_logging

    configure_logging(args.log_level)
    service = open_service(args, idle_timeout=args.idle_timeout, max_servers=args.max_servers)

    async def serve() -> None:
        async with service:
            server = build_server(service, args.deadline, auto_approve=args.auto_approve)
            stop = anyio.CancelScope()
            try:
                with stop:
                    await _serve_stdio(server, args.stdio, stop)
            except* (BrokenPipeError, ConnectionResetError):
                # The client went away without closing stdin first: the servers stop as on a clean close.
                log.warning("the MCP client stopped reading (its end of stdout is closed): stopping")

    anyio.run(serve)
    return 0


async def _serve_stdio(server: Any, stdio: str, stop: Any) -> None:
    """Run ``server`` (the SDK's low-level server) on stdin and stdout until the client leaves; ``stdio``
    is ``--stdio``: ``loop`` (:mod:`kandev_lsp.cli.mcp_stdio`, where it can serve) or ``sdk``.

    On the loop's transport, SIGINT, SIGTERM and SIGHUP cancel ``stop`` (the session): the language
    servers are then shut down as on a clean close. The SDK's transport waits for a line in a thread that
    a cancellation cannot interrupt, so there the signals keep their default action.
    """
    import asyncio
    import contextlib

    from kandev_lsp.cli.listening import STOP_SIGNALS
    from kandev_lsp.cli.mcp_stdio import event_loop_stdio
    from mcp.server.stdio import stdio_server

    async with contextlib.AsyncExitStack() as stack:
        streams = None
        if stdio == "loop":
            streams = await stack.enter_async_context(event_loop_stdio())
        else:
            log.info("stdio served by the MCP SDK's transport (--stdio sdk)")
        if streams is not None:
            loop = asyncio.get_running_loop()
            for signum in STOP_SIGNALS:
                loop.add_signal_handler(signum, _stopping, stop, signum)
                stack.callback(loop.remove_signal_handler, signum)
        stdin, stdout = streams if streams is not None else (None, None)
        transport = stdio_server(stdin, stdout)  # type: ignore[arg-type] # the SDK's AsyncFile API
        read_stream, write_stream = await stack.enter_async_context(transport)
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _stopping(scope: Any, signum: int) -> None:
    log.warning("stopping on %s: the language servers are shut down first", signal.Signals(signum).name)
    scope.cancel()
