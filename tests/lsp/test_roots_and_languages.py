"""Project roots from root markers (pure), file -> languageId, and the plugin contract's new hooks."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp import LanguageSpec, Readiness, ReadinessKind, hookimpl
from kandev_lsp.host import PluginHost
from kandev_lsp.lsp.roots import find_project_root, project_root

WS = "/ws"


def exists_in(*paths: str) -> Any:
    present = set(paths)
    return lambda path: path in present


@pytest.mark.parametrize(
    ("path", "markers", "files", "root"),
    [
        ("/ws/a/b/x.go", ("go.work", "go.mod"), ["/ws/a/go.mod"], "/ws/a"),
        # go.work outranks an inner go.mod: the marker order is the priority
        ("/ws/a/b/x.go", ("go.work", "go.mod"), ["/ws/a/b/go.mod", "/ws/go.work"], "/ws"),
        # the innermost folder holding the winning marker
        (
            "/ws/p/q/x.ts",
            ("tsconfig.json", "package.json"),
            ["/ws/tsconfig.json", "/ws/p/tsconfig.json"],
            "/ws/p",
        ),
        ("/ws/p/x.ts", ("tsconfig.json", "package.json"), ["/ws/p/package.json", "/ws/tsconfig.json"], "/ws"),
        ("/ws/x.py", ("pyproject.toml",), [], "/ws"),  # no marker: the workspace
        ("/ws/a/x.py", ("pyproject.toml",), ["/pyproject.toml"], "/ws"),  # never above the workspace
        ("/elsewhere/x.py", ("pyproject.toml",), [], None),  # outside the workspace
        ("/wsx/x.py", ("pyproject.toml",), [], None),  # a sibling with a common prefix is outside
        ("/ws/a/../../etc/x.py", ("pyproject.toml",), [], None),
        ("/ws/a/x.py", ("../x", "", "a/b"), ["/ws/x"], "/ws"),  # markers with separators are ignored
    ],
)
def test_find_project_root(path: str, markers: tuple[str, ...], files: list[str], root: str | None) -> None:
    assert find_project_root(path, WS, markers, exists_in(*files)) == root


def test_project_root_on_disk(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "src").mkdir(parents=True)
    (tmp_path / "pkg" / "pyproject.toml").write_text("")
    source = tmp_path / "pkg" / "src" / "m.py"
    source.write_text("")
    assert project_root(str(source), str(tmp_path), ("pyproject.toml",)) == str(tmp_path / "pkg")
    assert project_root(str(tmp_path / "pkg" / "src"), str(tmp_path), ("pyproject.toml",)) == str(
        tmp_path / "pkg"
    )


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost.load(environ={})


@pytest.mark.parametrize(
    ("language", "path", "language_id"),
    [
        ("typescript", "src/App.tsx", "typescriptreact"),
        ("typescript", "src/App.jsx", "javascriptreact"),
        ("typescript", "a.mjs", "javascript"),
        ("typescript", "a.cjs", "javascript"),
        ("typescript", "a.mts", "typescript"),
        ("typescript", "a.d.ts", "typescript"),
        ("typescript", "A.TS", "typescript"),
        ("typescript", "a.py", None),
        ("python", "pkg/stubs.pyi", "python"),
        ("python", "x.py", "python"),
        ("go", "main.go", "go"),
        ("go", "sub/go.mod", "gomod"),
        ("go", "go.work", "gowork"),
        ("go", "go.sum", None),
        ("rust", "lib.rs", "rust"),
        ("kotlin", "Main.kt", "kotlin"),
        ("kotlin", "build.gradle.kts", "kotlin"),
        ("kotlin", "Makefile", None),
    ],
)
def test_language_id_of_built_in_languages(
    host: PluginHost, language: str, path: str, language_id: str | None
) -> None:
    assert host.language_id(host.language(language), path) == language_id


def test_built_in_readiness_and_client_capabilities(host: PluginHost) -> None:
    kinds = {lang: host.readiness(host.language(lang)).kind for lang in host.languages()}
    assert kinds == {
        "go": ReadinessKind.IMMEDIATE,
        "kotlin": ReadinessKind.NOTIFICATION,
        "python": ReadinessKind.PROGRESS,
        "rust": ReadinessKind.SERVER_STATUS,
        "typescript": ReadinessKind.PROGRESS,
    }
    assert host.client_capabilities(host.language("rust")) == {
        "experimental": {"serverStatusNotification": True}
    }
    assert host.client_capabilities(host.language("go")) == {}


class Override:
    """A third-party plugin overriding the three hooks for the built-in Go language."""

    @hookimpl
    def kandev_lsp_readiness(self, language: LanguageSpec) -> Readiness | None:
        return Readiness(ReadinessKind.NOTIFICATION, notification="x/ready") if language.id == "go" else None

    @hookimpl
    def kandev_lsp_client_capabilities(self, language: LanguageSpec) -> Mapping[str, Any] | None:
        if language.id != "rust":
            return None
        return {"experimental": {"colorDiagnosticOutput": True, "serverStatusNotification": False}}

    @hookimpl
    def kandev_lsp_language_id(self, language: LanguageSpec, path: str) -> str | None:
        return "gotmpl" if language.id == "go" and path.endswith(".gohtml") else None


def test_plugins_override_readiness_capabilities_and_language_ids() -> None:
    host = PluginHost.load(environ={})
    assert host.register(Override(), "override"), host.problems
    go, rust = host.language("go"), host.language("rust")
    assert host.readiness(go) == Readiness(ReadinessKind.NOTIFICATION, notification="x/ready")
    assert host.readiness(rust).kind is ReadinessKind.SERVER_STATUS  # None from the plugin: the declaration
    assert host.client_capabilities(rust) == {
        "experimental": {"serverStatusNotification": False, "colorDiagnosticOutput": True}
    }
    assert host.language_id(go, "page.gohtml") == "gotmpl"
    assert host.language_id(go, "main.go") == "go"


def test_readiness_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="notification"):
        Readiness(ReadinessKind.NOTIFICATION)
    with pytest.raises(ValueError, match="notification"):
        Readiness(ReadinessKind.PROGRESS, notification="x")
    with pytest.raises(ValueError, match="timeout"):
        Readiness(timeout=0)
