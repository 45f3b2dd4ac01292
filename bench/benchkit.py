"""What several benches share (each bench runs as a script, so ``bench/`` is on ``sys.path``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["compare_environment"]


def compare_environment(checkout: Path, env: dict[str, str], scratch: Path) -> dict[str, str]:
    """``env`` with ``checkout``'s ``core/`` and ``plugins/*`` ahead of the editable install's, for a
    same-run comparison against another tree (``--compare``). The entry points stay the installed ones;
    the module names are the same. PathFinder comes before the editable install's finder, so the
    symlinks win."""
    paths = scratch / "compare-path"
    paths.mkdir()
    (paths / "kandev_lsp").symlink_to(checkout.resolve() / "core")
    for plugin in sorted((checkout / "plugins").iterdir()):
        if (plugin / "__init__.py").exists():
            (paths / f"kandev_lsp_{plugin.name}").symlink_to(plugin.resolve())
    return {**env, "PYTHONPATH": str(paths)}
