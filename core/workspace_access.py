"""Whether kandev-lsp can serve a task's workspace: an existing folder it may enter and list.

The one check every front end makes when it starts (``run`` and ``serve`` through their task flags,
``code`` and ``mcp`` for each ``--workspace``) and the lifecycle makes again before each server starts
(``serve``'s 4008 path, the broker's and the agent tools' servers): a workspace that cannot be read is
reported as what it is, not as the server's failure. Before (issue 17 item 5), an unreadable workspace
surfaced as "cannot start .../pyright-langserver: permission denied" (the server's working directory could
not be entered), or as "no file 'app.py' in the workspace".

Ground floor: the standard library only.
"""

from __future__ import annotations

import os
import stat

from kandev_lsp.errors import TaskEnvironmentError

__all__ = ["WorkspaceUnavailable", "check_workspace", "workspace_problem"]


class WorkspaceUnavailable(TaskEnvironmentError):
    """The task's workspace is missing, not a folder, or not accessible."""


def workspace_problem(path: str) -> str | None:
    """What stops kandev-lsp from serving the workspace ``path``, in a sentence; None when nothing does.

    A server runs with the workspace as its working folder and reads its files, so the folder must be
    searchable and readable (``X_OK`` and ``R_OK``, by the rules of the user kandev-lsp runs as).
    """
    try:
        info = os.stat(path)
    except PermissionError:
        return _denied(path)
    except (OSError, ValueError):
        return f"the workspace {path} is not an existing folder; pass --workspace DIR"
    if not stat.S_ISDIR(info.st_mode):
        return f"the workspace {path} is not a folder; pass --workspace DIR"
    if not os.access(path, os.R_OK | os.X_OK):
        return _denied(path)
    return None


def check_workspace(path: str) -> None:
    """:raises WorkspaceUnavailable: :func:`workspace_problem` found one."""
    problem = workspace_problem(path)
    if problem is not None:
        raise WorkspaceUnavailable(problem)


def _denied(path: str) -> str:
    return (
        f"workspace {path} is not accessible (permission denied): kandev-lsp runs the language server in it "
        "and reads its files. Give this user read and search permission on it (and on the folders above "
        "it), or pass another --workspace"
    )
