"""Which file ``argv[0]`` runs, by the same rules as the resolver.

A process is never started through a shell, so the lookup a shell would do happens here, against the
*task's* PATH (not the agent's): absolute PATH entries only, PATHEXT on Windows, the execute bit on
Unix, and never a file inside the task workspace (a repository could otherwise plant ``npm`` or ``go``
in its own tree and have it run with the agent's privileges). The rules themselves are
:func:`kandev_lsp.executables.locate`, the one lookup every executable kandev-lsp starts goes through; this
module turns its answer into the process layer's errors.
"""

from __future__ import annotations

from kandev_lsp.executables import has_separator, locate
from kandev_lsp.fileprobe import FileProbe
from kandev_lsp.process._errors import CommandNotFoundError, ProcessStartError
from kandev_lsp.taskenv import TaskEnvironment

__all__ = ["has_separator", "locate_executable"]


def locate_executable(command: str, env: TaskEnvironment, workspace: str, probe: FileProbe) -> str:
    """The path of the file that runs ``command`` for a task whose workspace is ``workspace``.

    An absolute path is used as it is, if it exists, is an executable file and may run (outside the
    workspace: a managed cache inside it is never usable). A bare name is looked up on the task's PATH; a hit
    inside the workspace is skipped, as the resolver does. A relative path with a separator is refused: it
    would depend on the working directory.

    :raises CommandNotFoundError: nothing usable is there.
    :raises ProcessStartError: the path is relative, not executable, or inside the workspace.
    """
    found = locate(command, env, workspace, probe)
    if found.path is not None:
        return found.path
    if found.not_found:
        raise CommandNotFoundError(command, found.reason, found.advice, searched=found.searched)
    raise ProcessStartError(command, found.reason, found.advice)
