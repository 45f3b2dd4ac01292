"""npm recipes: ``npm install --prefix <staging> <pinned specs>`` with the task's own node and npm.

One prefix per installed version, so npm's habit of pruning packages it was not asked for in a shared
prefix never removes another server. The staging prefix gets its own ``package.json`` first: npm then
treats it as the project root and never walks up to a stray ``package.json`` in the task's HOME.

npm is run with the task's environment and without registry, proxy or cache-location flags, so the user's npm
configuration (``npm_config_*`` variables, ``~/.npmrc``) decides where packages come from.

The server's interpreter is decided here, once: the task's ``node`` found by the one lookup (never a file
inside the workspace). npm itself runs on that node (``node npm-cli.js`` when npm's launcher is a node
script, as Debian's and nvm's are), the new server is verified as ``node <script>`` (the package's ``bin``
entry), and both are recorded in the receipt, so every later start uses the same node the same way
(:mod:`kandev_lsp.launchers`; issue 17 item 1).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kandev_lsp import jsontext
from kandev_lsp.install.errors import digest_not_applicable
from kandev_lsp.install.kinds import missing_tools
from kandev_lsp.language import NpmRecipe

# The installer's helpers are imported where they run: the resolver imports this module to ask
# NpmInstaller.available() and must stay light (no logging, no subprocess machinery).
if TYPE_CHECKING:
    from kandev_lsp.fileprobe import FileProbe
    from kandev_lsp.install.context import InstallContext, Staged
    from kandev_lsp.install.kinds import InstallOptions
    from kandev_lsp.language import LanguageSpec, ReleaseAsset
    from kandev_lsp.platform import HostPlatform
    from kandev_lsp.taskenv import TaskEnvironment

ADVICE = (
    "Check that the task's npm can reach its registry (npm config: registry, proxy, .npmrc) and that "
    "node is new enough, then run `{command}` again."
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
                data = jsontext.loads(handle.read())
            if isinstance(data, dict) and data.get("name") == "npm" and isinstance(data.get("version"), str):
                return str(data["version"])
    return None


def npm_command(node: str, npm: str, probe: FileProbe) -> list[str]:
    """How to start ``npm`` (the launcher the lookup found) so that it runs on ``node``: ``[node,
    npm-cli.js]`` when the launcher is (a link to) a node script; else the launcher itself (``npm.cmd``),
    which then finds node on the reduced PATH kandev-lsp's tools get (no entry inside the workspace)."""
    from kandev_lsp.launchers import is_node_script

    real = probe.real_path(npm)
    return [node, real] if is_node_script(real, probe) else [npm]


def bin_script(prefix: Path, recipe: NpmRecipe) -> str | None:
    """The script ``recipe.bin`` runs, relative to ``prefix`` (``node_modules/pyright/langserver.index.js``),
    from the ``bin`` entry of the pinned package that declares it; None when none does."""
    for package in recipe.packages:
        folder = f"node_modules/{package.name}"
        with contextlib.suppress(OSError, ValueError):
            bins = jsontext.loads((prefix / folder / "package.json").read_text(encoding="utf-8")).get("bin")
            if isinstance(bins, str):  # "bin": "cli.js" names the package's own command
                bins = {package.name.rsplit("/", 1)[-1]: bins}
            target = bins.get(recipe.bin) if isinstance(bins, dict) else None
            if isinstance(target, str):
                script = posixpath.normpath(posixpath.join(folder, target.replace("\\", "/")))
                if script.startswith(folder + "/") and (prefix / script).is_file():
                    return script
    return None


def _script(ctx: InstallContext, recipe: NpmRecipe, launcher: str) -> str:
    """The staged server's script: the package's ``bin`` entry, else where the ``.bin`` link points."""
    from kandev_lsp.install.errors import InstallError

    script = bin_script(ctx.staging, recipe)
    if script is not None:
        return script
    real = Path(os.path.realpath(ctx.staging / launcher))
    modules = Path(os.path.realpath(ctx.staging / "node_modules"))
    if real.is_file() and modules in real.parents and real.parent.name != ".bin":
        return real.relative_to(os.path.realpath(ctx.staging)).as_posix()
    raise InstallError(
        ctx.language,
        f"the installer finished but no pinned package declares the {recipe.bin} command in its package.json "
        f"bin entry, so kandev-lsp cannot tell which script {launcher} runs. Report this to the "
        f"{ctx.language} plugin's authors.",
    )


async def _toolchain(ctx: InstallContext, node: str, npm: str, run_npm: list[str]) -> dict[str, str]:
    """node and npm versions for the receipt: ``node --version`` (milliseconds) and npm's package.json
    (``npm``, its launcher), else ``--version`` of npm started as ``run_npm`` (:func:`npm_command`)."""
    from kandev_lsp.install.context import tool_output

    toolchain: dict[str, str] = {}
    version = await tool_output(ctx, [node, "--version"])
    if version:
        toolchain["node"] = version.strip().removeprefix("v")
    version = npm_package_version(npm) or await tool_output(ctx, [*run_npm, "--version"])
    if version:
        toolchain["npm"] = version.strip().splitlines()[-1]
    return toolchain


def _source(staging: Path, recipe: NpmRecipe) -> str:
    """Where the primary package came from: the registry in its lockfile entry when npm recorded one (a
    non-default registry), else the task's configured registry."""
    from kandev_lsp.install.context import public_url

    name = recipe.packages[0].name
    with contextlib.suppress(OSError, ValueError, AttributeError, TypeError):
        lock = jsontext.loads((staging / "package-lock.json").read_text(encoding="utf-8"))
        resolved = lock["packages"][f"node_modules/{name}"].get("resolved")
        if isinstance(resolved, str) and "://" in resolved:
            registry = resolved.split(f"/{name}/-/", 1)[0]
            return f"npm registry {public_url(registry)}"
    return "npm registry (as configured for the task)"


async def install_npm(ctx: InstallContext) -> Staged:
    from kandev_lsp.fileprobe import LocalFileProbe
    from kandev_lsp.install.context import Staged, alongside, find_executable, run_tool, trusted_tool

    recipe = ctx.recipe
    assert isinstance(recipe, NpmRecipe)
    missing = MISSING.format(engine=recipe.node_engine)
    npm = trusted_tool(ctx, "npm", missing=missing)
    node = trusted_tool(ctx, "node", missing=missing)  # the server's interpreter, recorded in the receipt
    run_npm = npm_command(node, npm, LocalFileProbe(ctx.task.host))
    (ctx.staging / "package.json").write_text('{"private": true}\n', encoding="utf-8")
    argv = [*run_npm, *npm_argv(recipe, str(ctx.staging))[1:]]
    what = "npm install " + " ".join(package.spec for package in recipe.packages)
    ctx.fanout.phase("installing", what)
    # Tool versions are asked for while npm installs, so they cost no wall time.
    _, toolchain = await alongside(
        run_tool(ctx, argv, what=what, advice=ADVICE.format(command=ctx.retry_command), missing=missing),
        _toolchain(ctx, node, npm, run_npm),
    )
    executable = find_executable(ctx, "node_modules/.bin", recipe.bin)
    script = _script(ctx, recipe, executable)
    return Staged(executable, _source(ctx.staging, recipe), toolchain, interpreter=node, script=script)


class NpmInstaller:
    """The ``npm`` kind: pinned npm packages in a prefix of their own (registered in
    :mod:`kandev_lsp.install.installers`)."""

    recipe_type = NpmRecipe

    def available(self, recipe: NpmRecipe, host: HostPlatform) -> bool:
        return True  # wherever the task has node and npm; doctor checks those

    def missing_toolchain(
        self, recipe: NpmRecipe, env: TaskEnvironment, workspace: str, probe: FileProbe
    ) -> str | None:
        return missing_tools(
            ("npm", "node"), env, workspace, probe, MISSING.format(engine=recipe.node_engine)
        )

    def advice(self, spec: LanguageSpec, recipe: Any, host: HostPlatform) -> str | None:
        return None

    def check_version(self, language: str, version: str, recipe: NpmRecipe) -> None:
        return None

    def with_version(self, recipe: NpmRecipe, version: str) -> NpmRecipe:
        """The primary (first) package at ``version``; secondary pins stay."""
        first = replace(recipe.packages[0], version=version)
        return replace(recipe, packages=(first, *recipe.packages[1:]))

    def target(
        self,
        spec: LanguageSpec,
        recipe: NpmRecipe,
        host: HostPlatform,
        *,
        sha256: str | None,
        digest_sources: tuple[str, ...],
    ) -> ReleaseAsset | None:
        if sha256 is not None:
            raise digest_not_applicable(spec.id, recipe.kind)
        return None

    def identity(self, recipe: NpmRecipe, host: HostPlatform) -> str:
        return "npm " + " ".join(package.spec for package in recipe.packages)

    def packages(self, recipe: NpmRecipe, asset: ReleaseAsset | None) -> tuple[str, ...]:
        return tuple(package.spec for package in recipe.packages)

    async def install(self, ctx: InstallContext, options: InstallOptions) -> Staged:
        return await install_npm(ctx)


NPM_INSTALLER = NpmInstaller()
