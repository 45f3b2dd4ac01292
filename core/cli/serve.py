"""``kandev-lsp serve``: the task-host stream route (contract: docs/stream-contract.md).

Module-level imports stay light: the CLI imports every subcommand to build its parser, and ``resolve``
must not pay for websockets. The server is imported inside the handler.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kandev_lsp.cli.common import add_settings_argument, add_task_arguments, load_plugins, task_from_args
from kandev_lsp.workspace_access import check_workspace

if TYPE_CHECKING:
    from kandev_lsp.host import PluginHost
    from kandev_lsp.language import LanguageSpec
    from kandev_lsp.settings import SettingsFile
    from kandev_lsp.stream.auth import StreamToken
    from kandev_lsp.stream.server import StreamConfig
    from kandev_lsp.taskenv import Task

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def add_stream_task_arguments(parser: argparse.ArgumentParser) -> None:
    """The task flags (no ``--platform``: a server runs on this host) and ``--settings``."""
    add_task_arguments(parser, simulated_platform=False)
    add_settings_argument(parser, live=True)


def add_log_level_argument(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--log-level",
        default=default,
        choices=["debug", "info", "warning", "error"],
        help=f"log level of the structured log on stderr (default: {default})",
    )


def add_listen_arguments(parser: argparse.ArgumentParser) -> None:
    """``--host`` and ``--port``, the address a listening command binds (``serve``, ``broker``)."""
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, loopback only)"
    )
    parser.add_argument(
        "--port", type=_port, default=0, help="port to bind, 0-65535 (default: 0, pick a free one)"
    )


def _port(value: str) -> int:
    """A TCP port, checked here: the socket's bind would raise OverflowError (a traceback, exit 1)."""
    try:
        number = int(value)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port: give 0-65535 (0 picks a free one)")
    return number


def add_allow_origin_argument(parser: argparse.ArgumentParser, default: str) -> None:
    """``--allow-origin ORIGIN``, repeatable: the browser origins whose pages may connect (see
    :mod:`kandev_lsp.stream.origins`); checked here so a typo exits 2 before anything listens."""
    parser.add_argument(
        "--allow-origin",
        metavar="ORIGIN",
        action="append",
        type=_origin_argument,
        help=(
            "a browser origin (scheme://host[:port], e.g. https://kandev.example) whose pages may connect; "
            "repeat for several, * for any. A request with another Origin header gets 403; clients that "
            f"send none (editors, agentctl) are unaffected ({default})"
        ),
    )


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number")
    return number


def _origin_argument(value: str) -> str:
    from kandev_lsp.stream.origins import ANY_ORIGIN, normalize_origin

    if value.strip() == ANY_ORIGIN:
        return ANY_ORIGIN
    try:
        return normalize_origin(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def configure_logging(level: str) -> None:
    """Structured ``event=... key=value`` lines on stderr (stdout is reserved for machine output)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger("kandev_lsp")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
    # websockets logs every handshake; its failures reach us as exceptions anyway.
    logging.getLogger("websockets").setLevel(logging.ERROR)


def stream_task(args: argparse.Namespace) -> Task:
    """The task from the flags; the workspace must be an existing folder kandev-lsp can read."""
    task = task_from_args(args)
    check_workspace(task.workspace)
    return task


def open_settings(args: argparse.Namespace, known: Mapping[str, LanguageSpec]) -> SettingsFile:
    from kandev_lsp.settings import SettingsFile

    return SettingsFile(args.settings, known=known)


def add_serve_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve the task-host LSP stream over WebSocket",
        description=(
            "Serve GET /api/v1/lsp/stream?language=L&autoInstall=1 for one task (see "
            "docs/stream-contract.md). Prints one JSON line on stdout when listening: "
            '{"event": "listening", "url": ..., "port": ...} (plus "token" when it generated one). '
            "Clients authenticate with 'Authorization: Bearer <token>'. SIGINT/SIGTERM/SIGHUP close every "
            "connection with 1001 and stop every server, then it exits 0. Exit 1 when it cannot start: the "
            "workspace, the settings, env or token file cannot be used, or the port cannot be bound."
        ),
    )
    add_stream_task_arguments(parser)
    add_listen_arguments(parser)
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        help="read the bearer token from FILE (else $KANDEV_LSP_TOKEN, else a random token is printed once)",
    )
    add_allow_origin_argument(
        parser, "default: any, since a browser page cannot send the bearer token on a WebSocket"
    )
    parser.add_argument(
        "--max-sessions",
        metavar="N",
        type=_positive_int,
        default=None,
        help=(
            "concurrent sessions, each a language server (default: 16); one more is closed with 4005 "
            "'too many language servers' before anything starts"
        ),
    )
    add_log_level_argument(parser, "info")
    parser.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    import asyncio

    from kandev_lsp.stream.auth import load_token

    configure_logging(args.log_level)
    task = stream_task(args)
    plugins = load_plugins()
    settings = open_settings(args, plugins.languages())
    token = load_token(args.token_file)
    config = stream_config(args)
    try:
        return asyncio.run(serve_until_signalled(plugins, task, token, config, settings))
    except OSError as exc:
        print(f"kandev-lsp: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1


def stream_config(args: argparse.Namespace) -> StreamConfig:
    """The server's settings from the flags (a flag left out keeps :class:`StreamConfig`'s default)."""
    from kandev_lsp.stream.server import StreamConfig

    config = StreamConfig(host=args.host, port=args.port)
    if args.allow_origin:
        config = dataclasses.replace(config, allowed_origins=tuple(args.allow_origin))
    if args.max_sessions is not None:
        config = dataclasses.replace(config, max_sessions=args.max_sessions)
    return config


async def serve_until_signalled(
    plugins: PluginHost, task: Task, token: StreamToken, config: StreamConfig, settings: SettingsFile | None
) -> int:
    """Serve until SIGINT, SIGTERM or SIGHUP, then close every session; the listening line goes to stdout
    (see :mod:`kandev_lsp.cli.listening`)."""
    from kandev_lsp.cli.listening import listen_until_signalled
    from kandev_lsp.stream.server import StreamServer

    def describe(server: StreamServer) -> dict[str, Any]:
        return {"url": server.url, "host": config.host, "port": server.port, "workspace": task.workspace}

    return await listen_until_signalled(
        StreamServer(plugins=plugins, task=task, token=token, config=config, settings=settings),
        describe,
        token,
    )
