"""``kandev-lsp code TOOL --workspace DIR --json '{...}'``: one tool call, one-shot (issues 9 and 11).

For scripts and debugging: the same tools, schemas and results as the MCP server (``kandev-lsp mcp``),
printed as JSON on stdout. Each run starts the language servers it needs and stops them after the
answer, so it pays a cold start every time (seconds, not the milliseconds of a warm MCP session).

A mutating tool without ``--auto-approve`` is a dry run: it prints the preview and writes nothing (its
``transactionId`` dies with the process, so it cannot be approved later). With ``--auto-approve`` a
previewable edit is applied; file creations, renames, deletions and commands whose effect cannot be
previewed are still refused without an explicit approval, which a one-shot run cannot give (B7.4).

Exit status: 0 when the result is ``ok``, 1 when the tool answered ``ok: false``, 2 usage (an unknown
tool name included: nothing ran; a disabled tool is the tool's refusal, 1). ``--deadline SECONDS`` is the call's budget (default 60: a cold start).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from kandev_lsp.cli.common import UsageError, add_settings_argument, print_json, task_from_args

if TYPE_CHECKING:
    from kandev_lsp.intel.service import IntelService

#: Tool-call deadline of the one-shot command: a cold server's readiness is part of every call here.
COLD_DEADLINE = 60.0


def add_intel_arguments(parser: argparse.ArgumentParser) -> None:
    """The workspace roots, the servers' environment, settings and pool limits (``code`` and ``mcp``)."""
    parser.add_argument(
        "--workspace",
        metavar="DIR",
        action="append",
        default=[],
        help="a workspace root (repeatable for a multi-root workspace; default: the current folder)",
    )
    parser.add_argument(
        "--env",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="an environment override for the language servers (repeatable; KEY= unsets KEY)",
    )
    add_settings_argument(parser, live=True)
    parser.add_argument(
        "--install",
        action="store_true",
        help="install a missing server (otherwise only lsp_auto_install_languages are installed)",
    )
    parser.add_argument(
        "--auto-approve",
        action="store_true",
        help="apply previewable edits of the mutating tools without asking, for unattended runs: the "
        "agent then changes files with nobody reviewing the diff (use a clean git tree). File "
        "creations, renames, deletions and commands that cannot be previewed are still asked",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="offer only the read tools: the six mutating ones are neither listed nor callable",
    )
    parser.add_argument(
        "--disable-tool",
        metavar="NAME",
        action="append",
        default=[],
        help="a tool to turn off, on top of the lsp_disabled_tools setting (repeatable)",
    )


def open_service(args: argparse.Namespace, **options: Any) -> IntelService:
    """The :class:`IntelService` the flags describe."""
    from kandev_lsp.cli.common import load_plugins
    from kandev_lsp.intel.service import IntelService
    from kandev_lsp.settings import SettingsFile

    if getattr(args, "read_only", False) and getattr(args, "auto_approve", False):
        raise UsageError("--auto-approve has nothing to approve with --read-only: drop one of them")
    folders = [os.path.abspath(folder) for folder in args.workspace] or [os.getcwd()]
    for folder in folders:
        if not os.path.isdir(folder):
            raise UsageError(f"--workspace {folder}: not an existing folder")
    env = task_from_args(argparse.Namespace(env=args.env, env_file=None, workspace=folders[0])).env
    plugins = load_plugins()
    settings = SettingsFile(args.settings, known=plugins.languages())
    disabled = list(args.disable_tool)
    user = settings.current()[0]
    disabled += [name for name in user.disabled_tools if name not in disabled]
    try:
        return IntelService.open(
            folders,
            env=env,
            plugins=plugins,
            settings=settings,
            disabled=disabled,
            install=args.install,
            mutations=not getattr(args, "read_only", False),
            **options,
        )
    except ValueError as error:
        raise UsageError(str(error)) from None


def add_code_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "code",
        help="run one code-intelligence tool (code_navigate, code_rename, ...) and print its JSON result",
        description=(
            "Run one tool of the MCP server (`kandev-lsp mcp`) once: code_symbols, code_navigate, "
            "code_hierarchy, code_hover, code_diagnostics, code_inlay_hints, or a mutating one "
            "(code_rename, code_actions, code_format, code_insert, code_replace, code_replace_batch: a "
            "dry run printing the preview unless --auto-approve). Starts the servers it needs and stops "
            "them afterwards, so every run pays a cold start. Exit status: 0 ok, 1 the tool answered "
            "ok: false, 2 usage."
        ),
    )
    parser.add_argument("tool", metavar="TOOL", help="the tool name (code_navigate) or op (navigate)")
    parser.add_argument("--json", dest="payload", metavar="JSON", default="{}", help="the tool's arguments")
    parser.add_argument(
        "--deadline",
        metavar="SECONDS",
        type=float,
        default=COLD_DEADLINE,
        help=f"the call's time budget, server start and readiness included (default {COLD_DEADLINE:g}: "
        "every run is a cold start)",
    )
    add_intel_arguments(parser)
    parser.set_defaults(handler=run_code)


def dry_run(result: dict[str, Any]) -> dict[str, Any]:
    """A parked mutation of a one-shot run: its transaction ends with this process, so the result says
    "dry run" and how to apply instead of offering a ``transactionId`` nobody can approve."""
    if not result.get("needsApproval"):
        return result
    result = {key: value for key, value in result.items() if key not in ("transactionId", "expiresInSeconds")}
    result["dryRun"] = True
    result["next"] = (
        "nothing was written: a one-shot run cannot be approved later. Review the preview, then run the "
        "same command with --auto-approve to apply it"
        + (
            " (this edit needs an explicit approval even then: use `kandev-lsp mcp`)"
            if result.get("approvalReasons")
            else ""
        )
    )
    return result


def run_code(args: argparse.Namespace) -> int:
    import asyncio

    from kandev_lsp.intel.surface.dispatch import IntelContext
    from kandev_lsp.intel.surface.schemas import ALL_TOOLS, tool_by_name

    if tool_by_name(args.tool) is None:  # a usage error (2), not a tool's answer (1): nothing ran
        raise UsageError(f"no tool {args.tool!r}; the tools are: {', '.join(t.name for t in ALL_TOOLS)}")
    if not args.deadline > 0:
        raise UsageError(f"--deadline {args.deadline:g}: give a number of seconds above 0")
    try:
        payload = json.loads(args.payload)
    except json.JSONDecodeError as error:
        raise UsageError(f"--json is not JSON: {error}") from None
    if not isinstance(payload, dict):  # as malformed JSON: the command line is wrong, nothing ran
        raise UsageError(
            f"--json must be a JSON object ({{...}}) of the tool's arguments, got {args.payload!r}"
        )

    async def call() -> dict[str, Any]:
        async with open_service(args) as service:
            ctx = IntelContext(deadline=args.deadline, auto_approve=args.auto_approve)
            return await service.dispatch(args.tool, payload, ctx)

    result = dry_run(asyncio.run(call()))
    print_json(result)
    sys.stdout.flush()
    return 0 if result.get("ok") else 1
