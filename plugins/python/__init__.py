"""Python through pyright's language server (``pyright-langserver --stdio``), pinned."""

from __future__ import annotations

from collections.abc import Iterable

from kandev_lsp import LanguageSpec, NpmPackage, NpmRecipe, Readiness, ReadinessKind, hookimpl

LANGUAGE = LanguageSpec(
    id="python",
    display_name="Python",
    command="pyright-langserver",
    args=("--stdio",),
    file_extensions=(".py", ".pyi"),
    language_ids=("python",),
    root_markers=("pyproject.toml", "setup.py", "setup.cfg", "pyrightconfig.json", "requirements.txt"),
    install=NpmRecipe(
        packages=(NpmPackage("pyright", "1.1.414"),), bin="pyright-langserver", node_engine=">=14"
    ),
    homepage="https://github.com/microsoft/pyright",
    # pyright-langserver has no --version; the package's other launcher does, but the server itself
    # answers an LSP initialize, which is how installs are verified.
    version_args=(),
    document_language_ids={".py": "python", ".pyi": "python"},
    # pyright answers before it has found the project's files, incompletely (references to click's
    # Command.invoke: 4 lines in 1 file instead of 5 in 2). Its first work-done progress end marks the
    # full analysis; a small project gets no progress at all, but always the "Found N source files" log.
    readiness=Readiness(ReadinessKind.PROGRESS, log_message=r"^Found \d+ source files?"),
)


@hookimpl
def kandev_lsp_languages() -> Iterable[LanguageSpec]:
    return [LANGUAGE]
