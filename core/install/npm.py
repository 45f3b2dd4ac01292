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


async def _facts(ctx: InstallContext) -> tuple[str | None, str | None]:
    """``npm version --json`` and the configured registry (None for what npm could not tell)."""
    versions, registry = await asyncio.gather(
        tool_output(ctx, ["npm", "version", "--json"]),
        tool_output(ctx, ["npm", "config", "get", "registry"]),
    )
    return versions, registry


def _toolchain(versions_text: str | None) -> dict[str, str]:
    """node and npm versions from ``npm version --json`` output (stderr lines such as ``npm warn`` are
    interleaved with it, so the JSON object is cut out first)."""
    text = versions_text or ""
    start, end = text.find("{"), text.rfind("}")
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        versions = json.loads(text[start : end + 1])
        return {tool: str(versions[tool]) for tool in ("node", "npm") if tool in versions}
    return {}


def _source(registry: str | None) -> str:
    urls = [
        line.strip() for line in (registry or "").splitlines() if "://" in line and " " not in line.strip()
    ]
    return f"npm registry {public_url(urls[-1])}" if urls else "npm registry (as configured)"


async def install_npm(ctx: InstallContext) -> Staged:
    recipe = ctx.plan.recipe
    assert isinstance(recipe, NpmRecipe)
    (ctx.staging / "package.json").write_text('{"private": true}\n', encoding="utf-8")
    argv = npm_argv(recipe, str(ctx.staging))
    what = "npm install " + " ".join(package.spec for package in recipe.packages)
    ctx.fanout.phase("installing", what)
    # Tool versions and the registry are asked for while npm installs, so they cost no wall time.
    _, (versions, registry) = await alongside(
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
    if not _toolchain(versions) or _source(registry) == _source(None):
        # A brand-new HOME: npm runs started beside the install may trip over its first cache writes.
        # Ask again, now alone; receipts should say which node and npm installed the server.
        versions, registry = await _facts(ctx)
    return Staged(executable, _source(registry), _toolchain(versions))
