"""Pure decisions about an install: which recipe, which version, and what names it gets in the cache.

Nothing here touches the filesystem or runs anything, so every rule is tested with plain values.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import cast

from kandev_lsp.install.context import Recipe
from kandev_lsp.install.errors import CacheUnavailableError, InstallRequestError, NoInstallerError
from kandev_lsp.install.installers import installer_for
from kandev_lsp.install.kinds import RecipeInstaller
from kandev_lsp.language import LanguageSpec, ReleaseAsset
from kandev_lsp.platform import HostPlatform

# A version becomes a folder name and a command-line argument: keep it to a safe alphabet, never a path.
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")


@dataclass(frozen=True, slots=True)
class InstallPlan:
    """What one install will do, decided before any I/O.

    ``identity`` names everything that determines the installed files (every pinned npm package, the Go
    module, the release asset and its pinned digest; not the mirror it comes from). Two installs with the
    same identity are interchangeable, so an install whose identity is already current is skipped.
    ``directory`` is the folder under ``versions/``: the version plus a short digest of the identity, so
    that changing only a secondary pin (``typescript`` under the same ``typescript-language-server``)
    installs beside the running version instead of over it. ``packages`` is what a receipt lists as
    installed (npm specs, ``module@version``, the asset name).
    """

    language: str
    recipe: Recipe
    version: str
    identity: str
    asset: ReleaseAsset | None = None
    packages: tuple[str, ...] = ()

    @property
    def directory(self) -> str:
        digest = hashlib.sha256(self.identity.encode("utf-8")).hexdigest()[:8]
        return f"{self.version}+{digest}"

    @property
    def installer(self) -> RecipeInstaller:
        """The installer registered for this plan's recipe kind."""
        installer = installer_for(self.recipe)
        assert installer is not None  # plan_install refuses recipes without one
        return installer


def check_version(language: str, version: str, recipe: Recipe, installer: RecipeInstaller) -> None:
    """Reject a requested version that is not an exact version we can use as a folder name, or that the
    recipe's kind cannot use (Go module versions start with ``v``)."""
    if not _VERSION.match(version) or not any(ch.isdigit() for ch in version):
        raise InstallRequestError(
            language,
            f"cannot install {language} version {version!r}: give an exact version such as "
            f"{recipe.version!r} (letters, digits, '.', '-', '+' and '_' only; no ranges or tags like 'latest')",
        )
    installer.check_version(language, version, recipe)


def plan_install(
    spec: LanguageSpec,
    host: HostPlatform,
    *,
    version: str | None = None,
    sha256: str | None = None,
    cache_root: str | None = "",
    digest_sources: tuple[str, ...] = (),
) -> InstallPlan:
    """Decide what installing ``spec`` on ``host`` means; the recipe's kind answers through its installer
    (:mod:`kandev_lsp.install.installers`).

    :param version: a version to install instead of the plugin's pin.
    :param sha256: the digest a release asset must have, given by the user: for a version the plugin
        pins no digest for, from a source that publishes none beside the asset.
    :param cache_root: the task's cache root; ``None`` means the cache is disabled (HOME not absolute).
    :param digest_sources: digest sources the user configured for the language (a mirror, release
        metadata): either one can supply the digest of a release asset the recipe declares none for.
    :raises NoInstallerError: manual-only language (no installer for its recipe), no release asset for
        ``host``, no cache, or a release asset whose digest nobody pins or publishes (the message says how
        to give one: ``--sha256``).
    :raises InstallRequestError: ``version`` is not an exact version, or ``sha256`` given to a kind that
        does not download release assets.
    """
    recipe = spec.install
    installer = installer_for(recipe)
    if installer is None:
        how = spec.manual_instructions or (
            f"no installer handles its {getattr(recipe, 'kind', type(recipe).__name__)!r} recipe; install "
            f"{spec.command} yourself and put it on the task's PATH."
        )
        raise NoInstallerError(
            spec.id, f"{spec.display_name} ({spec.command}) cannot be installed automatically. {how}"
        )
    if cache_root is None:
        raise CacheUnavailableError(
            spec.id,
            f"cannot install {spec.command}: the task's HOME is not an absolute path, so the managed cache "
            "(<HOME>/.kandev/lsp-servers) is disabled. Set HOME to an absolute folder in the task "
            "environment, or install the server yourself and put it on the task's PATH.",
        )
    chosen = cast("Recipe", recipe)  # a kind with a registered installer is an installable recipe
    if version is not None and version != chosen.version:
        check_version(spec.id, version, chosen, installer)
        chosen = installer.with_version(chosen, version)
    asset = installer.target(spec, chosen, host, sha256=sha256, digest_sources=digest_sources)
    return InstallPlan(
        spec.id,
        chosen,
        chosen.version,
        installer.identity(chosen, host),
        asset,
        installer.packages(chosen, asset),
    )
