"""Recipe kinds are one registry keyed by recipe type (issue 8, "the house"): the planner, the manager and
the core's default ``installer_available`` ask the kind's installer, never ``isinstance``.

Shown by adding a kind the core has never heard of (a recipe that writes a small script) through the
registry alone: it plans, installs, verifies, receipts and resolves like the built-in kinds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import Mapping
from typing import Any

import pytest
from kandev_lsp import GoRecipe, LanguageSpec, ManualInstall, NpmRecipe, ReleaseRecipe, Task, TaskEnvironment
from kandev_lsp.install import InstallManager, NoInstallerError, plan_install
from kandev_lsp.install import installers as registry
from kandev_lsp.install.context import InstallContext, Staged
from kandev_lsp.install.errors import digest_not_applicable
from kandev_lsp.install.installers import InstallOptions, RecipeInstaller, installer_for
from kandev_lsp.language import ReleaseAsset
from kandev_lsp.platform import HostPlatform
from kandev_lsp.resolver import Resolver


@dataclasses.dataclass(frozen=True)
class ScriptRecipe:
    """A kind the core does not ship: the server is a script the recipe carries."""

    version: str
    says: str
    kind: str = dataclasses.field(default="script", init=False)


class ScriptInstaller:
    recipe_type = ScriptRecipe

    def __init__(self) -> None:
        self.hosts_asked: list[HostPlatform] = []

    def available(self, recipe: ScriptRecipe, host: HostPlatform) -> bool:
        self.hosts_asked.append(host)
        return host.os != "windows"

    def advice(self, spec: LanguageSpec, recipe: ScriptRecipe, host: HostPlatform) -> str | None:
        return "scripts need a POSIX shell host"

    def missing_toolchain(self, recipe: ScriptRecipe, env: Any, workspace: str, probe: Any) -> str | None:
        return None  # the recipe carries its script: nothing to run

    def check_version(self, language: str, version: str, recipe: ScriptRecipe) -> None:
        return None

    def with_version(self, recipe: ScriptRecipe, version: str) -> ScriptRecipe:
        return dataclasses.replace(recipe, version=version)

    def target(
        self,
        spec: LanguageSpec,
        recipe: ScriptRecipe,
        host: HostPlatform,
        *,
        sha256: str | None,
        digest_sources: tuple[str, ...],
    ) -> ReleaseAsset | None:
        if sha256 is not None:
            raise digest_not_applicable(spec.id, recipe.kind)
        return None

    def identity(self, recipe: ScriptRecipe, host: HostPlatform) -> str:
        return f"script {recipe.version} {recipe.says}"

    def packages(self, recipe: ScriptRecipe, asset: ReleaseAsset | None) -> tuple[str, ...]:
        return (f"inline-script@{recipe.version}",)

    async def install(self, ctx: InstallContext, options: InstallOptions) -> Staged:
        recipe = ctx.recipe
        assert isinstance(recipe, ScriptRecipe)
        target = ctx.staging / "bin" / "scriptls"
        target.parent.mkdir()
        target.write_text(f"#!{sys.executable}\nprint({recipe.says!r})\n")
        target.chmod(0o755)
        return Staged("bin/scriptls", "the recipe itself")


SPEC = LanguageSpec(
    id="scripted",
    display_name="Scripted",
    command="scriptls",
    install=ScriptRecipe("1.2.3", "scriptls 1.2.3"),  # type: ignore[arg-type]
)


@pytest.fixture
def script_kind(monkeypatch: pytest.MonkeyPatch) -> ScriptInstaller:
    installer = ScriptInstaller()
    kinds: Mapping[type[Any], RecipeInstaller] = {**registry.installers(), ScriptRecipe: installer}
    monkeypatch.setattr(registry, "installers", lambda: kinds)
    return installer


def test_every_built_in_installable_kind_has_one_installer_and_manual_has_none() -> None:
    kinds = registry.installers()
    assert set(kinds) == {NpmRecipe, GoRecipe, ReleaseRecipe}
    assert all(kind is installer.recipe_type for kind, installer in kinds.items())
    assert installer_for(ManualInstall("by hand")) is None


def test_a_new_kind_registered_alone_is_planned_installed_verified_and_resolved(
    world: Any, kit: Any, script_kind: ScriptInstaller
) -> None:
    host = kit.plugin_host(SPEC)
    task = world.task(PATH="/nonexistent")

    missing = Resolver(host).resolve("scripted", task)
    assert missing.installable  # the core's default installer_available asked the kind's installer
    assert script_kind.hosts_asked == [task.host]

    plan = plan_install(SPEC, task.host, version="2.0.0", cache_root=str(world.cache))
    assert (plan.version, plan.identity, plan.packages) == (
        "2.0.0",
        "script 2.0.0 scriptls 1.2.3",
        ("inline-script@2.0.0",),
    )
    with pytest.raises(Exception, match="only applies to release downloads"):
        plan_install(SPEC, task.host, sha256="ab" * 32, cache_root=str(world.cache))

    receipt = asyncio.run(InstallManager(host).install("scripted", task))
    assert (receipt.recipe, receipt.version, receipt.packages) == (
        "script",
        "1.2.3",
        ("inline-script@1.2.3",),
    )
    found = Resolver(host).resolve("scripted", task)
    assert found.found and found.source == "managed cache"


def test_the_kinds_installer_decides_where_it_is_installable(kit: Any, script_kind: ScriptInstaller) -> None:
    host = kit.plugin_host(SPEC)
    assert host.installer_available(SPEC, HostPlatform("linux", "x86_64")) is True
    assert host.installer_available(SPEC, HostPlatform("windows", "x86_64")) is False
    windows = Resolver(host).resolve(
        "scripted", Task("C:\\ws", TaskEnvironment({"PATH": ""}, HostPlatform("windows", "x86_64")))
    )
    assert not windows.installable and "scripts need a POSIX shell host" in windows.message


def test_a_kind_with_no_registered_installer_is_never_installed(world: Any, kit: Any) -> None:
    assert installer_for(SPEC.install) is None
    assert kit.plugin_host(SPEC).installer_available(SPEC, HostPlatform.current()) is False
    with pytest.raises(NoInstallerError, match="no installer handles its 'script' recipe"):
        plan_install(SPEC, HostPlatform.current(), cache_root=str(world.cache))
