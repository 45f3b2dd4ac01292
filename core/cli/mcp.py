"""``kandev-lsp mcp --workspace DIR [--workspace DIR ...]``: the code-intelligence tools as an MCP server
over stdio, on the official ``mcp`` SDK (issue 9, B2, B9).

Every enabled read tool is listed with its JSON schema and read-only annotations; a call returns the
tool's result as structured content plus a one-line text summary ("12 references · 4 files"), with
``isError`` set when the result is ``ok: false``. Tools named in ``lsp_disabled_tools`` (or
``--disable-tool``) are neither listed nor callable. Language servers start on the first call that needs
them and stay warm for the life of the MCP session (stopped after ``--idle-timeout`` seconds without a
call); all are stopped gracefully when the client closes stdin.

stdout carries MCP only; logs go to stderr.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from kandev_lsp.cli.code import add_intel_arguments, open_service

if TYPE_CHECKING:
    from kandev_lsp.intel.service import IntelService


def add_mcp_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the code-intelligence tools (code_navigate, code_hover, ...) as an MCP server on stdio",
        description=(
            "An MCP server over stdio for coding agents: code_symbols, code_navigate, code_hierarchy, "
            "code_hover, code_diagnostics, code_inlay_hints, answered by the language servers kandev-lsp "
            "manages, kept warm for the session. Add it to an MCP client's config as the command "
            "`kandev-lsp mcp --workspace DIR`."
        ),
    )
    add_intel_arguments(parser)
    parser.add_argument(
        "--idle-timeout",
        type=float,
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
        type=float,
        default=9.0,
        metavar="SECONDS",
        help="one tool call's time budget, server start and readiness included (default: 9, B8.3)",
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="stderr log level",
    )
    parser.set_defaults(handler=run_mcp)


def build_server(service: IntelService, deadline: float = 9.0) -> Any:
    """The SDK's low-level :class:`mcp.server.lowlevel.Server` over ``service``'s dispatcher."""
    from importlib.metadata import PackageNotFoundError, version

    import mcp_types as types
    from kandev_lsp.intel.dispatch import IntelContext
    from mcp.server.lowlevel import Server

    try:
        __version__ = version("kandev-lsp")
    except PackageNotFoundError:
        __version__ = "0"

    tools = [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.mcp_definition()["inputSchema"],
            annotations=types.ToolAnnotations(
                title=spec.title,
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        )
        for spec in service.dispatcher.tools()
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await service.dispatch(params.name, params.arguments or {}, IntelContext(deadline=deadline))
        summary = str(result.get("summary", ""))
        return types.CallToolResult(
            content=[types.TextContent(text=summary or json.dumps(result)[:200])],
            structured_content=result,
            is_error=not result.get("ok", False),
        )

    return Server(
        "kandev-lsp",
        version=__version__,
        instructions=(
            "Code intelligence from real language servers: definitions, references, call and type "
            "hierarchies, hover types, diagnostics and inlay hints. Paths are workspace-relative; point "
            "at code with target.symbol ('Class.method') or target.line + target.matchText."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def run_mcp(args: argparse.Namespace) -> int:
    import anyio
    from kandev_lsp.cli.serve import configure_logging
    from mcp.server.stdio import stdio_server

    configure_logging(args.log_level)
    service = open_service(args, idle_timeout=args.idle_timeout, max_servers=args.max_servers)

    async def serve() -> None:
        async with service:
            server = build_server(service, args.deadline)
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)
    return 0
