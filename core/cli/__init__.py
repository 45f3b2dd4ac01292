"""The ``kandev-lsp`` command.

Each subcommand lives in its own module with an ``add_*_parser(subparsers)`` function that registers it
and sets ``handler``. Module-level imports here stay light: ``kandev-lsp resolve`` runs in short-lived
processes on the agent's hot path, so the installers, the stream and the LSP types are imported inside
the handlers that need them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kandev_lsp.errors import KandevLspError

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    from kandev_lsp.cli import doctor, info, install, resolve, run, serve

    parser = argparse.ArgumentParser(
        prog="kandev-lsp",
        description=(
            "Find, install, run and bridge language servers for task hosts. "
            "Every command that a program might read takes --json."
        ),
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    info.add_info_parsers(subparsers)
    resolve.add_resolve_parser(subparsers)
    doctor.add_doctor_parser(subparsers)
    install.add_install_parsers(subparsers)
    serve.add_serve_parser(subparsers)
    run.add_run_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(handler(args))
    except KandevLspError as exc:
        print(f"kandev-lsp: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
