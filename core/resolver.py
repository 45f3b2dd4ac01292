"""Language + task -> :class:`Resolution`: a runnable server, or why there is none.

The resolver walks the candidates the plugins and the core's default discovery propose, probes each on
the filesystem, and takes the first that exists, is executable, may run for the task (outside its
workspace, the managed cache included: :class:`~kandev_lsp.executables.WorkspaceGate`, the rule every
executable kandev-lsp starts obeys) and passes every plugin's runnability check. Every candidate
considered is recorded for ``--explain``; a missing server's message says what was refused and why.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from kandev_lsp import codes
from kandev_lsp._values import dataclass, field
from kandev_lsp.errors import UnknownLanguageError
from kandev_lsp.executables import IN_WORKSPACE, WorkspaceGate
from kandev_lsp.fileprobe import FileProbe, LocalFileProbe, ProbeStatus
from kandev_lsp.host import PluginHost
from kandev_lsp.language import LanguageSpec
from kandev_lsp.launchers import npm_launch, path_launch
from kandev_lsp.platform import HostPlatform
from kandev_lsp.taskenv import Task, TaskEnvironment

SCHEMA = "kandev-lsp/resolution"
SCHEMA_VERSION = 1


#: Each probe status's text, read once: an enum member's ``.value`` is a descriptor call, and the resolver
#: records one per candidate (in-process resolution, issue 7 item 26).
_STATUS = {status: status.value for status in ProbeStatus}


class MissingReason(StrEnum):
    """Why no server was found, as a category a program can branch on."""

    INSTALLABLE_NOT_REQUESTED = "installable_not_requested"
    NO_INSTALLER = "no_installer"
    UNSUPPORTED_LANGUAGE = "unsupported_language"
    CACHE_UNAVAILABLE = "cache_unavailable"


@dataclass(frozen=True, slots=True)
class ExplainStep:
    """One candidate the resolver considered and what it decided."""

    source: str
    path: str
    verdict: str  # "taken", "rejected" or "skipped"
    reason: str

    def __init__(self, source: str, path: str, verdict: str, reason: str) -> None:
        # Written out: one step per candidate, and the generic one of kandev_lsp._values costs more.
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "verdict", verdict)
        object.__setattr__(self, "reason", reason)

    def to_json(self) -> dict[str, str]:
        return {"source": self.source, "path": self.path, "verdict": self.verdict, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Resolution:
    """The answer for one language and task: ``found`` with an argv, or ``reason`` with a message."""

    language: str
    found: bool
    executable: str | None = None
    argv: tuple[str, ...] = ()
    source: str | None = None
    reason: MissingReason | None = None
    message: str = ""
    installable: bool = False
    trail: tuple[ExplainStep, ...] = field(default=(), repr=False)
    #: The program part of ``argv`` (``argv`` less the language's arguments): ``(executable,)``, or for a
    #: server kandev-lsp installed with npm ``(node, script)`` (:mod:`kandev_lsp.launchers`). Run it with
    #: other arguments (``--version``) to run the same server.
    command: tuple[str, ...] = ()

    # The numbers are the front ends' (close codes: the stream's; exit codes: ``resolve``'s), kept in
    # the import-free :mod:`kandev_lsp.codes` so that ``resolve --json`` reports them without importing
    # either front end (issue 7 item 26).
    @property
    def close_code(self) -> int | None:
        """The stream close code for a missing server (4001 / 4007), None when found or unknown."""
        return codes.missing_close_code(self.reason)

    @property
    def exit_code(self) -> int:
        """``kandev-lsp resolve``'s exit code (0 found, 10-13 missing)."""
        return codes.resolve_exit_code(self.reason)

    def to_json(self, *, explain: bool = False) -> dict[str, Any]:
        """The versioned JSON contract of ``kandev-lsp resolve --json``."""
        data: dict[str, Any] = {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "language": self.language,
            "status": "found" if self.found else "missing",
            "executable": self.executable,
            "argv": list(self.argv),
            "source": self.source,
            "reason": self.reason.value if self.reason else None,
            "closeCode": self.close_code,
            "installable": self.installable,
            "message": self.message,
        }
        if explain:
            data["explain"] = [step.to_json() for step in self.trail]
        return data


class Resolver:
    """Resolves languages against the plugins of one :class:`PluginHost`."""

    def __init__(self, plugins: PluginHost, probe: FileProbe | None = None) -> None:
        self.plugins = plugins
        self._probe = probe

    def resolve(self, language: str, task: Task) -> Resolution:
        try:
            spec = self.plugins.language(language)
        except UnknownLanguageError as exc:
            return Resolution(language, False, reason=MissingReason.UNSUPPORTED_LANGUAGE, message=str(exc))
        probe = self._probe or LocalFileProbe(task.host)
        gate = WorkspaceGate(task.workspace, task.env, probe)
        trail: list[ExplainStep] = []
        seen: dict[str, str] = {}
        for candidate in self.plugins.discover(spec, task):
            if candidate.skip:
                trail.append(ExplainStep(candidate.source, candidate.path, "skipped", candidate.skip))
                continue
            if candidate.path in seen:
                # PATH often names a folder twice; probing (or running a proxy check) again changes nothing.
                trail.append(
                    ExplainStep(
                        candidate.source, candidate.path, "skipped", f"same file as {seen[candidate.path]}"
                    )
                )
                continue
            seen[candidate.path] = candidate.source
            result = probe.probe(candidate.path)
            if result.status is not ProbeStatus.OK:
                trail.append(
                    ExplainStep(candidate.source, candidate.path, "rejected", _STATUS[result.status])
                )
                continue
            refusal = gate.refusal(result.real_path)
            if refusal:
                trail.append(ExplainStep(candidate.source, candidate.path, "rejected", refusal))
                continue
            refusal = self.plugins.check_candidate(spec, candidate.path, task)
            if refusal:
                trail.append(ExplainStep(candidate.source, candidate.path, "rejected", refusal))
                continue
            command: tuple[str, ...] = (candidate.path,)
            taken = "exists and is executable"
            # node <script>, never env's node off the task's PATH: kandev-lsp's own npm install, and any
            # other server that is a `#!/usr/bin/env node` script (a user's `npm install -g`)
            launch = (
                npm_launch(candidate.path, result.real_path, gate)
                if candidate.npm_launcher
                else path_launch(result.real_path or candidate.path, gate)
            )
            if launch is not None:
                if launch.refusal is not None:
                    trail.append(ExplainStep(candidate.source, candidate.path, "rejected", launch.refusal))
                    continue
                command, taken = launch.command, f"{taken}; {launch.note}"
            trail.append(ExplainStep(candidate.source, candidate.path, "taken", taken))
            return Resolution(
                spec.id,
                True,
                executable=candidate.path,
                argv=(*command, *spec.args),
                source=candidate.source,
                message=f"{spec.display_name}: {candidate.path}",
                trail=tuple(trail),
                command=command,
            )
        return self._missing(spec, task, gate, tuple(trail))

    def _missing(
        self, spec: LanguageSpec, task: Task, gate: WorkspaceGate, trail: tuple[ExplainStep, ...]
    ) -> Resolution:
        """Why nothing was found, and what to do. The advice never loops: a server that exists but was
        refused is named with the refusal, and installing is advised only when an install would be found."""
        installer = self.plugins.installer_available(spec, task.host)
        found = _not_found_text(spec.command, trail)
        if not installer:
            from kandev_lsp.install.installers import install_advice  # the recipe kind's own advice

            reason = MissingReason.NO_INSTALLER
            how = (
                spec.manual_instructions
                or install_advice(spec, task.host)
                or (
                    f"no installer for {spec.display_name} on {task.host}; install `{spec.command}` yourself "
                    "and put it on the task's PATH"
                )
            )
            message = f"{found}. {how}"
        elif not gate.cache.usable:  # every install is staged in the cache, and found there
            reason = MissingReason.CACHE_UNAVAILABLE
            if gate.cache.root is None:
                what = "Set HOME to an absolute folder in the task environment, or put the server on PATH."
            else:
                what = "Or put the server on the task's PATH, outside the workspace."
            message = f"{found}. It cannot be installed: {gate.cache.reason}. {what}"
        elif gap := _toolchain_gap(spec, task, gate):  # installing would fail for want of npm, node or go
            reason = MissingReason.NO_INSTALLER
            message = f"{found}. It cannot be installed here: {gap}"
        else:
            reason = MissingReason.INSTALLABLE_NOT_REQUESTED
            message = (
                f"{found}; it can be installed. "
                f"Run `kandev-lsp install {spec.id}` or connect with autoInstall=1."
            )
        return Resolution(
            spec.id,
            False,
            reason=reason,
            message=message,
            installable=reason is MissingReason.INSTALLABLE_NOT_REQUESTED,
            trail=trail,
        )


def _toolchain_gap(spec: LanguageSpec, task: Task, gate: WorkspaceGate) -> str | None:
    """What an install of ``spec`` would run that the task lacks (issue 17 item 6: ``installable`` only
    when ``install`` would install it)."""
    from kandev_lsp.install.installers import missing_toolchain

    return missing_toolchain(spec, task.env, task.workspace, gate.probe)


def _not_found_text(command: str, trail: tuple[ExplainStep, ...]) -> str:
    """``X was not found``, or, when files were refused, what was refused and why (from the trail)."""
    in_workspace = [step.path for step in trail if step.verdict == "rejected" and IN_WORKSPACE in step.reason]
    if in_workspace:
        shown = ", ".join(in_workspace[:3]) + (" ..." if len(in_workspace) > 3 else "")
        return (
            f"{command} was found only inside the task workspace ({shown}), and kandev-lsp never runs "
            "programs from the workspace (a repository could have planted them)"
        )
    refused = [
        step for step in trail if step.verdict == "rejected" and step.reason != _STATUS[ProbeStatus.MISSING]
    ]
    if refused:
        first = refused[0]
        return f"{command} was not found usable ({first.path}: {first.reason})"
    return f"{command} was not found"


_default_host: PluginHost | None = None


def default_host() -> PluginHost:
    """The process's plugin host, loaded from entry points on first use (never at import time)."""
    global _default_host
    if _default_host is None:
        _default_host = PluginHost.load()
    return _default_host


def resolve(
    language: str,
    env: TaskEnvironment,
    workspace: str,
    host: HostPlatform | None = None,
    *,
    plugins: PluginHost | None = None,
) -> Resolution:
    """Resolve ``language`` for the task with environment ``env`` and workspace folder ``workspace``.

    ``host`` overrides the environment's platform (to ask "what would a Windows task get?").
    """
    if host is not None and host != env.host:
        env = TaskEnvironment(env.variables, host)
    return Resolver(plugins or default_host()).resolve(language, Task(workspace, env))
