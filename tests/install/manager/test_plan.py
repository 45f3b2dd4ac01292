"""Pure install decisions: recipe, version override, identity and folder names, refusals."""

from __future__ import annotations

import pytest
from kandev_lsp import (
    GoRecipe,
    HostPlatform,
    LanguageSpec,
    ManualInstall,
    NpmPackage,
    NpmRecipe,
    ReleaseAsset,
)
from kandev_lsp.install import InstallError, NoInstallerError, plan_install
from kandev_lsp.language import ReleaseRecipe

LINUX = HostPlatform("linux", "x86_64")
WINDOWS = HostPlatform("windows", "x86_64")

TS = LanguageSpec(
    id="typescript",
    display_name="TypeScript",
    command="typescript-language-server",
    install=NpmRecipe(
        packages=(NpmPackage("typescript-language-server", "5.3.0"), NpmPackage("typescript", "5.9.3")),
        bin="typescript-language-server",
    ),
)
GO = LanguageSpec(
    id="go",
    display_name="Go",
    command="gopls",
    install=GoRecipe("golang.org/x/tools/gopls", "v0.14.2", "gopls"),
)
RUST = LanguageSpec(
    id="rust",
    display_name="Rust",
    command="rust-analyzer",
    install=ReleaseRecipe(
        version="2025-11-24",
        base_url="https://example.invalid/releases",
        assets={"linux-x86_64": ReleaseAsset("ra-x86_64.gz", sha256="AB" * 32)},
        bin="rust-analyzer",
    ),
)
KOTLIN = LanguageSpec(
    id="kotlin",
    display_name="Kotlin",
    command="kotlin-lsp",
    install=ManualInstall("Download it from JetBrains."),
)


def test_npm_plan_lists_every_pinned_package_and_names_the_folder_after_the_primary_version() -> None:
    plan = plan_install(TS, LINUX, cache_root="/home/u/.kandev/lsp-servers")
    assert plan.version == "5.3.0"
    assert plan.packages == ("typescript-language-server@5.3.0", "typescript@5.9.3")
    assert plan.identity == "npm typescript-language-server@5.3.0 typescript@5.9.3"
    assert plan.directory.startswith("5.3.0+") and len(plan.directory) == len("5.3.0+") + 8


def test_a_changed_secondary_pin_gets_its_own_folder() -> None:
    other = NpmRecipe(
        packages=(NpmPackage("typescript-language-server", "5.3.0"), NpmPackage("typescript", "5.9.2")),
        bin="typescript-language-server",
    )
    first = plan_install(TS, LINUX)
    second = plan_install(LanguageSpec(id="typescript", display_name="T", command="x", install=other), LINUX)
    assert first.version == second.version
    assert first.directory != second.directory


def test_version_override_replaces_only_the_primary_npm_package() -> None:
    plan = plan_install(TS, LINUX, version="5.2.0")
    assert plan.packages == ("typescript-language-server@5.2.0", "typescript@5.9.3")
    assert plan.version == "5.2.0"


def test_go_plan_and_override() -> None:
    assert plan_install(GO, LINUX).packages == ("golang.org/x/tools/gopls@v0.14.2",)
    assert plan_install(GO, LINUX, version="v0.15.0").identity == "go golang.org/x/tools/gopls@v0.15.0"


def test_go_versions_must_start_with_v() -> None:
    with pytest.raises(InstallError, match=r"try 'v0\.15\.0'"):
        plan_install(GO, LINUX, version="0.15.0")


@pytest.mark.parametrize("version", ["latest", "../../etc", "^5.0.0", "5.0 ", "", "a/b", "x" * 70])
def test_versions_that_are_not_exact_or_not_safe_as_folder_names_are_refused(version: str) -> None:
    with pytest.raises(InstallError, match="exact version"):
        plan_install(TS, LINUX, version=version)


def test_release_plan_picks_the_hosts_asset_and_its_pinned_digest_is_part_of_the_identity() -> None:
    plan = plan_install(RUST, LINUX)
    assert plan.asset == ReleaseAsset("ra-x86_64.gz", sha256="AB" * 32)
    assert plan.identity == f"release ra-x86_64.gz@2025-11-24 sha256:{'ab' * 32}"
    assert plan.packages == ("ra-x86_64.gz",)


def test_release_without_an_asset_for_the_host_has_no_installer() -> None:
    with pytest.raises(NoInstallerError, match=r"no rust-analyzer release for windows-x86_64.*linux-x86_64"):
        plan_install(RUST, WINDOWS)


def test_manual_languages_have_no_installer_and_say_what_to_do() -> None:
    with pytest.raises(NoInstallerError, match="Download it from JetBrains"):
        plan_install(KOTLIN, LINUX)


def test_a_disabled_cache_means_no_installer() -> None:
    with pytest.raises(NoInstallerError, match="HOME is not an absolute path"):
        plan_install(TS, LINUX, cache_root=None)


def test_no_installer_is_an_install_error_but_cancellation_is_not() -> None:
    from kandev_lsp.install import InstallCancelled

    assert issubclass(NoInstallerError, InstallError)
    assert not issubclass(InstallCancelled, InstallError)
