"""What every installer step receives and returns, and the one way they run a tool.

Installers (npm, go, release) differ only in how files get into the staging folder. Locking, verifying,
receipts and switching are the manager's, so every recipe gets the same guarantees.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

from kandev_lsp.executables import in_folder, tool_environment
from kandev_lsp.fileprobe import LocalFileProbe, ProbeStatus
from kandev_lsp.install.errors import InstallError, ToolchainMissingError, tool_not_found

if TYPE_CHECKING:  # annotations only: installer modules import this one and stay light (no asyncio)
    from kandev_lsp.cancel import CancelToken
    from kandev_lsp.install.progress import ProgressFanout
    from kandev_lsp.language import LanguageSpec, ReleaseAsset
    from kandev_lsp.process import ProcessSupervisor, RunResult
    from kandev_lsp.taskenv import Task, TaskEnvironment

log = logging.getLogger("kandev_lsp.install")

T = TypeVar("T")
S = TypeVar("S")


class Recipe(Protocol):
    """What every installable recipe has: its kind's name and the version it installs."""

    @property
    def kind(self) -> str: ...

    @property
    def version(self) -> str: ...


@dataclass(frozen=True, slots=True)
class InstallContext:
    """One install in progress: what it installs, the task, and the staging folder it fills.

    ``recipe`` is the planned recipe (at the requested version) and ``asset`` the release asset the plan
    chose for the host (None for kinds that download none): the parts of
    :class:`~kandev_lsp.install.plan.InstallPlan` an installer reads, so that this module, below the
    planner, never imports it.

    ``scratch`` is an empty folder outside ``staging``: the working directory of side commands (tool
    versions) and of the verification run, so that nothing reads files the installer is still writing.
    """

    spec: LanguageSpec
    recipe: Recipe
    asset: ReleaseAsset | None
    task: Task
    staging: Path
    scratch: Path
    fanout: ProgressFanout
    cancel: CancelToken | None = None
    supervisor: ProcessSupervisor | None = None
    timeout: float | None = None
    #: Given to every process the install starts, and recorded beside the staging folder, so that the
    #: next install can find them if this one dies (:mod:`kandev_lsp.install.owners`).
    owner_token: str | None = None

    @property
    def owner_tokens(self) -> tuple[str, ...]:
        return (self.owner_token,) if self.owner_token else ()

    @property
    def language(self) -> str:
        return self.spec.id

    @property
    def retry_command(self) -> str:
        """The command that repeats this install, for advice: ``kandev-lsp install LANG``, with the
        ``--version`` it was asked for when that is not the plugin's pin (dropping it would advise
        installing another version)."""
        pinned = getattr(self.spec.install, "version", None)
        requested = f" --version {self.recipe.version}" if self.recipe.version != pinned else ""
        return f"kandev-lsp install {self.language}{requested}"


@dataclass(frozen=True, slots=True)
class Staged:
    """What an installer put into the staging folder.

    ``executable`` is relative to the staging folder, ``/``-separated. For a server started by an
    interpreter (an npm package's script), ``interpreter`` is that interpreter's absolute path and
    ``script`` the script, relative like ``executable``: it is verified, and later started, as
    ``interpreter script`` (see :class:`~kandev_lsp.install.receipts.InstallReceipt`).
    """

    executable: str
    source: str
    toolchain: dict[str, str] = field(default_factory=dict)
    sha256: str | None = None
    interpreter: str | None = None
    script: str | None = None

    def command(self, folder: Path) -> list[str]:
        """How to start the server staged in ``folder`` (its arguments not included)."""
        if self.interpreter is not None and self.script is not None:
            return [self.interpreter, str(folder.joinpath(*self.script.split("/")))]
        return [str(folder.joinpath(*self.executable.split("/")))]


def in_task(
    ctx: InstallContext, argv: Sequence[str], env: TaskEnvironment | None = None
) -> tuple[list[str], TaskEnvironment]:
    """``argv`` with ``argv[0]`` found by the one lookup against the *task's* workspace, and the
    environment to run it with (the task's, PATH without entries inside the workspace).

    The process layer checks a command against the working folder it is started in, and an installer
    runs in the staging or scratch folder: without this, ``npm`` or ``go`` found through a PATH entry
    inside the task workspace (``<ws>/node_modules/.bin/npm``) would run, and npm's ``#!/usr/bin/env
    node`` would pick a ``node`` planted there (issue 7 item 1).

    :raises kandev_lsp.process.ProcessStartError: nothing that may run (``CommandNotFoundError``: none).
    """
    from kandev_lsp.process import locate_executable

    task_env = env or ctx.task.env
    probe = LocalFileProbe(task_env.host)
    command = locate_executable(argv[0], task_env, ctx.task.workspace, probe)
    return [command, *argv[1:]], tool_environment(task_env, ctx.task.workspace, probe)


async def run_tool(
    ctx: InstallContext,
    argv: Sequence[str],
    *,
    what: str,
    advice: str,
    missing: str,
    env: TaskEnvironment | None = None,
) -> RunResult:
    """Run an installer tool in the staging folder with the task's environment.

    :param what: the step, for messages (``npm install pyright@1.1.414``).
    :param advice: what to do when the tool fails.
    :param missing: what to do when the tool is not on the task's PATH.
    :raises InstallError: it failed, timed out or could not start; the message quotes its output.
    """
    from kandev_lsp.process import CommandNotFoundError, ProcessStartError, ProcessTimeout, run

    try:
        command, tool_env = in_task(ctx, argv, env)
    except CommandNotFoundError as exc:
        raise _missing_tool(ctx, argv[0], exc.reason, missing) from exc
    except ProcessStartError as exc:
        raise InstallError(ctx.language, f"cannot install the {ctx.language} server: {exc}") from exc
    try:
        result = await run(
            command,
            env=tool_env,
            cwd=str(ctx.staging),
            timeout=ctx.timeout,
            cancel=ctx.cancel,
            supervisor=ctx.supervisor,
            owner_tokens=ctx.owner_tokens,
        )
    except ProcessStartError as exc:
        raise InstallError(ctx.language, f"cannot install the {ctx.language} server: {exc}") from exc
    except ProcessTimeout as exc:
        raise InstallError(
            ctx.language,
            f"{what} did not finish within {exc.timeout:g} s and was stopped; nothing was changed. "
            "Check the task's network and proxy settings, then try again.",
            output=exc.output,
        ) from exc
    if result.returncode != 0:
        raise InstallError(
            ctx.language,
            f"{what} failed (exit status {result.returncode}); nothing was changed. {advice}",
            output=result.output,
        )
    return result


def trusted_tool(ctx: InstallContext, command: str, *, missing: str) -> str:
    """Where the task's ``command`` is, by the one lookup (never inside the workspace): what an installer
    runs, and what it records (the ``node`` an npm install's server is started with).

    :raises ToolchainMissingError: there is no usable ``command``; ``missing`` says what to do.
    :raises InstallError: ``command`` was found but may not run (e.g. a relative path).
    """
    from kandev_lsp.process import CommandNotFoundError, ProcessStartError, locate_executable

    env = ctx.task.env
    try:
        return locate_executable(command, env, ctx.task.workspace, LocalFileProbe(env.host))
    except CommandNotFoundError as exc:
        raise _missing_tool(ctx, command, exc.reason, missing) from exc
    except ProcessStartError as exc:
        raise InstallError(ctx.language, f"cannot install the {ctx.language} server: {exc}") from exc


def _missing_tool(ctx: InstallContext, command: str, reason: str, missing: str) -> ToolchainMissingError:
    return ToolchainMissingError(
        ctx.language,
        f"cannot install the {ctx.language} server: {tool_not_found(command, reason)}. {missing}",
    )


async def tool_output(ctx: InstallContext, argv: Sequence[str], *, timeout: float = 30.0) -> str | None:
    """A tool's trimmed output for a receipt (``npm --version``), or None when it cannot tell."""
    from kandev_lsp.process import ProcessStartError, ProcessTimeout, run

    try:
        command, tool_env = in_task(ctx, argv)
        result = await run(
            command,
            env=tool_env,
            cwd=str(ctx.scratch),
            timeout=timeout,
            cancel=ctx.cancel,
            supervisor=ctx.supervisor,
            output_limit=64 * 1024,
            owner_tokens=ctx.owner_tokens,
        )
    except (ProcessStartError, ProcessTimeout) as exc:
        log.debug("%s could not tell: %s", " ".join(argv), exc)
        return None
    if result.returncode != 0:
        log.debug("%s failed (%d): %s", " ".join(argv), result.returncode, result.output[-500:])
        return None
    return result.output.strip()


async def alongside(main: Awaitable[T], side: Awaitable[S]) -> tuple[T, S]:
    """Await ``main`` while ``side`` runs beside it (tool versions asked while the install runs, so they
    cost no wall time). If ``main`` fails or is cancelled, ``side`` is cancelled and awaited first, so no
    process outlives the install."""
    import asyncio

    side_task = asyncio.ensure_future(side)
    try:
        first = await main
    except BaseException:
        side_task.cancel()
        with contextlib.suppress(BaseException):
            await side_task
        raise
    return first, await side_task


def find_executable(ctx: InstallContext, folder: str, command: str) -> str:
    """The launcher ``command`` inside ``staging/<folder>`` (PATHEXT rules on Windows), relative to the
    staging folder; an :class:`InstallError` when the installer did not produce it."""
    base = ctx.staging.joinpath(*folder.split("/"))
    probe = LocalFileProbe(ctx.task.host)
    for candidate in in_folder(str(base), command, ctx.task.env, "staging"):
        if probe.probe(candidate.path).status is ProbeStatus.OK:
            return f"{folder}/{Path(candidate.path).name}"
    raise InstallError(
        ctx.language,
        f"the installer finished but did not produce {folder}/{command}; the package may have renamed "
        f"its launcher. Report this to the {ctx.language} plugin's authors.",
    )


def public_url(url: str) -> str:
    """``url`` without user info, query or fragment: safe for receipts and messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unparseable URL)"
    if not parts.scheme or not parts.netloc:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


__all__ = [
    "InstallContext",
    "Recipe",
    "Staged",
    "alongside",
    "find_executable",
    "public_url",
    "run_tool",
    "tool_output",
    "trusted_tool",
]
