"""Kotlin through JetBrains' kotlin-lsp: experimental, never installed automatically.

kotlin-lsp is distributed only from JetBrains' own download site as a platform bundle; kandev-lsp
resolves a copy a person installed and otherwise says how to get one.
"""

from __future__ import annotations

from collections.abc import Iterable

from kandev_lsp import LanguageSpec, ManualInstall, Readiness, ReadinessKind, hookimpl

READY_NOTIFICATION = "intellij/ready-for-test"

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
    document_language_ids={".kt": "kotlin", ".kts": "kotlin"},
    # kotlin-lsp signals the end of its Gradle import with this notification (from the reference
    # system's analysis; kotlin-lsp cannot be installed on the project's machines, so it is not measured
    # here). A Gradle import can take minutes: the timeout is generous.
    readiness=Readiness(ReadinessKind.NOTIFICATION, notification=READY_NOTIFICATION, timeout=300.0),
)


@hookimpl
def kandev_lsp_languages() -> Iterable[LanguageSpec]:
    return [LANGUAGE]
