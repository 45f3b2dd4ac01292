"""Running ``kandev-lsp`` as a subprocess, the way a shell or a script does, and the small fixtures the
CLI tests share (a plugin that fails to load, a settings file)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def kandev(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``kandev-lsp ARGS`` with stdin closed, this environment plus ``env``; output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "kandev_lsp.cli", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def broken_plugin_site(root: Path) -> Path:
    """A site folder holding one installed distribution whose ``kandev_lsp`` entry point names a module
    that does not exist: put it on PYTHONPATH and every command loads a plugin that fails."""
    info = root / "kandev_lsp_broken-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kandev-lsp-broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[kandev_lsp]\nbroken = kandev_lsp_no_such_module\n")
    return root


def printing_plugin_site(root: Path) -> Path:
    """A site folder holding a plugin that prints 'chatty plugin loaded' at import and 'computing
    defaults' in its default_settings hook (it declares no language): stray stdout a command must keep
    off its own output."""
    info = root / "chatty-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: chatty\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[kandev_lsp]\nchatty = chatty_plugin\n")
    (root / "chatty_plugin.py").write_text(
        "print('chatty plugin loaded')\nfrom kandev_lsp import hookimpl\n\n"
        "@hookimpl\ndef kandev_lsp_default_settings(language):\n    print('computing defaults')\n    return {}\n"
    )
    return root
