"""Resolution speed: in-process per-language resolution, and the cold CLI against a bare interpreter.

Figures are ratios against baselines measured in the same run (these machines are noisy):
* in-process: the time to resolve each language with a 40-entry PATH, and the same walk's raw cost of
  ``os.stat`` on every candidate path (the floor any resolver pays). Goal: under 1 ms per resolution.
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
        in_process(build_task(Path(root)))
        cold_cli(args.rounds, args.compare, Path(root))


if __name__ == "__main__":
    main()
