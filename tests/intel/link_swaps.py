"""The tree the path-memory tests share, and the three ways they swap part of it for a symbolic link out
of the workspace (the file, its folder, the folder above the root, where nothing is watched)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

#: The swaps :func:`swap_for_a_link` makes.
SWAPS: Final = ("file_for_a_link", "folder_for_a_link", "root_parent_for_a_link")


def link_tree(base: Path) -> tuple[Path, Path, Path]:
    """``base/parent/ws/src/pkg/mod.py`` (the workspace root is ``ws``) and ``base/outside/`` with
    look-alikes of the file and its folder; returns (root, the file, outside)."""
    base = Path(os.path.realpath(base))
    root = base / "parent" / "ws"
    target = root / "src" / "pkg" / "mod.py"
    target.parent.mkdir(parents=True)
    target.write_text("x = 1\n")
    outside = base / "outside"
    (outside / "pkg").mkdir(parents=True)
    (outside / "mod.py").write_text("secret = 1\n")
    (outside / "pkg" / "mod.py").write_text("secret = 2\n")
    return root, target, outside


def swap_for_a_link(root: Path, target: Path, outside: Path, swap: str) -> None:
    """Make ``swap`` (one of :data:`SWAPS`): afterwards ``target``'s path leads outside the workspace."""
    if swap == "file_for_a_link":
        target.unlink()
        target.symlink_to(outside / "mod.py")
    elif swap == "folder_for_a_link":
        pkg = target.parent
        pkg.rename(pkg.with_name("pkg-old"))
        pkg.symlink_to(outside / "pkg", target_is_directory=True)
    else:  # above the root, where nothing is watched: parent becomes a link to a look-alike tree
        look_alike = outside / "parent"
        (look_alike / "ws" / "src" / "pkg").mkdir(parents=True)
        (look_alike / "ws" / "src" / "pkg" / "mod.py").write_text("secret = 3\n")
        parent = root.parent
        parent.rename(parent.with_name("parent-old"))
        parent.symlink_to(look_alike, target_is_directory=True)
