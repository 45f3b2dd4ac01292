"""Go recipes: ``go install <module>@<version>`` with the task's own toolchain and environment.

GOBIN is set to the staging folder's ``bin/``, so the binary lands in the managed cache like every other
install: atomic (staged, verified, then switched), receipted, and removable with ``kandev-lsp uninstall``.
Everything else is the task's: its ``go`` from PATH, GOPROXY, GOFLAGS, GOSUMDB, GOPATH (module and build
caches stay where the user keeps them; kandev-lsp never deletes them). Servers a user installed with
``go install`` themselves are still found by the resolver in GOBIN, GOPATH/bin and ~/go/bin.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kandev_lsp.install.errors import InstallRequestError, digest_not_applicable
from kandev_lsp.install.kinds import missing_tools
from kandev_lsp.language import GoRecipe

# The installer's helpers are imported where they run: the resolver imports this module to ask
# GoInstaller.available() and must stay light.
if TYPE_CHECKING:
    from kandev_lsp.fileprobe import FileProbe
    from kandev_lsp.install.context import InstallContext, Staged
    from kandev_lsp.install.kinds import InstallOptions
    from kandev_lsp.language import LanguageSpec, ReleaseAsset
    from kandev_lsp.platform import HostPlatform
    from kandev_lsp.taskenv import TaskEnvironment

ADVICE = (
    "Check that the task's Go toolchain can fetch modules (GOPROXY, GOFLAGS, GOSUMDB, GOPRIVATE, network "
    "access) and is new enough for this version, then run `{command}` again."
)
MISSING = "Install Go (https://go.dev/dl/ or your system's package) or add its bin folder to the task's PATH."


def go_argv(recipe: GoRecipe) -> list[str]:
    return ["go", "install", f"{recipe.package}@{recipe.version}"]


def proxy_source(goproxy: str) -> str:
    """The GOPROXY list for a receipt, each URL without credentials."""
    from kandev_lsp.install.context import public_url

    entries = [
        public_url(entry) if "://" in entry else entry for entry in goproxy.replace("|", ",").split(",")
    ]
    return "Go module proxy " + ",".join(entry for entry in entries if entry)


async def _facts(ctx: InstallContext) -> tuple[dict[str, str], str]:
    from kandev_lsp.install.context import tool_output

    text = await tool_output(ctx, ["go", "env", "-json", "GOVERSION", "GOPROXY"]) or ""
    values: dict[str, str] = {}
    with contextlib.suppress(ValueError, TypeError, AttributeError):  # warnings may surround the JSON
        values = {
            key: str(value) for key, value in json.loads(text[text.find("{") : text.rfind("}") + 1]).items()
        }
    toolchain = {"go": values["GOVERSION"]} if values.get("GOVERSION") else {}
    source = proxy_source(values["GOPROXY"]) if values.get("GOPROXY") else "Go module proxy (as configured)"
    return toolchain, source


async def install_go(ctx: InstallContext) -> Staged:
    from kandev_lsp.install.context import Staged, alongside, find_executable, run_tool

    recipe = ctx.recipe
    assert isinstance(recipe, GoRecipe)
    bin_dir = ctx.staging / "bin"
    bin_dir.mkdir()
    env = ctx.task.env.with_overrides({"GOBIN": str(bin_dir)})
    argv = go_argv(recipe)
    ctx.fanout.phase("installing", " ".join(argv))
    what = " ".join(argv)
    _, (toolchain, source) = await alongside(
        run_tool(
            ctx, argv, what=what, advice=ADVICE.format(command=ctx.retry_command), missing=MISSING, env=env
        ),
        _facts(ctx),
    )
    executable = find_executable(ctx, "bin", recipe.bin)
    return Staged(executable, f"{source}: {recipe.package}@{recipe.version}", toolchain)


class GoInstaller:
    """The ``go`` kind: ``go install module@version`` into the staging folder (registered in
    :mod:`kandev_lsp.install.installers`)."""

    recipe_type = GoRecipe

    def available(self, recipe: GoRecipe, host: HostPlatform) -> bool:
        return True  # wherever the task has a Go toolchain; doctor checks it

    def missing_toolchain(
        self, recipe: GoRecipe, env: TaskEnvironment, workspace: str, probe: FileProbe
    ) -> str | None:
        return missing_tools(("go",), env, workspace, probe, MISSING)

    def advice(self, spec: LanguageSpec, recipe: Any, host: HostPlatform) -> str | None:
        return None

    def check_version(self, language: str, version: str, recipe: GoRecipe) -> None:
        if not version.startswith("v"):
            raise InstallRequestError(
                language,
                f"cannot install {language} version {version!r}: Go module versions start with 'v' "
                f"(for example {recipe.version!r}); try 'v{version}'",
            )

    def with_version(self, recipe: GoRecipe, version: str) -> GoRecipe:
        return replace(recipe, version=version)

    def target(
        self,
        spec: LanguageSpec,
        recipe: GoRecipe,
        host: HostPlatform,
        *,
        sha256: str | None,
        digest_sources: tuple[str, ...],
    ) -> ReleaseAsset | None:
        if sha256 is not None:
            raise digest_not_applicable(spec.id, recipe.kind)
        return None

    def identity(self, recipe: GoRecipe, host: HostPlatform) -> str:
        return f"go {recipe.package}@{recipe.version}"

    def packages(self, recipe: GoRecipe, asset: ReleaseAsset | None) -> tuple[str, ...]:
        return (f"{recipe.package}@{recipe.version}",)

    async def install(self, ctx: InstallContext, options: InstallOptions) -> Staged:
        return await install_go(ctx)


GO_INSTALLER = GoInstaller()
