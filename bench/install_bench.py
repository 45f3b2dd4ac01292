"""Install speed: kandev-lsp's install of the pinned npm servers against a plain ``npm install``.

All install the same pinned packages into a fresh folder with the same npm cache (warmed first, so the
registry's speed does not decide the figure), in rotating order, for a few rounds; medians and ratios
are reported. kandev-lsp's figure includes what it adds: the lock, staging, a verification run of the
server (``--version`` or an LSP initialize), the receipt and the switch. Goal: within 10% of the plain
command. kandev-lsp passes ``--prefer-offline`` (safe: every spec is an exact version), so a third column
runs the plain command with that flag too: the ratio against it is the cost of kandev-lsp's own steps.

Also: resolving a language in-process before the install (the whole walk misses) and after it (found in
the managed cache), as a ratio.

Run: ``.venv/bin/python bench/install_bench.py [--rounds N] [--languages typescript,python]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from kandev_lsp.host import PluginHost
from kandev_lsp.install import InstallManager
from kandev_lsp.install.npm import npm_argv
from kandev_lsp.language import NpmRecipe
from kandev_lsp.resolver import Resolver
from kandev_lsp.taskenv import Task, TaskEnvironment


def kandev_install(plugins: PluginHost, language: str, task: Task) -> float:
    async def run() -> None:
        async with InstallManager(plugins) as manager:
            await manager.install(language, task)

    began = time.perf_counter()
    asyncio.run(run())
    return time.perf_counter() - began


def plain_npm_install(recipe: NpmRecipe, task: Task, *, prefer_offline: bool = False) -> float:
    """``npm install --prefix <d> <specs> --no-audit --no-fund`` (what a person would type) into a fresh
    folder of the task's HOME, with the task's environment."""
    prefix = Path(task.env.home()) / "plain-prefix"
    prefix.mkdir()
    dropped = {"--no-update-notifier"} | (set() if prefer_offline else {"--prefer-offline"})
    argv = [arg for arg in npm_argv(recipe, str(prefix)) if arg not in dropped]
    npm = shutil.which("npm", path=task.env.value("PATH"))
    assert npm, "npm must be on PATH"
    began = time.perf_counter()
    subprocess.run([npm, *argv[1:]], env=task.env.to_dict(), cwd=prefix, check=True, capture_output=True)
    return time.perf_counter() - began


def resolve_time(plugins: PluginHost, language: str, task: Task, calls: int = 300, repeats: int = 7) -> float:
    """Best per-call time of ``repeats`` batches: the minimum filters out the machine's other work (an
    npm install just ended, its processes may still be exiting)."""
    resolver = Resolver(plugins)
    resolver.resolve(language, task)
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        for _ in range(calls):
            resolver.resolve(language, task)
        best = min(best, (time.perf_counter() - began) / calls)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--languages", default="typescript,python")
    args = parser.parse_args()
    plugins = PluginHost.load()
    root = Path(tempfile.mkdtemp(prefix="kandev-install-bench-"))
    npm_cache = root / "npm-cache"
    counter = 0

    def fresh_task() -> Task:
        nonlocal counter
        counter += 1
        home = root / f"home{counter}"
        workspace = root / f"ws{counter}"
        home.mkdir()
        workspace.mkdir()
        # The shared cache is the user's npm configuration as far as kandev-lsp knows: passed through.
        env = TaskEnvironment.from_agent({"HOME": str(home), "npm_config_cache": str(npm_cache)})
        return Task(str(workspace), env)

    rows = []
    try:
        for language in args.languages.split(","):
            recipe = plugins.language(language).install
            assert isinstance(recipe, NpmRecipe), f"{language} is not an npm recipe"
            # Warm-up: fill the npm cache through both paths.
            kandev_install(plugins, language, fresh_task())
            plain_npm_install(recipe, fresh_task())
            times: dict[str, list[float]] = {"kandev": [], "plain": [], "offline": []}
            variants = ["kandev", "plain", "offline"]
            for round_number in range(args.rounds):
                shift = round_number % len(variants)
                for which in variants[shift:] + variants[:shift]:
                    if which == "kandev":
                        times[which].append(kandev_install(plugins, language, fresh_task()))
                    else:
                        times[which].append(
                            plain_npm_install(recipe, fresh_task(), prefer_offline=which == "offline")
                        )
            missing_task = fresh_task()
            before = resolve_time(plugins, language, missing_task)
            kandev_install(plugins, language, missing_task)
            after = resolve_time(plugins, language, missing_task)
            assert Resolver(plugins).resolve(language, missing_task).source == "managed cache"
            medians = {which: statistics.median(values) for which, values in times.items()}
            rows.append((language, medians["kandev"], medians["plain"], medians["offline"], before, after))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(f"install (median of {args.rounds} rounds, warm npm cache, rotating order)")
    print(
        f"{'language':<11} {'kandev-lsp':>11} {'plain npm':>10} {'ratio':>7}   "
        f"{'npm --prefer-offline':>20} {'ratio':>7}"
    )
    for language, kandev, plain, offline, _, _ in rows:
        print(
            f"{language:<11} {kandev:>10.2f}s {plain:>9.2f}s {kandev / plain:>7.3f}   "
            f"{offline:>19.2f}s {kandev / offline:>7.3f}"
        )
    print()
    print("in-process resolution (per call)")
    print(f"{'language':<11} {'before':>10} {'after':>10} {'after/before':>13}")
    for language, _, _, _, before, after in rows:
        print(f"{language:<11} {before * 1e6:>8.0f}us {after * 1e6:>8.0f}us {after / before:>13.3f}")
    print(f"\n(os.cpu_count() = {os.cpu_count()})")


if __name__ == "__main__":
    main()
