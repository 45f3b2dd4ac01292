"""Recipe kinds: one installer object per recipe type, registered here and nowhere else.

A plugin declares *what* to install with a recipe value (:class:`~kandev_lsp.language.NpmRecipe`,
:class:`~kandev_lsp.language.GoRecipe`, :class:`~kandev_lsp.language.ReleaseRecipe`); the core decides
*how* through the :class:`RecipeInstaller` registered for the recipe's type. Everything that used to ask
"which kind is this?" with ``isinstance`` in several files (the default ``installer_available`` answer,
version rules, install identities, receipt package lists, which coroutine runs) now asks the installer.

Adding a kind is one new file holding its installer object (and, if it is new, its recipe type), plus its
line in :func:`installers`. A recipe whose type has no installer (:class:`~kandev_lsp.language.ManualInstall`)
is never installed automatically.

Installer modules stay light at import: the resolver asks :meth:`RecipeInstaller.available` on every
missing server and must not pull in asyncio or httpx; the install coroutines import what they run.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from kandev_lsp._values import dataclass, field

if TYPE_CHECKING:
    from kandev_lsp.install.context import InstallContext, Staged
    from kandev_lsp.install.download import DownloadTimeouts
    from kandev_lsp.language import LanguageSpec, ReleaseAsset
    from kandev_lsp.platform import HostPlatform


class Recipe(Protocol):
    """What every installable recipe has: its kind's name and the version it installs."""

    @property
    def kind(self) -> str: ...

    @property
    def version(self) -> str: ...


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
    """How the core installs one kind of recipe. Every method but :meth:`install` is pure."""

    #: The recipe type this installer handles (the registry's key).
    recipe_type: type[Any]

    def available(self, recipe: Any, host: HostPlatform) -> bool:
        """Whether ``host`` can install ``recipe`` unattended (the core's default ``installer_available``);
        decided without I/O."""
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


@functools.cache
def installers() -> Mapping[type[Any], RecipeInstaller]:
    """The one place recipe kinds are registered: recipe type -> its installer.

    Built on first use (not at import), so an installer module may import this one without a cycle.
    """
    from kandev_lsp.install.golang import GO_INSTALLER
    from kandev_lsp.install.npm import NPM_INSTALLER
    from kandev_lsp.install.release import RELEASE_INSTALLER

    registered: tuple[RecipeInstaller, ...] = (NPM_INSTALLER, GO_INSTALLER, RELEASE_INSTALLER)
    return MappingProxyType({installer.recipe_type: installer for installer in registered})


def installer_for(recipe: object) -> RecipeInstaller | None:
    """The installer registered for ``recipe``'s type, or None (a manual recipe, an unknown kind)."""
    return installers().get(type(recipe))


def install_advice(spec: LanguageSpec, host: HostPlatform) -> str | None:
    """Why ``spec`` cannot be installed unattended on ``host`` and what to do, from its kind's installer;
    None when no installer has anything specific to say (the resolver then gives its generic advice)."""
    installer = installer_for(spec.install)
    if installer is None or installer.available(spec.install, host):
        return None
    return installer.advice(spec, spec.install, host)


__all__ = [
    "InstallOptions",
    "Recipe",
    "RecipeInstaller",
    "install_advice",
    "installer_for",
    "installers",
]
