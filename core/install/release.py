"""Release recipes: download the host's asset into the staging folder's ``bin/``.

The download itself (streaming, SHA-256 verification, gzip, timeouts) is :mod:`kandev_lsp.install.download`;
this module picks the URL (the plugin's base URL unless the user configured a mirror for the language)
and the release metadata that lists the digest (the plugin's, unless the user configured one),
unpacks archives, and reports byte progress. httpx is imported only when a release is installed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kandev_lsp.errors import KandevLspError
from kandev_lsp.install.cache import remove_tree
from kandev_lsp.install.context import InstallContext, Staged
from kandev_lsp.install.errors import InstallError
from kandev_lsp.language import ReleaseRecipe

if TYPE_CHECKING:
    from kandev_lsp.install.download import DownloadTimeouts

ADVICE = (
    "Check the task's network access and proxy, or point kandev-lsp at a mirror with "
    "lsp_release_base_urls in the settings file, then run `kandev-lsp install {language}` again."
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
    from kandev_lsp.install.download import DownloadError, download_release_asset

    recipe, asset = ctx.plan.recipe, ctx.plan.asset
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
            f"cannot install the {ctx.language} server: {exc} {ADVICE.format(language=ctx.language)}",
        ) from exc
    if packed:
        _unpack(ctx, download_to, name, target)
    return Staged(f"bin/{name}", result.url, sha256=result.sha256)


def _unpack(ctx: InstallContext, archive: Path, name: str, target: Path) -> None:
    from kandev_lsp.install.archives import extract_archive

    recipe, asset = ctx.plan.recipe, ctx.plan.asset
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
