"""The interface of a recipe kind: what an installer is (:class:`RecipeInstaller`) and what it is given
(:class:`InstallOptions`).

A module of its own so that each kind's module (:mod:`~kandev_lsp.install.npm`,
:mod:`~kandev_lsp.install.golang`, :mod:`~kandev_lsp.install.release`) implements it without importing
the registry that lists them (:mod:`kandev_lsp.install.installers`): the registry imports the kinds, never
the other way round, so the install package's imports form no circle (the house, issue 17).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from kandev_lsp._values import dataclass, field

if TYPE_CHECKING:
    from kandev_lsp.fileprobe import FileProbe
    from kandev_lsp.install.context import InstallContext, Staged
    from kandev_lsp.install.download import DownloadTimeouts
    from kandev_lsp.language import LanguageSpec, ReleaseAsset
    from kandev_lsp.platform import HostPlatform
    from kandev_lsp.taskenv import TaskEnvironment


@dataclass(frozen=True, slots=True)
class InstallOptions:
    """How the install manager was configured; each installer takes what concerns its kind.

    ``release_base_urls`` / ``release_metadata_urls``: per-language mirror and release metadata (the
    settings' ``lsp_release_base_urls`` / ``lsp_release_metadata_urls``). ``download_timeouts``: None
    means the defaults.
    """

    release_base_urls: Mapping[str, str] = field(default_factory=dict)
    release_metadata_urls: Mapping[str, str] = field(default_factory=dict)
    download_timeouts: DownloadTimeouts | None = None

    def digest_sources(self, language: str) -> tuple[str, ...]:
        """Where the user configured digests to come from for ``language`` (a mirror, metadata)."""
        sources = []
        if self.release_base_urls.get(language):
            sources.append("mirror")
        if self.release_metadata_urls.get(language):
            sources.append("metadata")
        return tuple(sources)


class RecipeInstaller(Protocol):
    """How the core installs one kind of recipe. Every method but :meth:`install` and
    :meth:`missing_toolchain` (which looks files up through the probe it is given, running nothing) is
    pure."""

    #: The recipe type this installer handles (the registry's key).
    recipe_type: type[Any]

    def available(self, recipe: Any, host: HostPlatform) -> bool:
        """Whether ``host`` can install ``recipe`` unattended (the core's default ``installer_available``);
        decided without I/O."""
        ...

    def missing_toolchain(
        self, recipe: Any, env: TaskEnvironment, workspace: str, probe: FileProbe
    ) -> str | None:
        """What an install of ``recipe`` would run that this task lacks (``npm was not found on the task's
        PATH ...`` and what to do), found by the one lookup (:func:`~kandev_lsp.executables.locate`)
        without running anything; None when nothing is missing (or the kind runs no tool). Presence only:
        versions are ``doctor``'s and the install's to check."""
        ...

    def advice(self, spec: LanguageSpec, recipe: Any, host: HostPlatform) -> str | None:
        """When :meth:`available` says no: what a person can do about it, in a sentence (None when there
        is nothing more specific than "install it yourself")."""
        ...

    def check_version(self, language: str, version: str, recipe: Any) -> None:
        """Raise :class:`~kandev_lsp.install.errors.InstallError` for a requested version this kind cannot
        use (the generic exact-version rule is checked by the planner before)."""
        ...

    def with_version(self, recipe: Any, version: str) -> Any:
        """``recipe`` installing ``version`` instead of its pin."""
        ...

    def target(
        self,
        spec: LanguageSpec,
        recipe: Any,
        host: HostPlatform,
        *,
        sha256: str | None,
        digest_sources: tuple[str, ...],
    ) -> ReleaseAsset | None:
        """The downloadable asset this install fetches (release kinds; None otherwise), carrying the digest
        to verify it against when the user gave one (``sha256``). Raise
        :class:`~kandev_lsp.install.errors.NoInstallerError` when the host cannot install it, and
        :class:`~kandev_lsp.install.errors.InstallError` for a ``sha256`` this kind has no use for."""
        ...

    def identity(self, recipe: Any, host: HostPlatform) -> str:
        """Everything that determines the installed files, as one string (see ``InstallPlan``)."""
        ...

    def packages(self, recipe: Any, asset: ReleaseAsset | None) -> tuple[str, ...]:
        """What a receipt lists as installed."""
        ...

    async def install(self, ctx: InstallContext, options: InstallOptions) -> Staged:
        """Put the server into ``ctx.staging`` (the manager verifies, receipts and switches)."""
        ...


def missing_tools(
    commands: tuple[str, ...], env: TaskEnvironment, workspace: str, probe: FileProbe, what_to_do: str
) -> str | None:
    """The first of ``commands`` the task lacks, said as :func:`~kandev_lsp.install.errors.tool_not_found`
    says it, then ``what_to_do``; None when the one lookup finds them all: a kind's
    :meth:`RecipeInstaller.missing_toolchain`."""
    from kandev_lsp.executables import locate
    from kandev_lsp.install.errors import tool_not_found

    for command in commands:
        found = locate(command, env, workspace, probe)
        if found.path is None:
            return f"{tool_not_found(command, found.reason)}. {what_to_do}"
    return None


__all__ = ["InstallOptions", "RecipeInstaller", "missing_tools"]
