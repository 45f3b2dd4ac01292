"""npm recipes: ``npm install --prefix <staging> <pinned specs>`` with the task's own node and npm.

One prefix per installed version, so npm's habit of pruning packages it was not asked for in a shared
prefix never removes another server. The staging prefix gets its own ``package.json`` first: npm then
treats it as the project root and never walks up to a stray ``package.json`` in the task's HOME.

npm is run with the task's environment and without registry, proxy or cache flags, so the user's npm
configuration (``npm_config_*`` variables, ``~/.npmrc``) decides where packages come from.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

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
    """The install command line (pure, for tests and the benchmark)."""
    specs = [package.spec for package in recipe.packages]
    return ["npm", "install", "--prefix", prefix, *specs, "--no-audit", "--no-fund", "--no-update-notifier"]


async def _facts(ctx: InstallContext) -> tuple[dict[str, str], str]:
    versions_text, registry = await asyncio.gather(
        tool_output(ctx, ["npm", "version", "--json"]),
        tool_output(ctx, ["npm", "config", "get", "registry"]),
    )
    toolchain: dict[str, str] = {}
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        versions = json.loads(versions_text or "")
        toolchain = {tool: str(versions[tool]) for tool in ("node", "npm") if tool in versions}
    source = (
        f"npm registry {public_url(registry.splitlines()[-1])}"
        if registry
        else "npm registry (as configured)"
    )
    return toolchain, source


async def install_npm(ctx: InstallContext) -> Staged:
    recipe = ctx.plan.recipe
    assert isinstance(recipe, NpmRecipe)
    (ctx.staging / "package.json").write_text('{"private": true}\n', encoding="utf-8")
    argv = npm_argv(recipe, str(ctx.staging))
    what = "npm install " + " ".join(package.spec for package in recipe.packages)
    ctx.fanout.phase("installing", what)
    # Tool versions and the registry are asked for while npm installs, so they cost no wall time.
    _, (toolchain, source) = await alongside(
        run_tool(
            ctx,
            argv,
            what=what,
            advice=ADVICE.format(language=ctx.language),
            missing=MISSING.format(engine=recipe.node_engine),
        ),
        _facts(ctx),
    )
    executable = find_executable(ctx, "node_modules/.bin", recipe.bin)
    return Staged(executable, source, toolchain)
