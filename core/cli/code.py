"""``kandev-lsp code TOOL --workspace DIR --json '{...}'``: one tool call, answered warm (issues 9, 11, 19).

For scripts, hooks and agents that drive tools through a shell: the same tools, schemas and results as
the MCP server (``kandev-lsp mcp``), printed as JSON on stdout. The first call for a workspace set starts a
background daemon (:mod:`kandev_lsp.codedaemon`) that keeps the language servers warm; later calls connect
to it over a private Unix socket and get the warm answer. This module parses and checks the call with what
the client has already imported (argparse, json, os), so a warm call never imports the servers' runtime,
asyncio or the plugin host: those are the daemon's. ``--no-daemon`` (and Windows, and any platform without
``SO_PEERCRED``) keeps the one-shot path: start the servers this call needs, answer, stop them.

A mutating tool without ``--auto-approve`` is a dry run: it prints the preview and writes nothing. Through
the daemon the preview's ``transactionId`` survives the call: ``kandev-lsp code TOOL --approve=ID`` (the
same workspace flags; ``=`` because an id may start with ``-``) applies exactly the previewed edit within
the transaction's lifetime, ``--discard=ID`` drops it. That is an explicit approval, so it also applies
the edits ``--auto-approve`` never applies (file creations, renames, deletions, unpreviewable commands,
B7.4); a one-shot run's transaction dies with it.

Exit status: 0 when the result is ``ok``, 1 when the tool answered ``ok: false`` (or the daemon was lost
during the call, or a workspace is missing or unreadable, as in every command), 2 usage (an unknown tool
name included: nothing ran; a disabled tool is the tool's refusal, 1). ``--deadline SECONDS`` is the call's budget (default 60: a first call is a cold start).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from kandev_lsp.cli.common import (
    UsageError,
    add_settings_argument,
    positive_seconds,
    print_json,
    task_from_args,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from kandev_lsp.codedaemon.names import DaemonFiles
    from kandev_lsp.intel.service import IntelService
    from kandev_lsp.intel.surface.schemas import ToolSpec

#: Tool-call deadline of ``kandev-lsp code``: a cold server's readiness may be part of the call.
COLD_DEADLINE = 60.0
#: Seconds a caller waits for the daemon's answer past the call's own deadline (the daemon's own work, a
#: loaded machine) by default; past that the daemon counts as stalled and is replaced (``--stall-timeout``).
STALL_TIMEOUT = 15.0
#: Seconds a caller waits for a daemon it started to be ready (an interpreter start and the plugins).
START_TIMEOUT = 60.0
#: Seconds ``--stop`` waits for each daemon to stop its servers (a graceful stop takes a few); one that
#: has not answered by then is stalled, and is killed instead.
STOP_TIMEOUT = 20.0


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


def workspace_folders(args: argparse.Namespace) -> list[str]:
    """The workspace roots the flags name (absolute; default: the current folder), each checked by the
    one workspace check every command makes (:func:`~kandev_lsp.workspace_access.check_workspace`).

    :raises WorkspaceUnavailable: a root is missing, not a folder, or cannot be read: a reported failure
        (exit 1) as in ``run`` and ``serve``, not a usage error: the flag was well-formed, the folder it
        names is not there.
    """
    from kandev_lsp.workspace_access import check_workspace

    folders = named_roots(args)
    for folder in folders:
        check_workspace(folder)
    return folders


def named_roots(args: argparse.Namespace) -> list[str]:
    """The workspace roots ``--workspace`` names, absolute (default: the current folder), unchecked:
    ``--stop`` stops the daemons of roots that are gone too."""
    return [os.path.abspath(folder) for folder in args.workspace] or [os.getcwd()]


def check_flags(args: argparse.Namespace) -> None:
    """Flags that contradict each other (``code`` and ``mcp``)."""
    if getattr(args, "read_only", False) and getattr(args, "auto_approve", False):
        raise UsageError("--auto-approve has nothing to approve with --read-only: drop one of them")


def open_service(args: argparse.Namespace, **options: Any) -> IntelService:
    """The :class:`IntelService` the flags describe."""
    from kandev_lsp.cli.common import load_plugins
    from kandev_lsp.intel.service import IntelService
    from kandev_lsp.settings import SettingsFile

    check_flags(args)
    folders = workspace_folders(args)
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
            "dry run printing the preview unless --auto-approve). The first call for a workspace starts "
            "a background daemon that keeps the servers warm (a private Unix socket; it exits after "
            "--idle-timeout seconds without a call, or on --stop); later calls get warm answers. "
            "--no-daemon starts and stops the servers in this call instead, as Windows always does. "
            "Exit status: 0 ok, 1 the tool answered ok: false (or a workspace is missing or unreadable), "
            "2 usage."
        ),
    )
    parser.add_argument(
        "tool", metavar="TOOL", nargs="?", help="the tool name (code_navigate) or op (navigate)"
    )
    parser.add_argument("--json", dest="payload", metavar="JSON", default="{}", help="the tool's arguments")
    parser.add_argument(
        "--deadline",
        metavar="SECONDS",
        type=positive_seconds,
        default=COLD_DEADLINE,
        help=f"the call's time budget, server start and readiness included (default {COLD_DEADLINE:g}: "
        "a first call is a cold start)",
    )
    add_intel_arguments(parser)
    daemon = parser.add_argument_group("the warm daemon")
    daemon.add_argument(
        "--no-daemon",
        action="store_true",
        help="answer in this process: start the servers the call needs and stop them after (a cold start)",
    )
    daemon.add_argument(
        "--idle-timeout",
        metavar="SECONDS",
        type=positive_seconds,
        default=None,
        help="stop the daemon and its servers after this long without a call (default 300; the latest "
        "call's value holds)",
    )
    daemon.add_argument(
        "--stall-timeout",
        metavar="SECONDS",
        type=positive_seconds,
        default=STALL_TIMEOUT,
        help=f"how long past --deadline to wait for the daemon's answer before it counts as stalled: it is "
        f"then killed with its servers, the call exits 1 and the next one starts a new daemon (default "
        f"{STALL_TIMEOUT:g}; the call's whole wait is --deadline plus this)",
    )
    daemon.add_argument(
        "--stop",
        action="store_true",
        help="stop the daemons of these workspaces and their servers (no TOOL), then exit",
    )
    decision = daemon.add_mutually_exclusive_group()
    decision.add_argument(
        "--approve",
        metavar="TRANSACTION_ID",
        help="apply the edit a dry run of TOOL previewed (its transactionId; write --approve=ID: an id may "
        "start with -), exactly as previewed",
    )
    decision.add_argument(
        "--discard", metavar="TRANSACTION_ID", help="drop the edit a dry run of TOOL previewed"
    )
    parser.set_defaults(handler=run_code)


def tool_spec(name: str) -> ToolSpec:
    """The tool called ``name`` (or with that op).

    :raises UsageError: no tool has that name: nothing runs (exit 2, not a tool's answer).
    """
    from kandev_lsp.intel.surface.schemas import ALL_TOOLS, tool_by_name

    spec = tool_by_name(name)
    if spec is None:
        raise UsageError(f"no tool {name!r}; the tools are: {', '.join(t.name for t in ALL_TOOLS)}")
    return spec


def exit_status(result: dict[str, Any]) -> int:
    """0 when the tool's result is ``ok``, else 1."""
    return 0 if result.get("ok") else 1


def dry_run(result: dict[str, Any], *, held_by: str | None = None) -> dict[str, Any]:
    """A parked mutation of ``kandev-lsp code``: nothing was written (``dryRun``).

    :param held_by: the tool's name when a daemon holds the transaction: the result keeps its
        ``transactionId`` and says how to apply or discard it. Without one (a one-shot run) the
        transaction ends with this process, so the result offers no ``transactionId`` nobody can approve.
    """
    if not result.get("needsApproval"):
        return result
    transaction = result.get("transactionId")
    if held_by is not None and isinstance(transaction, str):
        result = {**result, "dryRun": True}
        expires = result.get("expiresInSeconds")
        within = f"within {expires:.0f} s" if isinstance(expires, (int, float)) else "before it expires"
        result["next"] = (
            f"nothing was written yet. Review the preview, then apply exactly this edit with "
            f"`kandev-lsp code {held_by} --approve={transaction}` (the same --workspace, --env and "
            f"--settings flags) {within}, or drop it with --discard={transaction}; the daemon of these "
            "workspaces holds it until then"
            + (
                " (an edit never auto-approved: --approve is its explicit approval)"
                if result.get("approvalReasons")
                else ""
            )
        )
        return result
    result = {key: value for key, value in result.items() if key not in ("transactionId", "expiresInSeconds")}
    result["dryRun"] = True
    result["next"] = (
        "nothing was written: a one-shot run cannot be approved later. Review the preview, then run the "
        "same command with --auto-approve to apply it"
        + (
            " (this edit needs an explicit approval even then: use `kandev-lsp mcp`, or the warm daemon's "
            "--approve)"
            if result.get("approvalReasons")
            else ""
        )
    )
    return result


def call_payload(args: argparse.Namespace) -> Any:
    """The tool's arguments, after the checks that need no server (and, but for ``--approve`` /
    ``--discard``, which ask whether the tool only reads, not the tools' catalogue).

    ``--approve=ID`` / ``--discard=ID`` are the second step of a parked edit:
    ``{"transactionId": ID, "approve": true | false}``.
    """
    check_flags(args)
    transaction = args.approve or args.discard
    if transaction is not None:
        if args.payload != "{}":
            raise UsageError("--approve and --discard apply the previewed edit as it was: drop --json")
        spec = tool_spec(args.tool)  # the tools' catalogue, on this rare path only
        if spec.read_only:  # the dispatcher would refuse "transactionId" and "approve" as unknown arguments
            raise UsageError(
                f"{spec.name} only reads: it previews no edit, so it has no transaction to approve or "
                "discard; run --approve/--discard with the tool that previewed the edit (its preview's "
                "`next` names the command)"
            )
        return {"transactionId": transaction, "approve": args.approve is not None}
    try:
        payload = json.loads(args.payload)
    except json.JSONDecodeError as error:
        raise UsageError(f"--json is not JSON: {error}") from None
    if not isinstance(payload, dict):  # as malformed JSON: the command line is wrong, nothing ran
        raise UsageError(
            f"--json must be a JSON object ({{...}}) of the tool's arguments, got {args.payload!r}"
        )
    return payload


def run_code(args: argparse.Namespace) -> int:
    from kandev_lsp.codedaemon.wire import supported

    if args.stop:
        if args.tool is not None or args.approve or args.discard:
            raise UsageError("--stop takes no TOOL, --approve or --discard: it only stops the daemons")
        return stop_daemons(args, warm=supported())
    warm = not args.no_daemon and supported()
    if args.tool is None:
        raise UsageError("name a TOOL (code_navigate, code_hover, ...), or pass --stop")
    payload = call_payload(args)
    folders = workspace_folders(args)
    if warm:
        result = _ask_daemon(args, folders, payload)
        if result is not None:
            return _print_result(result)
    if args.approve or args.discard:
        raise UsageError(
            "--approve and --discard need the warm daemon, which holds the previewed edit: a one-shot run "
            "(--no-daemon, or a platform without it) has no transaction to decide; use --auto-approve"
        )
    return _print_result(_one_shot(args, payload))


def _one_shot(args: argparse.Namespace, payload: Any) -> dict[str, Any]:
    """Answer in this process: start the servers, call, stop them (none for a call :func:`refusal`
    refuses, as the warm path starts no daemon for it)."""
    import asyncio

    from kandev_lsp.intel.surface.dispatch import IntelContext

    refused = refusal(args, payload)
    if refused is not None:
        return refused

    async def call() -> dict[str, Any]:
        async with open_service(args) as service:
            ctx = IntelContext(deadline=args.deadline, auto_approve=args.auto_approve)
            return await service.dispatch(args.tool, payload, ctx)

    return dry_run(asyncio.run(call()))


def _print_result(result: dict[str, Any]) -> int:
    print_json(result)
    sys.stdout.flush()
    return exit_status(result)


# The warm daemon's client side ----------------------------------------------------------------------------
def daemon_identity(args: argparse.Namespace, folders: list[str]) -> dict[str, Any]:
    """What a daemon must equal to answer this call (:mod:`kandev_lsp.codedaemon.names`): the roots, the
    servers' environment, the settings file, the service's flags, and this installation."""
    import kandev_lsp
    from kandev_lsp.codedaemon.names import identity_environment
    from kandev_lsp.codedaemon.wire import PROTOCOL

    settings = args.settings or os.environ.get("KANDEV_LSP_SETTINGS") or None
    return {
        "protocol": PROTOCOL,
        "python": sys.executable,
        "package": os.path.dirname(kandev_lsp.__file__),
        "stamp": os.stat(kandev_lsp.__file__).st_mtime_ns,
        "roots": folders,
        "environment": identity_environment(os.environ),
        "env": list(args.env),
        # The daemon runs in /: a relative settings path means the caller's folder.
        "settings": os.path.abspath(settings) if settings else None,
        "install": bool(args.install),
        "readOnly": bool(args.read_only),
        "disable": list(args.disable_tool),
    }


def _ask_daemon(args: argparse.Namespace, folders: list[str], payload: Any) -> dict[str, Any] | None:
    """The warm daemon's answer to this call (started when none answers), or None when no daemon can
    answer here (a warning says why; the caller answers one-shot).

    :raises UsageError: the daemon refused the call as the one-shot path would (an unknown tool, a bad flag).
    :raises KandevLspError: the daemon could not answer (lost during the call, no daemon to approve with).
    """
    from kandev_lsp.codedaemon import client
    from kandev_lsp.codedaemon.names import NoPrivateFolder, daemon_files, runtime_folder
    from kandev_lsp.errors import KandevLspError

    identity = daemon_identity(args, folders)
    request = {
        "op": "call",
        "protocol": identity["protocol"],
        "identity": identity,
        "tool": args.tool,
        "payload": payload,
        "deadline": args.deadline,
        "autoApprove": bool(args.auto_approve),
        "idleTimeout": args.idle_timeout,
    }
    deciding = args.approve or args.discard
    try:
        files = daemon_files(runtime_folder(), identity)
        reply = client.ask(
            files,
            request,
            timeout=args.deadline + args.stall_timeout,
            start=None if deciding else _starter(args, files, identity, payload),
        )
    except client.NotRunning:
        raise KandevLspError(
            f"no daemon is running for these workspaces, so transaction {deciding} is gone (a daemon "
            "exits when idle, on --stop, on a settings change or a crash): nothing was applied; run the "
            "mutation again for a new preview"
        ) from None
    except (NoPrivateFolder, client.Unavailable) as error:
        print(
            f"kandev-lsp code: warning: the warm daemon is not available ({error}); answering in this "
            "process (a cold start; --no-daemon skips the daemon)",
            file=sys.stderr,
        )
        return None
    except client.Lost as lost:
        if not lost.stalled:
            raise KandevLspError(str(lost)) from None
        client.put_down(files, lost.pid)
        raise KandevLspError(
            f"{lost}: it was stalled, and is stopped now (killed, with its servers); the call may or may not "
            "have run; the next call starts a new daemon"
        ) from None
    said = reply.get("stderr")  # what a one-shot run would have said on stderr as it started
    if isinstance(said, str):
        sys.stderr.write(said)
    if "usage" in reply:
        raise UsageError(str(reply["usage"]))
    if "error" in reply:
        raise KandevLspError(str(reply["error"]))
    result = reply.get("result")
    if not isinstance(result, dict):
        raise KandevLspError(f"the daemon answered something other than a result: {sorted(reply)}")
    return result


def _starter(
    args: argparse.Namespace, files: DaemonFiles, identity: dict[str, Any], payload: Any
) -> Callable[[], dict[str, Any] | None]:
    """Starts the daemon of ``identity`` (called under its lock when none answers), unless the call is
    refused before any server would be asked: then that refusal is the answer, and nothing is started.
    With :data:`~kandev_lsp.codedaemon.lifetime.MAX_DAEMONS` running for these roots already, the least
    recently used idle one is retired first, and a note on stderr says what differs from it."""

    def start() -> dict[str, Any] | None:
        from kandev_lsp.codedaemon.client import make_room
        from kandev_lsp.codedaemon.lifetime import MAX_DAEMONS
        from kandev_lsp.codedaemon.starter import start_daemon

        refused = refusal(args, payload)
        if refused is not None:
            return {"result": refused}
        for retired in make_room(files, identity, limit=MAX_DAEMONS):
            differs = ", ".join(str(part) for part in retired.get("differs") or ()) or "nothing it could name"
            print(
                f"kandev-lsp code: note: replaced the idle daemon (pid {retired['retired']}) of these "
                f"workspaces that had gone unused longest: at most {MAX_DAEMONS} run for one workspace "
                f"set, one per configuration, and this call's differs from its in {differs} (a variable "
                "that changes with every call makes each call a cold one)",
                file=sys.stderr,
            )
        return start_daemon(files, identity, idle_timeout=args.idle_timeout, timeout=START_TIMEOUT)

    return start


class _Admitted(Exception):
    """Raised by :class:`_NoServers`' tool bodies: the call passed every check that comes before them."""


class _NoServers:
    """Every tool body of a :class:`~kandev_lsp.intel.surface.dispatch.Dispatcher`, read and mutating,
    none with a server behind it: a call reaches one only after the dispatcher's own checks (the tool, a
    disabled one, the schema, the rules between fields, ``firstMatch``), and it raises :class:`_Admitted`."""

    def __getattr__(self, op: str) -> Any:
        async def body(*_: Any) -> dict[str, Any]:
            raise _Admitted

        return body


def refusal(args: argparse.Namespace, payload: Any) -> dict[str, Any] | None:
    """The ``ok: false`` result the call gets before any server is asked, or None when it passes.

    The same dispatcher a daemon (or a one-shot run) answers with, in front of bodies that are no server
    (:class:`_NoServers`): so a call that the daemon would refuse at once (``code_hover`` without a
    target, an argument of the wrong type, a tool ``--disable-tool`` or ``--read-only`` turns off) gets
    the very result the daemon would give, and starts no daemon that would idle for minutes; the one-shot
    path asks it first too, so neither loads the plugins and settings for such a call (nor says what they
    would have said on stderr). A warm call does not ask it (the import is the tools' catalogue and
    asyncio): its running daemon checks the same. A tool that the settings file disables is left to the
    service (reading the file needs the plugins).

    :raises UsageError: no tool has that name, or ``--disable-tool`` names none (exit 2, nothing ran).
    """
    import asyncio
    from typing import cast

    from kandev_lsp.intel.surface.dispatch import Dispatcher, IntelContext, MutationTools, ReadTools

    tool_spec(args.tool)
    stand_in = _NoServers()
    try:
        dispatcher = Dispatcher(
            cast(ReadTools, stand_in),
            mutations=None if args.read_only else cast(MutationTools, stand_in),
            disabled=args.disable_tool,
        )
    except ValueError as error:  # as IntelService.open's refusal of the same flags
        raise UsageError(str(error)) from None
    ctx = IntelContext(deadline=args.deadline, auto_approve=args.auto_approve)
    try:
        return dry_run(asyncio.run(dispatcher.dispatch(args.tool, payload, ctx)))
    except _Admitted:
        return None


def stop_daemons(args: argparse.Namespace, *, warm: bool) -> int:
    """``--stop``: stop every daemon of these workspace roots (whatever their environment), wait until
    their servers are stopped, and say which."""
    stopped: list[int] = []
    if warm:
        from kandev_lsp.codedaemon import client
        from kandev_lsp.codedaemon.names import NoPrivateFolder, runtime_folder

        try:
            folder = runtime_folder()
        except NoPrivateFolder as error:
            print(f"kandev-lsp code: warning: {error}", file=sys.stderr)
        else:
            stopped = client.stop_all(folder, named_roots(args), timeout=STOP_TIMEOUT)
    count = len(stopped)
    summary = (
        f"stopped {count} daemon{'s' if count != 1 else ''} and {'their' if count != 1 else 'its'} servers"
        if count
        else "no daemon was running for these workspaces"
    )
    return _print_result({"ok": True, "stopped": stopped, "summary": summary})
