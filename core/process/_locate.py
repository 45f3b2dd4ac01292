"""Which file ``argv[0]`` runs, by the same rules as the resolver.

A process is never started through a shell, so the lookup a shell would do happens here, against the
*task's* PATH (not the agent's): absolute PATH entries only, PATHEXT on Windows, the execute bit on
Unix, and never a file inside the task workspace (a repository could otherwise plant ``npm`` or ``go``
in its own tree and have it run with the agent's privileges). The filesystem is reached through an
injected :class:`~kandev_lsp.discovery.FileProbe`, so the Windows rules are tested on Linux.
"""

from __future__ import annotations

from kandev_lsp.discovery import FileProbe, ProbeStatus, path_candidates
from kandev_lsp.process._errors import CommandNotFoundError, ProcessStartError
from kandev_lsp.taskenv import TaskEnvironment

_MAX_LISTED = 8


def has_separator(command: str, env: TaskEnvironment) -> bool:
    """Whether ``command`` names a path rather than a bare name (``./x``, ``bin/x``, ``C:x``)."""
    if env.host.is_windows:
        return "/" in command or "\\" in command or ":" in command
    return "/" in command


def locate_executable(command: str, env: TaskEnvironment, workspace: str, probe: FileProbe) -> str:
    """The path of the file that runs ``command`` for a task whose workspace is ``workspace``.

    An absolute path is used as it is, if it exists, is an executable file and lies outside the workspace.
    A bare name is looked up on the task's PATH; a hit inside the workspace is skipped, as the resolver
    does. A relative path with a separator is refused: it would depend on the working directory.
    """
    if not command:
        raise ProcessStartError("", "the command is empty", "Pass the program to run as argv[0].")
    if env.host.is_absolute(command):
        return _check_absolute(command, workspace, probe)
    if has_separator(command, env):
        raise ProcessStartError(
            command,
            "it is a relative path, which would depend on the working directory",
            "Give an absolute path, or a bare command name to look up on the task's PATH.",
        )
    return _search_path(command, env, workspace, probe)


def _check_absolute(command: str, workspace: str, probe: FileProbe) -> str:
    result = probe.probe(command)
    if result.status is ProbeStatus.MISSING:
        raise CommandNotFoundError(
            command, "no such file", "Check the path, or install the program there.", searched=(command,)
        )
    if result.status is not ProbeStatus.OK:
        raise ProcessStartError(
            command, result.status.value, "Point it at an executable file (on Unix: chmod +x)."
        )
    if probe.is_within(result.real_path, workspace):
        raise ProcessStartError(
            command,
            f"it lies inside the task workspace ({workspace}); kandev-lsp never runs programs from the "
            "workspace",
            "Install the program outside the workspace (or let kandev-lsp install it in its cache).",
        )
    return command


def _search_path(command: str, env: TaskEnvironment, workspace: str, probe: FileProbe) -> str:
    looked: list[str] = []
    notes: list[str] = []
    for candidate in path_candidates(command, env):
        if candidate.skip:
            if candidate.path:  # an empty entry is not worth a note
                notes.append(f"{candidate.source} {candidate.path!r}: {candidate.skip}")
            continue
        looked.append(candidate.path)
        result = probe.probe(candidate.path)
        if result.status is ProbeStatus.MISSING:
            continue
        if result.status is not ProbeStatus.OK:
            notes.append(f"{candidate.path}: {result.status.value}")
            continue
        if probe.is_within(result.real_path, workspace):
            notes.append(f"{candidate.path}: inside the task workspace, never run")
            continue
        return candidate.path
    folders = list(dict.fromkeys(str(env.host.pure_path(path).parent) for path in looked))
    raise CommandNotFoundError(
        command,
        _not_found_reason(folders, notes),
        f"Install {command} or add the folder that holds it (an absolute path) to the task's PATH.",
        searched=tuple(looked),
    )


def _not_found_reason(folders: list[str], notes: list[str]) -> str:
    if not folders and not notes:
        return "not found: the task's PATH is empty"
    shown = ", ".join(folders[:_MAX_LISTED]) + (" ..." if len(folders) > _MAX_LISTED else "")
    reason = f"not found on the task's PATH ({shown or 'no usable entry'})"
    if notes:
        reason += "; " + "; ".join(notes[:_MAX_LISTED])
    return reason
