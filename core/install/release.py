"""Release recipes: download the host's asset into the staging folder's ``bin/``.

The download itself (streaming, SHA-256 verification, gzip, timeouts) is :mod:`kandev_lsp.install.download`;
this module picks the URL (the plugin's base URL unless the user configured a mirror for the language)
and the release metadata that lists the digest (the plugin's, unless the user configured one),
unpacks archives, and reports byte progress. httpx is imported only when a release is installed.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kandev_lsp.errors import KandevLspError
from kandev_lsp.install.errors import InstallError, InstallRequestError, NoInstallerError
from kandev_lsp.language import ReleaseAsset, ReleaseRecipe

# The installer's helpers are imported where they run: the resolver imports this module to ask
# ReleaseInstaller.available() and must stay light.
if TYPE_CHECKING:
    from kandev_lsp.fileprobe import FileProbe
    from kandev_lsp.install.context import InstallContext, Staged
    from kandev_lsp.install.download import DownloadTimeouts
    from kandev_lsp.install.kinds import InstallOptions
    from kandev_lsp.language import LanguageSpec
    from kandev_lsp.platform import HostPlatform
    from kandev_lsp.taskenv import TaskEnvironment

ADVICE = (
    "Check the task's network access and proxy, or point kandev-lsp at a mirror with "
    "lsp_release_base_urls in the settings file, then run `{command}` again."
)


def executable_name(bin_name: str, windows: bool) -> str:
    """The file name the executable gets in ``bin/`` (``.exe`` added on Windows when it has no extension)."""
    return f"{bin_name}.exe" if windows and "." not in bin_name else bin_name


async def install_release(
    ctx: InstallContext,
    *,
    base_url: str | None,
    timeouts: DownloadTimeouts,
    metadata_url: str | None = None,
) -> Staged:
    from kandev_lsp.install.context import Staged
    from kandev_lsp.install.download import DownloadError, download_release_asset

    recipe, asset = ctx.recipe, ctx.asset
    assert isinstance(recipe, ReleaseRecipe) and asset is not None
    name = executable_name(recipe.bin, ctx.task.host.is_windows)
    target = ctx.staging / "bin" / name
    packed = asset.compression in ("zip", "tar.gz")
    download_to = ctx.staging / "download" / asset.name if packed else target
    ctx.fanout.phase("downloading", f"downloading {asset.name} ({recipe.version})")

    def report(done: int, total: int | None) -> None:
        ctx.fanout.bytes(done, total, asset.name)

    try:
        result = await download_release_asset(
            recipe,
            asset,
            download_to,
            base_url=base_url,
            metadata_url=metadata_url,
            timeouts=timeouts,
            progress=report,
        )
    except DownloadError as exc:
        raise InstallError(
            ctx.language,
            f"cannot install the {ctx.language} server: {exc} {ADVICE.format(command=ctx.retry_command)}",
        ) from exc
    if packed:
        _unpack(ctx, download_to, name, target)
    return Staged(f"bin/{name}", result.url, sha256=result.sha256)


def _unpack(ctx: InstallContext, archive: Path, name: str, target: Path) -> None:
    import shutil

    from kandev_lsp.install.archives import extract_archive
    from kandev_lsp.install.cache import remove_tree

    recipe, asset = ctx.recipe, ctx.asset
    assert isinstance(recipe, ReleaseRecipe) and asset is not None
    ctx.fanout.phase("installing", f"unpacking {asset.name}")
    unpacked = ctx.staging / "unpacked"
    kind: Literal["zip", "tar.gz"] = "zip" if asset.compression == "zip" else "tar.gz"
    try:
        extract_archive(archive, kind, unpacked)
    except (OSError, ValueError, KandevLspError) as exc:
        raise InstallError(ctx.language, f"cannot unpack {asset.name}: {exc}") from exc
    member = unpacked.joinpath(*(asset.member or name).split("/"))
    if not member.is_file():
        raise InstallError(
            ctx.language,
            f"{asset.name} has no {asset.member or name}; the plugin's release recipe names the wrong "
            "member. Report this to the plugin's authors.",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(member, target)
    os.chmod(target, 0o755)
    remove_tree(unpacked)
    remove_tree(ctx.staging / "download")


class ReleaseInstaller:
    """The ``release`` kind: a per-platform asset downloaded, verified against its SHA-256 and unpacked
    (registered in :mod:`kandev_lsp.install.installers`)."""

    recipe_type = ReleaseRecipe

    def available(self, recipe: ReleaseRecipe, host: HostPlatform) -> bool:
        """An asset for ``host`` whose digest is pinned or published where the recipe declares: an
        install that could only fail for want of a digest is not "installable" (issue 7 item 23)."""
        asset = recipe.asset_for(host)
        return asset is not None and recipe.digest_declared(asset)

    def missing_toolchain(
        self, recipe: ReleaseRecipe, env: TaskEnvironment, workspace: str, probe: FileProbe
    ) -> str | None:
        return None  # downloaded by kandev-lsp itself

    def advice(self, spec: LanguageSpec, recipe: ReleaseRecipe, host: HostPlatform) -> str | None:
        asset = recipe.asset_for(host)
        if asset is None:
            targets = ", ".join(sorted(recipe.assets)) or "none"
            return (
                f"{spec.display_name} publishes no {spec.command} release for {host} (it has: {targets}); "
                f"install `{spec.command}` yourself and put it on the task's PATH"
            )
        return (
            f"no SHA-256 digest is pinned or published for {asset.name}, so it is not installed unattended; "
            f"run `kandev-lsp install {spec.id} --sha256 HEX` with the digest from a source you trust, or "
            "configure a mirror (lsp_release_base_urls) that publishes <asset>.sha256 files"
        )

    def check_version(self, language: str, version: str, recipe: ReleaseRecipe) -> None:
        return None

    def with_version(self, recipe: ReleaseRecipe, version: str) -> ReleaseRecipe:
        return replace(recipe, version=version)

    def target(
        self,
        spec: LanguageSpec,
        recipe: ReleaseRecipe,
        host: HostPlatform,
        *,
        sha256: str | None,
        digest_sources: tuple[str, ...],
    ) -> ReleaseAsset | None:
        """The host's asset; with the user's digest when given. Refuses, before any request, an asset
        whose digest nobody pins or publishes and for which the user configured no source either."""
        asset = recipe.asset_for(host)
        if asset is None:
            targets = ", ".join(sorted(recipe.assets)) or "none"
            raise NoInstallerError(
                spec.id,
                f"{spec.display_name} publishes no {spec.command} release for {host} (it has: {targets}). "
                f"Install {spec.command} yourself and put it on the task's PATH.",
            )
        if sha256 is not None:
            from kandev_lsp.install.digests import normalize_sha256

            try:
                return replace(asset, sha256=normalize_sha256(sha256))
            except ValueError as exc:
                raise InstallRequestError(spec.id, f"cannot use the SHA-256 digest given: {exc}") from None
        if not recipe.digest_declared(asset) and not digest_sources:
            raise NoInstallerError(
                spec.id,
                f"cannot install {spec.command} unattended: no SHA-256 digest is pinned for {asset.name} and "
                "its release origin publishes none, so the download could not be verified. Get the digest "
                f"from a source you trust and run `kandev-lsp install {spec.id} --sha256 HEX`, or configure a "
                "mirror (lsp_release_base_urls) that publishes <asset>.sha256 files.",
            )
        return asset

    def identity(self, recipe: ReleaseRecipe, host: HostPlatform) -> str:
        """The asset and the plugin's pinned digest: a digest the user gives verifies the same asset, it
        does not make another install (so ``list`` and ``doctor`` still see the plugin's pin as matched)."""
        asset = recipe.asset_for(host)
        name = asset.name if asset is not None else "(no asset for this host)"
        pinned = f" sha256:{asset.sha256.lower()}" if asset is not None and asset.sha256 else ""
        return f"release {name}@{recipe.version}{pinned}"

    def packages(self, recipe: ReleaseRecipe, asset: ReleaseAsset | None) -> tuple[str, ...]:
        return (asset.name,) if asset is not None else ()

    async def install(self, ctx: InstallContext, options: InstallOptions) -> Staged:
        from kandev_lsp.install.download import DownloadTimeouts

        return await install_release(
            ctx,
            base_url=options.release_base_urls.get(ctx.language),
            metadata_url=options.release_metadata_urls.get(ctx.language),
            timeouts=options.download_timeouts or DownloadTimeouts(),
        )


RELEASE_INSTALLER = ReleaseInstaller()
