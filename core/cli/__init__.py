"""The ``kandev-lsp`` command.

Each subcommand lives in its own module with an ``add_*_parser(subparsers)`` function that registers it
and sets ``handler``. Start-up stays light because ``kandev-lsp resolve`` runs in short-lived processes
on the agent's hot path and ``kandev-lsp run`` is on an editor's time-to-initialized:

* only the module of the command being run is imported and registered (:data:`COMMANDS` says which
  module registers which command); ``--help`` and unknown commands register them all;
* the installers, the stream and the LSP types are imported inside the handlers that need them;
* argparse's help formatter would import :mod:`shutil` (and through it zlib, bz2 and lzma) just to learn
  the terminal width, on every ``add_argument``: :class:`_HelpFormatter` asks :mod:`os` instead.

Exit statuses: one per kind of outcome for every command, :class:`kandev_lsp.codes.ExitStatus` (2 usage:
argparse's errors and any error whose ``failure`` is ``usage``; 13 unknown language; 1 any other reported
failure; 141 (128 + SIGPIPE) when the reader of stdout went away, as in ``kandev-lsp plugins --json |
head``: then nothing more is written and no traceback is printed). An error reaching :func:`main` exits
with the status of its :attr:`~kandev_lsp.errors.KandevLspError.failure`.

A standard stream the command was started without (``>&-``) is the null device for it
(:func:`_open_closed_standard_streams`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from kandev_lsp.codes import ExitStatus
from kandev_lsp.errors import KandevLspError

# command -> (module under kandev_lsp.cli, the function in it that registers it). A module that
# registers several commands is listed once per command; the order is the order of ``--help``.
COMMANDS: dict[str, tuple[str, str]] = {
    "languages": ("info", "add_info_parsers"),
    "plugins": ("info", "add_info_parsers"),
    "config": ("info", "add_info_parsers"),
    "resolve": ("resolve", "add_resolve_parser"),
    "doctor": ("doctor", "add_doctor_parser"),
    "install": ("install", "add_install_parsers"),
    "uninstall": ("install", "add_install_parsers"),
    "list": ("install", "add_install_parsers"),
    "serve": ("serve", "add_serve_parser"),
    "broker": ("broker", "add_broker_parser"),
    "run": ("run", "add_run_parser"),
    "mcp": ("mcp", "add_mcp_parser"),
    "code": ("code", "add_code_parser"),
}


def _terminal_columns() -> int:
    """What ``shutil.get_terminal_size().columns`` answers, without importing shutil."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _HelpFormatter(argparse.HelpFormatter):
    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        super().__init__(
            prog, indent_increment, max_help_position, _terminal_columns() - 2 if width is None else width
        )


class _ArgumentParser(argparse.ArgumentParser):
    """An ArgumentParser whose subparsers (created through ``add_subparsers``) share the light formatter."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


class _VersionAction(argparse.Action):
    """``kandev-lsp --version``: the installed distribution's version on stdout, exit 0. Looked up only
    when asked, so no other command loads :mod:`importlib.metadata` for it."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.update(nargs=0, default=argparse.SUPPRESS)
        super().__init__(option_strings, argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("kandev-lsp")
        except PackageNotFoundError:  # imported from a source folder that was never installed
            installed = "(not installed: run scripts/setup)"
        print(f"kandev-lsp {installed}")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command`` (a name in :data:`COMMANDS`), only that command is registered."""
    import importlib

    parser = _ArgumentParser(
        prog="kandev-lsp",
        description=(
            "Find, install, run and bridge language servers for task hosts. "
            "Every command that a program might read takes --json."
        ),
    )
    parser.add_argument("--version", action=_VersionAction, help="print kandev-lsp's version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for module_name, register in wanted:
        module = importlib.import_module(f"kandev_lsp.cli.{module_name}")
        getattr(module, register)(subparsers)
    for command_parser in subparsers.choices.values():
        command_parser.set_defaults(command_parser=command_parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    _open_closed_standard_streams()
    try:
        status = _main(arguments)
        # Inside the try: a buffered stdout would otherwise fail at exit. ``run`` hands stdout to its
        # bridge, which closes it when the editor leaves: nothing to flush then.
        if sys.stdout is not None and not sys.stdout.closed:
            sys.stdout.flush()
        return status
    except BrokenPipeError:
        _silence_stdout()
        return ExitStatus.BROKEN_PIPE


def _main(arguments: list[str]) -> int:
    parser = build_parser(arguments[0] if arguments else None)
    args, unknown = parser.parse_known_args(arguments)
    if unknown:
        # argparse would report them with the top-level usage ("kandev-lsp [-h] COMMAND ..."), which
        # says nothing about the command's own flags: its own parser reports them instead.
        getattr(args, "command_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return ExitStatus.USAGE
    try:
        return int(handler(args))
    except KandevLspError as exc:
        status = ExitStatus.of(exc.failure)
        where = f"kandev-lsp {args.command}" if status is ExitStatus.USAGE else "kandev-lsp"
        print(f"{where}: {exc}", file=sys.stderr)
        return status
    except KeyboardInterrupt:
        return ExitStatus.INTERRUPTED


#: The standard streams: descriptor, ``sys`` attribute, ``open`` mode (stderr line-buffered, as Python's).
_STANDARD_STREAMS = ((0, "stdin", "r", -1), (1, "stdout", "w", -1), (2, "stderr", "w", 1))


def _open_closed_standard_streams() -> None:
    """Put the null device on a standard descriptor the command was started without (``kandev-lsp ...
    >&-``, ``<&-``, ``2>&-``), as ``>/dev/null`` would have.

    Python starts such a process with ``sys.stdout`` (or stdin, stderr) set to None, so every answer
    printed, JSON dumped or stdio bridge opened raised AttributeError (a traceback instead of the answer),
    and a message printed to a missing stderr went to stdout instead, where ``run`` speaks LSP. Worse, the
    next file or pipe the process opens takes the free number: a server's pipe would become "stdout". With
    the null device there, a closed stdin is an input that has ended (``run`` and ``mcp`` end as when the
    editor closes it at once) and output to a closed stream is dropped. Descriptors are tried in order, so
    each ``os.open`` lands on the lowest closed one."""
    for fd, name, mode, buffering in _STANDARD_STREAMS:
        try:
            os.fstat(fd)
            continue  # open: whatever it is, it is the caller's
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDONLY if mode == "r" else os.O_WRONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        setattr(sys, name, open(fd, mode, buffering=buffering, encoding="utf-8", closefd=False))  # noqa: SIM115


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
