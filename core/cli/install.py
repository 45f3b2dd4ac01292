"""``kandev-lsp install LANG``, ``uninstall LANG`` and ``list``: the managed cache from the command line.

Imported by every ``kandev-lsp`` run to register the subcommands, so the module itself stays light:
asyncio and the installers are imported inside the handlers.

Exit statuses (:class:`kandev_lsp.codes.ExitStatus`, the same for every command): 0 done (or already
installed / nothing to remove), 2 usage (bad flags, a ``--version`` or ``--sha256`` the recipe cannot
use), 11 nothing can install the language here, 12 the managed cache cannot be used, 13 unknown language,
20 the install failed. SIGINT (Ctrl-C), SIGTERM and SIGHUP cancel the install: npm/go are stopped with their whole tree, the staging folder is removed, and then
the process dies by the same signal (a shell shows 130, 143 or 129). With ``--json`` the result is
printed as one JSON object on stdout in every case, a cancellation included; progress goes to stderr (a
bar on a terminal, one line per phase otherwise).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from kandev_lsp.cli.common import (
    add_settings_argument,
    add_task_arguments,
    load_plugins,
    load_user_settings,
    print_json,
    task_from_args,
)
from kandev_lsp.codes import ExitStatus
from kandev_lsp.errors import UnknownLanguageError
from kandev_lsp.platform import HostPlatform

if TYPE_CHECKING:
    from kandev_lsp.cancel import SignalCancel
    from kandev_lsp.host import PluginHost
    from kandev_lsp.install import InstallProgress, InstallReceipt
    from kandev_lsp.settings import UserSettings
    from kandev_lsp.taskenv import Task

INSTALL_SCHEMA = "kandev-lsp/install"
LIST_SCHEMA = "kandev-lsp/installed"
SCHEMA_VERSION = 1


def add_install_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``install``, ``uninstall`` and ``list``."""
    install = subparsers.add_parser(
        "install",
        help="install the language server for LANG into the managed cache",
        description=(
            "Install the pinned server for LANG (or --version) into <task HOME>/.kandev/lsp-servers, verify "
            "that it runs, and make it current. An install that is already current is reused. Exit 0 "
            "installed; 2 usage; 11 no installer here; 12 the managed cache is unusable; 13 unknown "
            "language; 20 failed (the previous version stays current). SIGINT, SIGTERM and SIGHUP cancel "
            "it (nothing left running or half-written), then it dies by that signal."
        ),
    )
    install.add_argument("language", metavar="LANG")
    install.add_argument(
        "--version", dest="server_version", metavar="V", help="install this exact version instead of the pin"
    )
    install.add_argument(
        "--sha256",
        metavar="HEX",
        help="the digest a release download must have, for a version or mirror with no pinned or published "
        "digest (release recipes only)",
    )
    install.add_argument("--json", action="store_true", help="print the receipt (or the error) as JSON")
    add_task_arguments(install)
    add_settings_argument(install)
    install.set_defaults(handler=run_install)

    uninstall = subparsers.add_parser(
        "uninstall",
        help="remove LANG's managed server from the cache",
        description="Remove every managed version of LANG from the task's cache. Exit 0 also when none "
        "was there; 13 when no plugin provides LANG and the cache holds none of it either; 20 the cache "
        "could not be changed (permissions, or a folder of it that is a symbolic link).",
    )
    uninstall.add_argument("language", metavar="LANG")
    uninstall.add_argument("--json", action="store_true", help="machine-readable output")
    add_task_arguments(uninstall)
    uninstall.set_defaults(handler=run_uninstall)

    listing = subparsers.add_parser(
        "list",
        help="list the servers installed in the managed cache",
        description="Every language with a managed install in the task's cache: version, whether it is "
        "what the plugin pins today, and whether its executable is present. Exit 0 (also when nothing is "
        "installed or the cache is disabled); 1 an unreadable --env-file.",
    )
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    add_task_arguments(listing)
    listing.set_defaults(handler=run_list)


# Progress -------------------------------------------------------------------------------------------
class ProgressPrinter:
    """Shows install progress on ``stream``: a redrawn bar on a terminal, one line per phase otherwise."""

    BAR_WIDTH = 24
    REDRAW_INTERVAL = 0.1

    def __init__(self, stream: TextIO, *, tty: bool) -> None:
        self._stream = stream
        self._tty = tty
        self._last_phase = ""
        self._line_open = False
        self._last_draw = 0.0

    def __call__(self, report: InstallProgress) -> None:
        if not worth_showing(report):
            return
        if self._tty:
            self._draw(report)
        elif report.phase != self._last_phase:
            detail = f": {report.message}" if report.message else ""
            self._stream.write(f"kandev-lsp: {report.language}: {report.phase.replace('_', ' ')}{detail}\n")
            self._stream.flush()
        self._last_phase = report.phase

    def _draw(self, report: InstallProgress) -> None:
        now = time.monotonic()
        downloading = report.phase == "downloading" and report.bytes_done is not None
        final = report.bytes_total is not None and report.bytes_done == report.bytes_total
        if (
            downloading
            and report.phase == self._last_phase
            and not final
            and now - self._last_draw < self.REDRAW_INTERVAL
        ):
            return
        self._last_draw = now
        text = f"{report.language}: {report.phase.replace('_', ' ')}"
        if downloading and report.bytes_done is not None:
            text += " " + _bar(report.bytes_done, report.bytes_total, self.BAR_WIDTH)
        elif report.message:
            text += f" - {report.message}"
        text = text[:118]
        self._stream.write("\r\x1b[2K" + text)
        self._line_open = True
        if report.phase == "done":
            self.finish()
        self._stream.flush()

    def finish(self) -> None:
        """End the bar's line (after success, failure or Ctrl-C)."""
        if self._line_open:
            self._stream.write("\n")
            self._stream.flush()
            self._line_open = False


def worth_showing(report: InstallProgress) -> bool:
    """Whether a person should see ``report``: every install starts with a ``waiting_for_lock`` report
    sent before the lock is tried, which says nothing unless it carries a message (then another install
    holds the lock, and this one waits for it)."""
    return report.phase != "waiting_for_lock" or bool(report.message)


def _bar(done: int, total: int | None, width: int) -> str:
    megabytes = done / 1e6
    if not total:
        return f"{megabytes:.1f} MB"
    share = min(done / total, 1.0)
    filled = int(share * width)
    return (
        f"[{'#' * filled}{'.' * (width - filled)}] {share * 100:3.0f}% {megabytes:.1f}/{total / 1e6:.1f} MB"
    )


# Handlers -------------------------------------------------------------------------------------------
def run_install(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from kandev_lsp.cancel import die_by_signal
    from kandev_lsp.install import InstallCancelled, InstallError

    plugins = load_plugins()
    task = task_from_args(args)
    if task.host != HostPlatform.current():
        message = f"install runs on this machine ({HostPlatform.current()}); drop --platform"
        return _report(args, _outcome(args, "usage", message), ExitStatus.USAGE)
    try:
        plugins.language(args.language)
    except UnknownLanguageError as exc:
        return _report(args, _outcome(args, "unknown_language", str(exc)), ExitStatus.of(exc.failure))
    settings = load_user_settings(args, plugins.languages())
    printer = ProgressPrinter(sys.stderr, tty=sys.stderr.isatty() and not args.json)
    signals: list[SignalCancel] = []
    try:
        receipt = asyncio.run(
            _install(
                plugins, task, args.language, args.server_version, args.sha256, printer, settings, signals
            )
        )
    except (KeyboardInterrupt, InstallCancelled):
        printer.finish()
        received = signals[0].received if signals else None
        name = signal.Signals(received).name if received is not None else "SIGINT"
        _report(args, _outcome(args, "cancelled", f"cancelled by {name}"), ExitStatus.INTERRUPTED)
        # Everything is stopped and removed by now: leave the way the signal asked.
        die_by_signal(received if received is not None else int(signal.SIGINT))
        return ExitStatus.INTERRUPTED
    except InstallError as exc:
        printer.finish()
        status = ExitStatus.of(exc.failure)
        return _report(args, _outcome(args, _INSTALL_STATUS.get(status, "failed"), str(exc)), status)
    printer.finish()
    if args.json:
        installed = {"executable": receipt.executable_path, "receipt": receipt.to_json()}
        print_json(_outcome(args, "installed", None) | installed)
    else:
        print(f"{args.language}: {receipt.version} is installed: {receipt.executable_path}")
    return ExitStatus.OK


#: ``install --json``'s ``status`` for each failing exit status (any other failure is ``failed``).
_INSTALL_STATUS = {
    ExitStatus.USAGE: "usage",
    ExitStatus.NO_INSTALLER: "no_installer",
    ExitStatus.CACHE_UNAVAILABLE: "cache_unavailable",
}


async def _install(
    plugins: PluginHost,
    task: Task,
    language: str,
    version: str | None,
    sha256: str | None,
    printer: ProgressPrinter,
    settings: UserSettings,
    signals: list[SignalCancel],
) -> InstallReceipt:
    from kandev_lsp.cancel import CancelToken, SignalCancel
    from kandev_lsp.lifecycle import install_manager_for

    # A cancelling signal sets the token; the install then stops npm/go (the whole tree) and removes its
    # staging folder, and leaving the manager's block waits for all of it, before asyncio.run returns.
    cancel = CancelToken()
    async with SignalCancel(cancel) as handler, install_manager_for(plugins, settings) as manager:
        signals.append(handler)
        return await manager.install(
            language, task, version=version, sha256=sha256, progress=printer, cancel=cancel
        )


def _running_servers(task: Task, language: str) -> list[tuple[int, str]]:
    """The processes running from ``language``'s managed cache, looked up before it is removed (after,
    their command lines still name the files, but nothing says they were ours)."""
    from pathlib import Path

    from kandev_lsp.install.owners import running_from

    root = task.env.cache_root()
    return running_from(Path(root, language)) if root is not None else []


def run_uninstall(args: argparse.Namespace) -> int:
    import asyncio

    from kandev_lsp.install import InstallError, InstallManager

    plugins = load_plugins()
    task = task_from_args(args)
    running = _running_servers(task, args.language)

    async def remove() -> bool:
        async with InstallManager(plugins) as manager:
            return await manager.uninstall(args.language, task)

    try:
        removed = asyncio.run(remove())
    except KeyboardInterrupt:
        return ExitStatus.INTERRUPTED
    except InstallError as exc:  # with --json, answered in the install schema as install's failures are
        return _report(args, _outcome(args, "failed", str(exc)), ExitStatus.of(exc.failure))
    if not removed and args.language not in plugins.languages():
        # Nothing of it in the cache and no plugin for it: a typo, not "nothing to remove". A language
        # whose plugin is gone but whose server is still cached was removed above.
        unknown = UnknownLanguageError(args.language, sorted(plugins.languages()))
        return _report(args, _outcome(args, "unknown_language", str(unknown)), ExitStatus.of(unknown.failure))
    if removed and running:
        shown = ", ".join(f"{pid} ({name})" for pid, name in running[:5])
        print(
            f"kandev-lsp: {args.language}: {len(running)} process(es) still run from the removed files "
            f"(pid {shown}{', ...' if len(running) > 5 else ''}); they keep what they have open but may fail "
            "to load more: restart them (restart the editor's language server, or its session)",
            file=sys.stderr,
        )
    if args.json:
        print_json(
            {
                "schema": INSTALL_SCHEMA,
                "version": SCHEMA_VERSION,
                "language": args.language,
                "status": "removed" if removed else "not_installed",
            }
        )
    elif removed:
        print(f"{args.language}: removed from the managed cache")
    else:
        print(
            f"{args.language}: nothing installed in the managed cache ({task.env.cache_root() or 'disabled'})"
        )
    return ExitStatus.OK


def run_list(args: argparse.Namespace) -> int:
    from kandev_lsp.install import InstallManager

    plugins = load_plugins()
    task = task_from_args(args)
    servers = InstallManager(plugins).installed(task)
    root = task.env.cache_root()
    if args.json:
        print_json(
            {
                "schema": LIST_SCHEMA,
                "version": SCHEMA_VERSION,
                "cacheRoot": root,
                "servers": [server.to_json() for server in servers],
            }
        )
        return ExitStatus.OK
    if root is None:
        print("the managed cache is disabled: the task's HOME is not an absolute path")
        return ExitStatus.OK
    if not servers:
        print(f"no servers installed in {root}")
        return ExitStatus.OK
    for server in servers:
        notes = []
        if not server.plugin_loaded:
            notes.append("no loaded plugin declares this language")
        elif not server.matches_pin:
            notes.append("differs from the plugin's pin: run `kandev-lsp install " + server.language + "`")
        if not server.binary_present:
            notes.append("executable missing: reinstall")
        mark = "ok " if server.binary_present and server.matches_pin else "!! "
        note = f"  ({'; '.join(notes)})" if notes else ""
        print(f"{mark}{server.language:<11} {server.receipt.version:<12} {server.executable}{note}")
    return ExitStatus.OK


def _outcome(args: argparse.Namespace, status: str, error: str | None) -> dict[str, Any]:
    """``install --json``'s object: what happened to the install of ``args.language``."""
    return {
        "schema": INSTALL_SCHEMA,
        "version": SCHEMA_VERSION,
        "language": args.language,
        "status": status,
        **({"error": error} if error is not None else {}),
    }


def _report(args: argparse.Namespace, outcome: dict[str, Any], code: int) -> int:
    if args.json:
        print_json(outcome)
    else:
        print(f"kandev-lsp: {outcome['error']}", file=sys.stderr)
    return code
