"""Go through gopls (``gopls serve``), installed with the task's own Go toolchain.

The pin is the newest gopls whose module still builds with the Go 1.19 toolchain Debian 12 ships; a
task with a newer toolchain can ask for another version with ``kandev-lsp install go --version``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kandev_lsp import GoRecipe, LanguageSpec, Readiness, ReadinessKind, hookimpl

LANGUAGE = LanguageSpec(
    id="go",
    display_name="Go",
    command="gopls",
    args=("serve",),
    file_extensions=(".go",),
    language_ids=("go", "gomod", "gowork", "gotmpl"),
    root_markers=("go.work", "go.mod"),
    nested_projects="separate",  # a go.mod inside another module is a module of its own
    install=GoRecipe(package="golang.org/x/tools/gopls", version="v0.14.2", bin="gopls"),
    homepage="https://pkg.go.dev/golang.org/x/tools/gopls",
    version_args=("version",),
    document_language_ids={".go": "go", "go.mod": "gomod", "go.work": "gowork", ".tmpl": "gotmpl"},
    # gopls loads packages before it answers a request: its answers after initialize are complete.
    readiness=Readiness(ReadinessKind.IMMEDIATE),
)

DEFAULT_SETTINGS: Mapping[str, Any] = {"ui.semanticTokens": True}


@hookimpl
def kandev_lsp_languages() -> Iterable[LanguageSpec]:
    return [LANGUAGE]


@hookimpl
def kandev_lsp_default_settings(language: LanguageSpec) -> Mapping[str, Any] | None:
    return DEFAULT_SETTINGS if language.id == LANGUAGE.id else None
