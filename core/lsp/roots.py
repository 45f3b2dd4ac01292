"""The project root of a file: where a language's root markers say its project starts.

Every plugin declares ``root_markers`` (``go.work``, ``go.mod``; ``tsconfig.json``, ``package.json``).
:func:`find_project_root` walks from the file's folder up to the workspace folder and never above it. The
markers are in priority order: the first marker found anywhere on that walk wins, and for that marker
the innermost folder holding it. So a Go module inside a ``go.work`` workspace roots at the ``go.work``,
and a TypeScript package with its own ``tsconfig.json`` roots at that package. No marker: the workspace.
With ``covering`` (a language whose server serves nested projects from the outer one, issue 20 item 4)
the outermost folder holding any marker wins instead: ``examples/aliases/setup.py`` inside click (a
``setup.py`` at its top) roots at the top, where pyright resolves ``import click`` to ``src/click``.

The decision is pure: which files exist is asked through ``exists``, so the rules are tested with a set
of paths. :func:`project_root` is the same with the real file system.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

__all__ = ["find_project_root", "project_root"]


def _ancestors(folder: str, workspace: str) -> list[str] | None:
    """``folder`` and its parents up to ``workspace`` (innermost first), or None when outside it."""
    chain = []
    current = folder
    while True:
        chain.append(current)
        if current == workspace:
            return chain
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def find_project_root(
    path: str,
    workspace: str,
    markers: Sequence[str],
    exists: Callable[[str], bool],
    *,
    is_dir: bool = False,
    covering: bool = False,
) -> str | None:
    """The root folder of the project holding ``path`` (a file, or a folder with ``is_dir``).

    ``path`` and ``workspace`` must be absolute and normalised. Returns None when ``path`` is not inside
    ``workspace``; the workspace itself when no marker is found. ``covering``: the outermost folder
    holding any marker (see the module docstring).
    """
    workspace = os.path.normpath(workspace)
    path = os.path.normpath(path)
    start = path if is_dir else os.path.dirname(path)
    chain = _ancestors(start, workspace)
    if chain is None:
        return None
    valid = [m for m in markers if m and "/" not in m and "\\" not in m and m not in (".", "..")]
    if covering:
        for folder in reversed(chain):  # outermost first
            if any(exists(os.path.join(folder, marker)) for marker in valid):
                return folder
        return workspace
    for marker in valid:
        for folder in chain:
            if exists(os.path.join(folder, marker)):
                return folder
    return workspace


def project_root(path: str, workspace: str, markers: Sequence[str], *, covering: bool = False) -> str | None:
    """:func:`find_project_root` against the file system (a marker may be a file or a folder)."""
    return find_project_root(
        os.path.abspath(path),
        os.path.abspath(workspace),
        markers,
        os.path.exists,
        is_dir=os.path.isdir(path),
        covering=covering,
    )
