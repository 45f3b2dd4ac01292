"""Each built-in plugin alone: a plugin host holding only the core specs and that plugin."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import kandev_lsp_go
import kandev_lsp_kotlin
import kandev_lsp_python
import kandev_lsp_rust
import kandev_lsp_typescript
import pytest
from kandev_lsp import GoRecipe, HostPlatform, ManualInstall, NpmRecipe, ReleaseRecipe
from kandev_lsp.testing import make_plugin_host
from packaging.version import Version

ALL = [kandev_lsp_typescript, kandev_lsp_python, kandev_lsp_go, kandev_lsp_rust, kandev_lsp_kotlin]
LINUX = HostPlatform("linux", "x86_64")


@pytest.mark.parametrize("plugin", ALL, ids=lambda p: p.__name__)
def test_each_plugin_loads_alone_and_declares_one_language(plugin: ModuleType) -> None:
    host = make_plugin_host(plugin)
    [spec] = host.languages().values()
    assert spec is plugin.LANGUAGE
    assert spec.file_extensions and spec.language_ids and spec.root_markers


def test_typescript_pins_stay_below_typescript_7_and_run_on_node_20() -> None:
    recipe = kandev_lsp_typescript.LANGUAGE.install
    assert isinstance(recipe, NpmRecipe)
    versions = {p.name: Version(p.version) for p in recipe.packages}
    assert versions["typescript"] < Version("7")
    assert versions["typescript-language-server"] < Version("6")  # 6.x needs node >= 22
    assert kandev_lsp_typescript.LANGUAGE.command == recipe.bin == "typescript-language-server"
    assert kandev_lsp_typescript.LANGUAGE.args == ("--stdio",)


def test_python_runs_pinned_pyright_langserver() -> None:
    spec = kandev_lsp_python.LANGUAGE
    assert isinstance(spec.install, NpmRecipe)
    assert [p.spec for p in spec.install.packages] == ["pyright@1.1.414"]
    assert (spec.command, spec.args) == ("pyright-langserver", ("--stdio",))


def test_go_installs_pinned_gopls_and_defaults_semantic_tokens() -> None:
    spec = kandev_lsp_go.LANGUAGE
    assert isinstance(spec.install, GoRecipe)
    assert spec.install.package == "golang.org/x/tools/gopls" and spec.install.version.startswith("v")
    assert spec.args == ("serve",)
    host = make_plugin_host(kandev_lsp_go)
    assert host.default_settings(spec) == {"ui.semanticTokens": True}


def test_rust_release_assets_cover_exactly_macos_and_linux() -> None:
    spec = kandev_lsp_rust.LANGUAGE
    recipe = spec.install
    assert isinstance(recipe, ReleaseRecipe)
    assert sorted(recipe.assets) == ["darwin-aarch64", "darwin-x86_64", "linux-aarch64", "linux-x86_64"]
    asset = recipe.asset_for(HostPlatform("linux", "aarch64"))
    assert (
        asset is not None
        and asset.name == "rust-analyzer-aarch64-unknown-linux-gnu.gz"
        and asset.compression == "gzip"
    )
    assert recipe.asset_for(HostPlatform("darwin", "x86_64")).name == "rust-analyzer-x86_64-apple-darwin.gz"  # type: ignore[union-attr]
    assert spec.proxy_launchers == ("rustup",)


def test_kotlin_is_experimental_and_never_installable() -> None:
    spec = kandev_lsp_kotlin.LANGUAGE
    host = make_plugin_host(kandev_lsp_kotlin)
    assert spec.experimental and isinstance(spec.install, ManualInstall) and not spec.auto_installable
    for platform in [LINUX, HostPlatform("darwin", "aarch64"), HostPlatform("windows", "x86_64")]:
        assert host.installer_available(spec, platform) is False
    assert (spec.command, spec.args) == ("kotlin-lsp", ("--stdio",))


@pytest.mark.parametrize(
    ("capabilities", "expected"),
    [
        ({}, set()),
        (
            {"hoverProvider": True, "definitionProvider": True, "referencesProvider": True},
            {"hover", "definition", "references"},
        ),
        ({"hoverProvider": {}, "definitionProvider": {"workDoneProgress": True}}, {"hover", "definition"}),
        ({"hoverProvider": False, "referencesProvider": None}, set()),
        # completion and signatureHelp count only as an options object.
        ({"completionProvider": True, "signatureHelpProvider": True}, set()),
        (
            {"completionProvider": {"triggerCharacters": ["."]}, "signatureHelpProvider": {}},
            {"completion", "signatureHelp"},
        ),
    ],
)
def test_typescript_suppression_follows_advertised_capabilities(
    capabilities: dict[str, Any], expected: set[str]
) -> None:
    host = make_plugin_host(kandev_lsp_typescript)
    assert host.suppressed_providers(kandev_lsp_typescript.LANGUAGE, capabilities) == expected


def test_suppression_is_only_for_typescript() -> None:
    host = make_plugin_host(kandev_lsp_typescript, kandev_lsp_python)
    assert host.suppressed_providers(kandev_lsp_python.LANGUAGE, {"hoverProvider": True}) == frozenset()
