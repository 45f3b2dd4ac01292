"""``kandev-lsp resolve LANG``: the resolver for agentctl and people (contract: docs/resolve-contract.md).

Its exit codes (0 found, 10-13 missing) are :data:`kandev_lsp.codes.RESOLVE_EXIT_CODES`, read by
:attr:`kandev_lsp.resolver.Resolution.exit_code`.
"""

from __future__ import annotations

import argparse
import sys

from kandev_lsp.cli.common import add_task_arguments, load_plugins, print_json, task_from_args


def add_resolve_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "resolve",
        help="find the language server for LANG in a task",
        description=(
            "Find a working server for LANG in the task's environment. Exit 0 when found; 10 missing but "
            "installable; 11 missing with no installer on this host; 12 the managed cache is unusable "
            "(HOME not absolute, or the cache inside the workspace, HOME with it or not); 13 unknown "
            "language; 1 an unreadable --env-file. See docs/resolve-contract.md."
        ),
    )
    parser.add_argument("language", metavar="LANG")
    parser.add_argument("--json", action="store_true", help="print the versioned JSON contract")
    parser.add_argument("--explain", action="store_true", help="list every candidate considered and why")
    add_task_arguments(parser)
    parser.set_defaults(handler=run_resolve)


def run_resolve(args: argparse.Namespace) -> int:
    from kandev_lsp.resolver import Resolver

    task = task_from_args(args)
    resolution = Resolver(load_plugins()).resolve(args.language, task)
    if args.json:
        print_json(resolution.to_json(explain=args.explain))
        return resolution.exit_code
    if args.explain:
        for number, step in enumerate(resolution.trail, start=1):
            where = step.path or "-"
            print(f"{number:>3}. {step.verdict:<8} {step.source:<22} {where}  ({step.reason})")
    if resolution.found:
        print(" ".join(resolution.argv))
    else:
        print(f"kandev-lsp: {resolution.message}", file=sys.stderr)
    return resolution.exit_code
