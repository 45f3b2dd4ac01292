"""Kotlin through JetBrains' kotlin-lsp: experimental, never installed automatically.

kotlin-lsp is distributed only from JetBrains' own download site as a platform bundle; kandev-lsp
resolves a copy a person installed and otherwise says how to get one.
"""

from __future__ import annotations

from collections.abc import Iterable

from kandev_lsp import LanguageSpec, ManualInstall, hookimpl

LANGUAGE = LanguageSpec(
    id="kotlin",
    display_name="Kotlin",
    command="kotlin-lsp",
    args=("--stdio",),
    file_extensions=(".kt", ".kts"),
    language_ids=("kotlin",),
    root_markers=("settings.gradle.kts", "settings.gradle", "build.gradle.kts", "pom.xml"),
    install=ManualInstall(
        "kotlin-lsp is experimental and never installed automatically: download it from "
        "https://github.com/Kotlin/kotlin-lsp (release notes link the platform bundles), unpack it, and put "
        "its `kotlin-lsp` launcher on the task's PATH."
    ),
    experimental=True,
    homepage="https://github.com/Kotlin/kotlin-lsp",
)


@hookimpl
def kandev_lsp_languages() -> Iterable[LanguageSpec]:
    return [LANGUAGE]
