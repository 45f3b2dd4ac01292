"""``kandev-lsp run LANG``: a stdio language server for any editor, managed by kandev-lsp.

The editor starts ``kandev-lsp run python`` as if it were the server. kandev-lsp resolves the server
(installing it with ``--install``), starts it in the workspace with the task's environment, and bridges
the editor's stdin/stdout to the server's with the same framing limits and configuration answers as the
stream. Nothing but LSP frames is written to stdout; diagnostics (and the server's own stderr) go to
stderr.

Exit status: the server's own when it exits by itself or after the editor's ``exit`` (LSP: 0 after
``shutdown``, 1 without; 128+N when killed by signal N); 0 when the editor closed its input without
``exit``, whatever the server then did (pyright and typescript-language-server exit 1 at end of input), or
the install was cancelled; 10-13 when no server was found (as ``resolve``:
10 installable but ``--install`` not given, 11 no installer here, 12 managed cache disabled, 13 unknown
language); 20 install failed; 21 the server could not be started; 22 malformed or oversized LSP framing
from the editor or the server; 23 the server stopped reading its input or the editor stopped reading its
output; 1 any other error; 2 usage. On SIGINT, SIGTERM or SIGHUP (Emacs and a terminal hangup send it)
``run`` stops the server's whole tree (or cancels the install), then dies by that same signal, as the
server itself would have: editors then report a signal, not an exit status of 128+N.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TYPE_CHECKING, BinaryIO

from kandev_lsp.cli.common import load_plugins
from kandev_lsp.cli.serve import (
    add_log_level_argument,
    add_stream_task_arguments,
    configure_logging,
    open_settings,
    stream_task,
)

if TYPE_CHECKING:
    from kandev_lsp.host import PluginHost
    from kandev_lsp.install import InstallProgress, InstallReceipt
    from kandev_lsp.lifecycle import Lifecycle
    from kandev_lsp.process import OwnedProcess, StartedProcess
    from kandev_lsp.resolver import Resolution
    from kandev_lsp.session import BridgeLimits
    from kandev_lsp.settings import SettingsFile
    from kandev_lsp.stream.bridge import BridgeEnd
    from kandev_lsp.stream.stdio import StdioChannel
    from kandev_lsp.taskenv import Task


def add_run_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run the server for LANG on stdio (the command to give an editor)",
        description=(
            "Resolve the server for LANG, start it in the workspace and bridge stdin/stdout to it. "
            "Exit status: the server's own after the editor's exit (or when it exits by itself); 0 when "
            "the editor closed stdin without exit; 10-13 as `resolve` when no "
            "server was found; 20 install failed; 21 start failed; 22 malformed or oversized framing; "
            "23 a side stopped reading. See docs/stream-contract.md."
        ),
    )
    parser.add_argument("language", metavar="LANG")
    parser.add_argument(
        "--install", action="store_true", help="install the server when it is missing (progress on stderr)"
    )
    add_stream_task_arguments(parser)
    add_log_level_argument(parser, "warning")
    parser.set_defaults(handler=run_run)


def run_run(args: argparse.Namespace) -> int:
    from kandev_lsp.lifecycle import LaunchError, Lifecycle, refusal
    from kandev_lsp.process import can_start_now

    configure_logging(args.log_level)
    task = stream_task(args)
    frames = _frames_only_stdout()
    plugins = load_plugins()
    settings = open_settings(args, plugins.languages())
    lifecycle = Lifecycle(plugins, settings=settings)
    resolution = lifecycle.resolve_now(args.language, task)
    failure = refusal(resolution, lifecycle.policy(requested=args.install))
    if failure is not None:
        hint = (
            f" For an editor, run `kandev-lsp run {args.language} --install`."
            if resolution.installable
            else ""
        )
        print(f"kandev-lsp: {resolution.message}{hint}", file=sys.stderr)
        return launch_exit_code(failure)
    signalled: list[int] = []
    started = None
    if resolution.found and can_start_now():
        _record_stop_signals(signalled)  # until the loop handles them: a signal then must still stop the tree
        # Start the server before asyncio, the session and the bridge are imported (issue 7 item 25): it
        # starts up meanwhile. Until the loop adopts it, only its parent-death signal stops it (if this
        # process dies first); its pipes wait in the kernel's buffers.
        try:
            started = lifecycle.start_now(resolution, task, stderr=_stderr_passthrough)
        except LaunchError as exc:
            print(f"kandev-lsp: {exc}", file=sys.stderr)
            return launch_exit_code(exc.failure)
    import asyncio

    status = asyncio.run(
        run_stdio(plugins, task, resolution, settings, signalled=signalled, stdout=frames, started=started)
    )
    if signalled:
        die_by_signal(signalled[0])
    return status


def _frames_only_stdout() -> BinaryIO | None:
    """The editor's stdout, for LSP frames only, with file descriptor 1 (``sys.stdout``) pointed at
    stderr from now on. A third-party plugin that prints (at import, or in a hook) wrote into the editor's
    LSP stream before the first frame, which an editor takes for a broken server; now its text lands in
    the editor's log with the rest of stderr. The duplicate is not inherited (PEP 446), so the server's
    tree holds no copy of the editor's pipe. None when stdout is not open: :func:`open_stdio` says so."""
    import os

    try:
        sys.stdout.flush()
        frames = os.fdopen(os.dup(1), "wb", buffering=0)
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError):
        return None
    return frames


def _record_stop_signals(received: list[int]) -> None:
    """Record (and otherwise ignore) the stop signals until :func:`run_stdio` handles them in the loop:
    the server already runs while asyncio is imported, and a signal's default action would leave its
    descendants behind. :func:`run_stdio` then stops the tree at once and dies by the first one."""
    import signal

    def record(signum: int, frame: object) -> None:
        if not received:
            received.append(signum)

    for name in STOP_SIGNALS:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), record)


def launch_exit_code(failure: str) -> int:
    """``run``'s exit status when no server could be had (a :class:`~kandev_lsp.lifecycle.LaunchFailure`):
    the status of that failure, as every command has it (10-13 missing, as ``resolve``; 20 install
    failed; 21 start failed), and 0 for a cancelled install: the editor left, nothing failed."""
    from kandev_lsp.codes import ExitStatus

    return ExitStatus.OK if failure == "install_cancelled" else ExitStatus.of(failure)


#: The signals that stop ``run`` (after the server tree is stopped): Ctrl-C, ``kill``, and a hangup
#: (Emacs sends SIGHUP to its subprocesses when it quits; so does a closing terminal).
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


def die_by_signal(signum: int) -> int:
    """End this process by ``signum`` with its default action, as a server started directly would.

    Cleanup is done by then; only the exit is left. An editor then sees "killed by signal N" rather
    than an exit status of 128+N (Neovim warns about every forced stop otherwise). Returns 128+N only
    if the signal did not end the process (it is blocked), so the caller can still exit with it.
    """
    import os
    import signal

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return 128 + signum


class _StderrObserver:
    """``run``'s view of an install: progress and failures on stderr (stdout carries only LSP frames)."""

    async def installing(self, language: str) -> None:
        print(f"kandev-lsp: installing the {language} server", file=sys.stderr, flush=True)

    def progress(self, report: InstallProgress) -> None:
        from kandev_lsp.cli.install import worth_showing

        if not worth_showing(report):
            return
        if report.phase == "downloading" and report.bytes_done is not None:
            total = f"/{report.bytes_total}" if report.bytes_total else ""
            text = f"downloading {report.bytes_done}{total} bytes"
        else:
            text = report.message or report.phase.replace("_", " ")
        print(f"kandev-lsp: {report.language}: {text}", file=sys.stderr, flush=True)

    async def installed(self, language: str, receipt: InstallReceipt) -> None:
        print(f"kandev-lsp: installed the {language} server {receipt.version}", file=sys.stderr, flush=True)

    async def install_failed(self, language: str, message: str) -> None:
        print(f"kandev-lsp: {message}", file=sys.stderr, flush=True)


def _stderr_passthrough(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


async def run_stdio(
    plugins: PluginHost,
    task: Task,
    resolution: Resolution,
    settings: SettingsFile | None,
    limits: BridgeLimits | None = None,
    *,
    signalled: list[int] | None = None,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    started: StartedProcess | None = None,
) -> int:
    """Bridge this process's stdin/stdout (or ``stdin``/``stdout``) to the resolved (or, if missing,
    installed) server; to ``started`` when the server was started already (``Lifecycle.start_now``).

    SIGINT, SIGTERM and SIGHUP stop the server tree (or cancel the install) and return 128 + the signal
    number; the signal is also appended to ``signalled``, so the caller can die by it
    (:func:`die_by_signal`).
    """
    import asyncio
    import signal

    main = asyncio.current_task()
    assert main is not None
    loop = asyncio.get_running_loop()
    received: list[int] = [] if signalled is None else signalled
    signums = [getattr(signal, name) for name in STOP_SIGNALS if hasattr(signal, name)]

    def interrupted(signum: int) -> None:
        if not received:
            received.append(signum)
            main.cancel()

    for signum in signums:
        loop.add_signal_handler(signum, interrupted, signum)
    if received:  # a signal came before the loop ran (see _record_stop_signals)
        main.cancel()
    try:
        return await _run_stdio(plugins, task, resolution, settings, limits, stdin, stdout, started)
    except asyncio.CancelledError:
        if not received:
            raise
        return 128 + received[0]
    finally:
        for signum in signums:
            loop.remove_signal_handler(signum)


async def _install_unless_the_editor_leaves(
    lifecycle: Lifecycle, task: Task, resolution: Resolution, channel: StdioChannel
) -> Resolution | int:
    """Install (through the lifecycle) while watching the editor's input: its end (the editor quit or
    gave up waiting, e.g. eglot after 30 s) cancels the install. Messages it sends meanwhile stay in the
    pipe for the server."""
    import asyncio

    from kandev_lsp.lifecycle import LaunchError

    language = resolution.language
    install = asyncio.ensure_future(
        lifecycle.ensure(
            language, task, lifecycle.policy(requested=True), _StderrObserver(), resolution=resolution
        )
    )
    left = asyncio.ensure_future(channel.input_closed.wait())
    editor_left = False
    try:
        await asyncio.wait({install, left}, return_when=asyncio.FIRST_COMPLETED)
        editor_left = not install.done()
    finally:  # also when a signal cancelled us: leave no install running
        left.cancel()
        if not install.done():
            install.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await install
    if editor_left:
        print(
            f"kandev-lsp: the editor closed its input; the {language} install was cancelled", file=sys.stderr
        )
        return 0
    try:
        return install.result()
    except LaunchError as exc:
        return launch_exit_code(exc.failure)


async def _run_stdio(
    plugins: PluginHost,
    task: Task,
    resolution: Resolution,
    settings: SettingsFile | None,
    limits: BridgeLimits | None,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    started: StartedProcess | None = None,
) -> int:
    from kandev_lsp.lifecycle import LaunchError, Lifecycle
    from kandev_lsp.process import ProcessSupervisor

    adopting = False
    try:
        async with (
            ProcessSupervisor() as supervisor,
            Lifecycle(plugins, settings=settings, supervisor=supervisor) as lifecycle,
        ):
            process = None
            if started is not None:
                adopting = True
                process = await _adopt(lifecycle, started)
            elif resolution.found:
                # Spawn first (issue 7 item 25): the server starts up while the session, the bridge and the
                # framing are imported below, instead of after them.
                try:
                    process = await lifecycle.spawn(resolution, task, stderr=_stderr_passthrough)
                except LaunchError as exc:
                    print(f"kandev-lsp: {exc}", file=sys.stderr)
                    return launch_exit_code(exc.failure)
            return await _bridge_stdio(lifecycle, task, resolution, process, limits, stdin, stdout)
    finally:
        if started is not None and not adopting:  # cancelled before the loop could own it
            started.discard()


async def _adopt(lifecycle: Lifecycle, started: StartedProcess) -> OwnedProcess:
    """The lifecycle's :class:`OwnedProcess` for ``started``. A cancel (a stop signal) waits until the
    supervisor owns the child, so that leaving stops its whole tree; a failure kills its group."""
    import asyncio

    adoption = asyncio.ensure_future(lifecycle.adopt(started))
    try:
        return await asyncio.shield(adoption)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            await adoption
        raise
    finally:
        if not adoption.done() or adoption.cancelled() or adoption.exception() is not None:
            started.discard()


async def _bridge_stdio(
    lifecycle: Lifecycle,
    task: Task,
    resolution: Resolution,
    process: OwnedProcess | None,
    limits: BridgeLimits | None,
    stdin: BinaryIO | None,
    stdout: BinaryIO | None,
) -> int:
    from kandev_lsp.lifecycle import LaunchError
    from kandev_lsp.session import DEFAULT_BRIDGE_LIMITS
    from kandev_lsp.stream.bridge import BridgeEnd, bridge
    from kandev_lsp.stream.stdio import open_stdio

    limits = limits or DEFAULT_BRIDGE_LIMITS
    try:
        channel = await open_stdio(limits, stdin=stdin, stdout=stdout)  # watched from the start (item 7)
    except BaseException:
        if process is not None:
            await process.stop(limits.stop_grace)
        raise
    try:
        if process is None:
            if not resolution.found:
                installed = await _install_unless_the_editor_leaves(lifecycle, task, resolution, channel)
                if isinstance(installed, int):
                    return installed
                resolution = installed
            try:
                process = await lifecycle.spawn(resolution, task, stderr=_stderr_passthrough)
            except LaunchError as exc:
                print(f"kandev-lsp: {exc}", file=sys.stderr)
                return launch_exit_code(exc.failure)
        session = await lifecycle.wrap(
            process,
            resolution,
            limits=limits,
            ask_client_configuration=True,  # an editor's own server settings apply (item 18)
        )
        try:
            result = await bridge(session, channel)
            # After the editor left, the server gets exit_grace to exit by itself (its status is kept).
            exited = await session.aclose()
        finally:
            await session.aclose()
    finally:
        channel.close()
    if result.end not in (BridgeEnd.CLIENT_CLOSED, BridgeEnd.SERVER_EXITED):
        print(f"kandev-lsp: {result.end.value}: {result.detail}", file=sys.stderr)
    elif result.end is BridgeEnd.SERVER_EXITED and not session.exit_sent:
        program = resolution.executable or resolution.language
        note = server_exit_note(resolution.language, program, exited, answered=result.to_client > 0)
        print(f"kandev-lsp: {note}", file=sys.stderr)
    return exit_status(result.end, exited, exit_sent=session.exit_sent)


def server_exit_note(language: str, program: str, returncode: int | None, *, answered: bool) -> str:
    """What ``run`` tells the editor's log when the server ended by itself while the editor was still
    there. Without it a server that exits at once (a broken install, a wrong version) left an editor
    with an exit status and nothing else to read: the server's own stderr, if any, is all it had."""
    import signal

    if returncode is None:
        how = "closed its output by itself and was stopped"
    elif returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        how = f"was killed by {name}"
    else:
        how = f"exited by itself with status {returncode}"
    when = "" if answered else " before sending anything"
    return (
        f"the {language} server ({program}) {how}{when}; the editor had not asked it to exit. Its own "
        f"output, if it wrote any, is above. `kandev-lsp doctor` checks it, and `kandev-lsp resolve "
        f"{language} --explain` shows which one was chosen and why."
    )


def exit_status(end: BridgeEnd, returncode: int | None, *, exit_sent: bool) -> int:
    """The exit status of ``run`` for a bridge that ended with ``end`` and a server status (None: stopped).

    An editor that closed its input without sending ``exit`` gets 0 whatever the server then did: a
    server's status at end of input is its own convention (typescript-language-server and pyright both
    exit 1), not a verdict on the session, and ``run`` promises 0 for it. Once the editor sent ``exit``,
    the status is the server's answer to it (LSP: 0 after ``shutdown``, 1 without) and is passed on, as
    is the status of a server that exited by itself while the editor was still there.
    """
    from kandev_lsp.codes import ExitStatus
    from kandev_lsp.stream.bridge import BridgeEnd

    if end in (
        BridgeEnd.CLIENT_TOO_LARGE,
        BridgeEnd.CLIENT_MALFORMED,
        BridgeEnd.SERVER_TOO_LARGE,
        BridgeEnd.SERVER_MALFORMED,
    ):
        return ExitStatus.PROTOCOL_ERROR
    if end in (BridgeEnd.SERVER_STALLED, BridgeEnd.CLIENT_STALLED):
        return ExitStatus.STALLED
    if returncode is None or (end is BridgeEnd.CLIENT_CLOSED and not exit_sent):
        return ExitStatus.OK
    return 128 - returncode if returncode < 0 else returncode
