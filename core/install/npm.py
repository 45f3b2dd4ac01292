"""npm recipes: ``npm install --prefix <staging> <pinned specs>`` with the task's own node and npm.

One prefix per installed version, so npm's habit of pruning packages it was not asked for in a shared
prefix never removes another server. The staging prefix gets its own ``package.json`` first: npm then
treats it as the project root and never walks up to a stray ``package.json`` in the task's HOME.

npm is run with the task's environment and without registry, proxy or cache-location flags, so the user's npm
configuration (``npm_config_*`` variables, ``~/.npmrc``) decides where packages come from.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from kandev_lsp.install.context import (
    InstallContext,
    Staged,
    alongside,
    find_executable,
    public_url,
    run_tool,
    tool_output,
)
from kandev_lsp.language import NpmRecipe

ADVICE = (
    "Check that the task's npm can reach its registry (npm config: registry, proxy, .npmrc) and that "
    "node is new enough, then run `kandev-lsp install {language}` again."
)
MISSING = "Install Node.js with npm (version {engine}) or add its folder to the task's PATH."


def npm_argv(recipe: NpmRecipe, prefix: str) -> list[str]:
    """The install command line (pure, for tests and the benchmark).

    ``--prefer-offline``: every spec is an exact version, and a published version never changes, so
    package data already in the user's npm cache is as good as the registry's; npm still fetches what
    the cache lacks. It saves one revalidation round trip per package.
    """
    specs = [package.spec for package in recipe.packages]
    return [
        "npm", "install", "--prefix", prefix, *specs,
        "--no-audit", "--no-fund", "--no-update-notifier", "--prefer-offline",
    ]  # fmt: skip


def npm_package_version(launcher: str) -> str | None:
    """npm's version from the ``package.json`` beside the launcher found on PATH, without running npm
    (a second npm started during the install would compete with it for the CPU)."""
    real = os.path.realpath(launcher)
    candidates = [
        os.path.join(os.path.dirname(os.path.dirname(real)), "package.json"),  # .../npm/bin/npm-cli.js
        os.path.join(os.path.dirname(real), "node_modules", "npm", "package.json"),  # Windows: npm.cmd
    ]
    for candidate in candidates:
        with contextlib.suppress(OSError, ValueError):
            with open(candidate, encoding="utf-8") as handle:
                data = json.load(handle)
            if isinstance(data, dict) and data.get("name") == "npm" and isinstance(data.get("version"), str):
                return str(data["version"])
    return None


async def _toolchain(ctx: InstallContext) -> dict[str, str]:
    """node and npm versions for the receipt: ``node --version`` (milliseconds) and npm's package.json."""
    from kandev_lsp.install.toolchains import find_on_path

    toolchain: dict[str, str] = {}
    node = await tool_output(ctx, ["node", "--version"])
    if node:
        toolchain["node"] = node.strip().removeprefix("v")
    launcher = find_on_path("npm", ctx.task)
    version = npm_package_version(launcher) if launcher else None
    if version is None and launcher:
        version = await tool_output(ctx, ["npm", "--version"])
    if version:
        toolchain["npm"] = version.strip().splitlines()[-1]
    return toolchain


def _source(staging: Path, recipe: NpmRecipe) -> str:
    """Where the primary package came from: the registry in its lockfile entry when npm recorded one (a
    non-default registry), else the task's configured registry."""
    name = recipe.packages[0].name
    with contextlib.suppress(OSError, ValueError, AttributeError, TypeError):
        lock = json.loads((staging / "package-lock.json").read_text(encoding="utf-8"))
        resolved = lock["packages"][f"node_modules/{name}"].get("resolved")
        if isinstance(resolved, str) and "://" in resolved:
            registry = resolved.split(f"/{name}/-/", 1)[0]
            return f"npm registry {public_url(registry)}"
    return "npm registry (as configured for the task)"


async def install_npm(ctx: InstallContext) -> Staged:
    recipe = ctx.plan.recipe
    assert isinstance(recipe, NpmRecipe)
    (ctx.staging / "package.json").write_text('{"private": true}\n', encoding="utf-8")
    argv = npm_argv(recipe, str(ctx.staging))
    what = "npm install " + " ".join(package.spec for package in recipe.packages)
    ctx.fanout.phase("installing", what)
    # Tool versions are asked for while npm installs, so they cost no wall time.
    _, toolchain = await alongside(
        run_tool(
            ctx,
            argv,
            what=what,
            advice=ADVICE.format(language=ctx.language),
            missing=MISSING.format(engine=recipe.node_engine),
        ),
        _toolchain(ctx),
    )
    executable = find_executable(ctx, "node_modules/.bin", recipe.bin)
    return Staged(executable, _source(ctx.staging, recipe), toolchain)
