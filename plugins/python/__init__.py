"""Python through pyright's language server (``pyright-langserver --stdio``), pinned."""

from __future__ import annotations

from collections.abc import Iterable

from kandev_lsp import LanguageSpec, NpmPackage, NpmRecipe, hookimpl

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
)


@hookimpl
def kandev_lsp_languages() -> Iterable[LanguageSpec]:
    return [LANGUAGE]
