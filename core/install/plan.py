"""Pure decisions about an install: which recipe, which version, and what names it gets in the cache.

Nothing here touches the filesystem or runs anything, so every rule is tested with plain values.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace

from kandev_lsp.install.digests import normalize_sha256
from kandev_lsp.install.errors import InstallError, NoInstallerError
from kandev_lsp.language import GoRecipe, LanguageSpec, ManualInstall, NpmRecipe, ReleaseAsset, ReleaseRecipe
from kandev_lsp.platform import HostPlatform

InstallableRecipe = NpmRecipe | GoRecipe | ReleaseRecipe

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
    installs beside the running version instead of over it.
    """

    language: str
    recipe: InstallableRecipe
    version: str
    identity: str
    asset: ReleaseAsset | None = None

    @property
    def directory(self) -> str:
        digest = hashlib.sha256(self.identity.encode("utf-8")).hexdigest()[:8]
        return f"{self.version}+{digest}"

    @property
    def packages(self) -> tuple[str, ...]:
        """What a receipt lists as installed: npm specs, ``module@version``, or the asset name."""
        recipe = self.recipe
        if isinstance(recipe, NpmRecipe):
            return tuple(package.spec for package in recipe.packages)
        if isinstance(recipe, GoRecipe):
            return (f"{recipe.package}@{recipe.version}",)
        return (self.asset.name,) if self.asset else ()


def check_version(language: str, version: str, recipe: InstallableRecipe) -> None:
    """Reject a requested version that is not an exact version we can use as a folder name."""
    if not _VERSION.match(version) or not any(ch.isdigit() for ch in version):
        raise InstallError(
            language,
            f"cannot install {language} version {version!r}: give an exact version such as "
            f"{recipe.version!r} (letters, digits, '.', '-', '+' and '_' only; no ranges or tags like 'latest')",
        )
    if isinstance(recipe, GoRecipe) and not version.startswith("v"):
        raise InstallError(
            language,
            f"cannot install {language} version {version!r}: Go module versions start with 'v' "
            f"(for example {recipe.version!r}); try 'v{version}'",
        )


def with_version(recipe: InstallableRecipe, version: str) -> InstallableRecipe:
    """The recipe with its primary version replaced (npm: the first package; secondary pins stay)."""
    if isinstance(recipe, NpmRecipe):
        first = replace(recipe.packages[0], version=version)
        return replace(recipe, packages=(first, *recipe.packages[1:]))
    return replace(recipe, version=version)


def identity_of(recipe: InstallableRecipe, asset: ReleaseAsset | None) -> str:
    if isinstance(recipe, NpmRecipe):
        return "npm " + " ".join(package.spec for package in recipe.packages)
    if isinstance(recipe, GoRecipe):
        return f"go {recipe.package}@{recipe.version}"
    assert asset is not None
    pinned = f" sha256:{asset.sha256.lower()}" if asset.sha256 else ""
    return f"release {asset.name}@{recipe.version}{pinned}"


def _digest_known(recipe: ReleaseRecipe, asset: ReleaseAsset, user_sources: tuple[str, ...]) -> bool:
    return recipe.digest_declared(asset) or bool(user_sources)


def plan_install(
    spec: LanguageSpec,
    host: HostPlatform,
    *,
    version: str | None = None,
    sha256: str | None = None,
    cache_root: str | None = "",
    digest_sources: tuple[str, ...] = (),
) -> InstallPlan:
    """Decide what installing ``spec`` on ``host`` means.

    :param version: a version to install instead of the plugin's pin.
    :param sha256: the digest a release asset must have, given by the user: for a version the plugin
        pins no digest for, from a source that publishes none beside the asset.
    :param cache_root: the task's cache root; ``None`` means the cache is disabled (HOME not absolute).
    :param digest_sources: digest sources the user configured for the language (a mirror, release
        metadata): either one can supply the digest of a release asset the recipe declares none for.
    :raises NoInstallerError: manual-only language, no release asset for ``host``, no cache, or a release
        asset whose digest nobody pins or publishes (the message says how to give one: ``--sha256``).
    :raises InstallError: ``version`` is not an exact version.
    """
    recipe = spec.install
    if isinstance(recipe, ManualInstall):
        raise NoInstallerError(
            spec.id,
            f"{spec.display_name} ({spec.command}) cannot be installed automatically. {recipe.instructions}",
        )
    if cache_root is None:
        raise NoInstallerError(
            spec.id,
            f"cannot install {spec.command}: the task's HOME is not an absolute path, so the managed cache "
            "(<HOME>/.kandev/lsp-servers) is disabled. Set HOME to an absolute folder in the task "
            "environment, or install the server yourself and put it on the task's PATH.",
        )
    if version is not None and version != recipe.version:
        check_version(spec.id, version, recipe)
        recipe = with_version(recipe, version)
    asset: ReleaseAsset | None = None
    if isinstance(recipe, ReleaseRecipe):
        asset = recipe.asset_for(host)
        if asset is None:
            targets = ", ".join(sorted(recipe.assets)) or "none"
            raise NoInstallerError(
                spec.id,
                f"{spec.display_name} publishes no {spec.command} release for {host} (it has: {targets}). "
                f"Install {spec.command} yourself and put it on the task's PATH.",
            )
    # The identity is the plugin's: a digest the user supplies verifies the same asset, it does not make
    # another install (so `list` and `doctor` still see the plugin's pin as matched).
    identity = identity_of(recipe, asset)
    if sha256 is not None:
        if asset is None:
            raise InstallError(
                spec.id,
                f"a SHA-256 digest only applies to release downloads; {spec.id} installs with "
                f"{recipe.kind}, which verifies its own packages",
            )
        try:
            asset = replace(asset, sha256=normalize_sha256(sha256))
        except ValueError as exc:
            raise InstallError(spec.id, f"cannot use the SHA-256 digest given: {exc}") from None
    elif (
        isinstance(recipe, ReleaseRecipe)
        and asset is not None
        and not _digest_known(recipe, asset, digest_sources)
    ):
        raise NoInstallerError(
            spec.id,
            f"cannot install {spec.command} unattended: no SHA-256 digest is pinned for {asset.name} and "
            "its release origin publishes none, so the download could not be verified. Get the digest "
            f"from a source you trust and run `kandev-lsp install {spec.id} --sha256 HEX`, or configure a "
            "mirror (lsp_release_base_urls) that publishes <asset>.sha256 files.",
        )
    return InstallPlan(spec.id, recipe, recipe.version, identity, asset)
