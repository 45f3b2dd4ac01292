"""Resolution speed: in-process per-language resolution, and the cold CLI against a bare interpreter.

Figures are ratios against baselines measured in the same run (these machines are noisy):
* in-process: the time to resolve each language with a 40-entry PATH, and the same walk's raw cost of
  ``os.stat`` on every candidate path (the floor any resolver pays). Goal: under 1 ms per resolution.
* managed cache: python resolved from an npm install in the managed cache (its ``.bin`` launcher read,
  its receipt parsed, started as ``node script`` with the recorded node: issue 17 item 1) against the
  same language found on the PATH, both with the same 40-entry PATH, same run.
* cold CLI: ``kandev-lsp resolve LANG --json`` as a new process (the console script agentctl runs)
  against ``python -c pass`` from the same interpreter, rounds alternating, medians and [min-max] of
  each. Goal (issue 7 item 26): at most 3x the bare interpreter. Both run with bytecode caching on
  (``PYTHONDONTWRITEBYTECODE`` dropped from their environment, after a warm-up): an installed
  kandev-lsp has its bytecode compiled, and a checkout that never writes it would measure the compiler.

``--compare DIR`` adds a third side to the cold rounds: the same console script running another
checkout's sources (e.g. ``git worktree add /tmp/before HEAD~1``), so that a change is measured before
and after in the same run (its modules are put ahead of the editable install's on ``PYTHONPATH``).

Run: ``.venv/bin/python bench/resolve_bench.py [--rounds N] [--compare DIR]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchkit import compare_environment
from kandev_lsp.host import PluginHost
from kandev_lsp.resolver import Resolver
from kandev_lsp.taskenv import Task, TaskEnvironment

LANGUAGES = ("typescript", "python", "go", "rust", "kotlin")


def build_task(root: Path) -> Task:
    """40 PATH folders; gopls and pyright-langserver sit in the last one, the others are missing."""
    folders = []
    for index in range(40):
        folder = root / f"bin{index:02d}"
        folder.mkdir()
        folders.append(str(folder))
    for name in ("gopls", "pyright-langserver"):
        target = Path(folders[-1]) / name
        target.write_text("#!/bin/sh\n")
        target.chmod(0o755)
    env = TaskEnvironment.from_agent(
        {"PATH": os.pathsep.join(folders), "HOME": str(root / "home"), "GOPATH": str(root / "gopath")},
        base={},
    )
    workspace = root / "workspace"
    workspace.mkdir()
    return Task(str(workspace), env)


def build_cache_task(root: Path) -> Task:
    """The same 40 PATH folders with only ``node`` in the last one; pyright installed by npm in the
    managed cache (``current -> versions/<v>``, a ``.bin`` symlink to the package's script, a receipt
    naming the script and the node npm ran with), laid out as the npm installer leaves it."""
    import json

    folders = [str(root / "cache-path" / f"bin{index:02d}") for index in range(40)]
    for folder in folders:
        Path(folder).mkdir(parents=True, exist_ok=True)
    node = Path(folders[-1]) / "node"
    node.write_text("#!/bin/sh\n")
    node.chmod(0o755)
    home = root / "cache-home"
    language = home / ".kandev" / "lsp-servers" / "python"
    version = language / "versions" / "1.1.414+bench"
    script = version / "node_modules" / "pyright" / "langserver.index.js"
    script.parent.mkdir(parents=True)
    script.write_text("#!/usr/bin/env node\n")
    script.chmod(0o755)
    launcher = version / "node_modules" / ".bin" / "pyright-langserver"
    launcher.parent.mkdir()
    launcher.symlink_to(os.path.join("..", "pyright", "langserver.index.js"))
    (language / "current").symlink_to(os.path.join("versions", version.name))
    receipt = {
        "schema": "kandev-lsp/install-receipt", "version": 1, "language": "python", "plugin": "python",
        "pluginVersion": "0.1.0", "recipe": "npm", "serverVersion": "1.1.414", "packages": ["pyright@1.1.414"],
        "identity": "npm pyright@1.1.414", "source": "npm registry", "sha256": None,
        "executable": "node_modules/.bin/pyright-langserver", "installedAt": "2026-12-01T00:00:00Z",
        "toolchain": {}, "interpreter": str(node), "script": "node_modules/pyright/langserver.index.js",
    }  # fmt: skip
    (version / "receipt.json").write_text(json.dumps(receipt))
    env = TaskEnvironment.from_agent({"PATH": os.pathsep.join(folders), "HOME": str(home)}, base={})
    workspace = root / "cache-workspace"
    workspace.mkdir()
    return Task(str(workspace), env)


def per_call(call: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeat):
            call()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best


def in_process(task: Task) -> None:
    resolver = Resolver(PluginHost.load())
    print("In-process resolution, 40-entry PATH (best of 5 x 200 calls)")
    print(f"{'language':<12}{'resolve':>12}{'stat floor':>14}{'ratio':>8}  found")
    for language in LANGUAGES:
        resolution = resolver.resolve(language, task)
        paths = [step.path for step in resolution.trail if step.path and step.verdict != "skipped"]
        resolve_time = per_call(lambda language=language: resolver.resolve(language, task), 200)

        def stat_all(paths: list[str] = paths) -> None:
            for path in paths:
                try:  # noqa: SIM105 - contextlib.suppress would add its own cost to the floor
                    os.stat(path)
                except OSError:
                    pass

        floor = per_call(stat_all, 200)
        print(
            f"{language:<12}{resolve_time * 1e3:>10.3f}ms{floor * 1e3:>12.3f}ms{resolve_time / floor:>7.1f}x"
            f"  {'yes' if resolution.found else 'no (' + str(resolution.reason) + ')'}"
        )


def managed_cache(path_task: Task, cache_task: Task) -> None:
    resolver = Resolver(PluginHost.load())
    found = resolver.resolve("python", cache_task)
    if not (found.found and found.source == "managed cache" and len(found.command) == 2):
        raise SystemExit(f"bench set-up: python did not resolve to node + script from the cache: {found}")
    on_path = per_call(lambda: resolver.resolve("python", path_task), 200)
    in_cache = per_call(lambda: resolver.resolve("python", cache_task), 200)
    print("\nManaged cache, npm launcher started as node + script (best of 5 x 200 calls)")
    print(
        f"python from the cache {in_cache * 1e3:.3f} ms   on the PATH {on_path * 1e3:.3f} ms   "
        f"ratio {in_cache / on_path:.1f}x   (goal: under 1 ms)"
    )


HEAVY = (
    "httpx",
    "websockets",
    "lsprotocol",
    "asyncio",
    "importlib.metadata",
    "logging",
    "shutil",
    "subprocess",
)


def cold(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - start


def kandev_lsp_command() -> list[str]:
    script = Path(sys.executable).parent / "kandev-lsp"
    return [str(script)] if script.exists() else [sys.executable, "-m", "kandev_lsp.cli"]


def spread(times: list[float]) -> str:
    return f"[{min(times) * 1e3:.0f}-{max(times) * 1e3:.0f}]"


def cold_cli(rounds: int, compare: Path | None, scratch: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    compare_env = compare_environment(compare, env, scratch) if compare else None
    bare = [sys.executable, "-c", "pass"]
    print(f"\nCold process (median of {rounds} alternating rounds [min-max]; goal: at most 3x)")
    for language in ("go", "typescript"):
        cli = [*kandev_lsp_command(), "resolve", language, "--json"]
        sides = [(bare, env), (cli, env)] + ([(cli, compare_env)] if compare_env is not None else [])
        for _ in range(2):  # warm-up: bytecode written, files cached
            for argv, side_env in sides:
                cold(argv, side_env)
        times: list[list[float]] = [[] for _ in sides]
        for _ in range(rounds):
            for (argv, side_env), side_times in zip(sides, times, strict=True):
                side_times.append(cold(argv, side_env))
        b, c = statistics.median(times[0]), statistics.median(times[1])
        line = (
            f"resolve {language:<11} {c * 1e3:7.1f} ms {spread(times[1]):>11}   "
            f"python -c pass {b * 1e3:6.1f} ms {spread(times[0]):>11}   ratio {c / b:4.2f}x"
        )
        if compare_env is not None:
            o = statistics.median(times[2])
            line += f"   compared {o * 1e3:7.1f} ms {spread(times[2]):>11} ratio {o / b:4.2f}x"
        print(line)
    modules = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kandev_lsp.cli", "resolve", "go", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    ).stderr
    heavy = [name for name in HEAVY if f" {name}\n" in modules]
    print(f"heavy modules imported by `resolve`: {', '.join(heavy) or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--compare", type=Path, help="another checkout whose `resolve` is measured too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        path_task = build_task(Path(root))
        in_process(path_task)
        managed_cache(path_task, build_cache_task(Path(root)))
        cold_cli(args.rounds, args.compare, Path(root))


if __name__ == "__main__":
    main()
