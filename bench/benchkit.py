"""What several benches share (each bench runs as a script, so ``bench/`` is on ``sys.path``)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["bench_home", "compare_environment", "install_servers"]

#: Where the test suite's ``stream_testkit`` lives: its ``RealServers`` installs servers the way the
#: suite's ``real_servers`` fixture does, so a bench measures the same servers the tests run.
_STREAM_TESTS = Path(__file__).resolve().parent.parent / "tests" / "stream"


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


async def install_servers(home: Path, languages: Sequence[str]) -> None:
    """Install ``languages``' servers into ``home``'s managed cache with kandev-lsp's own installer (real
    npm; the npm cache and the installer's working folder go inside ``home`` too)."""
    if str(_STREAM_TESTS) not in sys.path:
        sys.path.insert(0, str(_STREAM_TESTS))
    from stream_testkit import RealServers  # type: ignore[import-not-found]  # tests/stream, on sys.path now

    servers = RealServers(home, home / "npm-cache")
    cwd = home / "install-cwd"
    cwd.mkdir(exist_ok=True)
    await servers.install(list(languages), cwd)


def bench_home(given: Path | None, scratch: Path, languages: Sequence[str]) -> Path:
    """The HOME a bench runs its servers from: ``--home`` as given (its managed cache is expected to hold
    ``languages``' servers already), or else ``scratch/home``, made and installed into first (real npm,
    ~10 s)."""
    if given is not None:
        return given
    home = scratch / "home"
    home.mkdir()
    asyncio.run(install_servers(home, languages))
    return home
