"""The managed cache of one language: its folders, and the few atomic steps that change them.

Layout under ``<task HOME>/.kandev/lsp-servers/<language>/``::

    .lock                       file lock shared by every process using this HOME (never deleted)
    current -> versions/<dir>   relative symlink to the version in use (what the resolver finds)
    versions/<dir>/             one installed version: receipt.json plus node_modules/.bin/<bin> (npm)
                                or bin/<bin> (go, release)
    versions/.staging-*/        an install in progress (or left by a process that died)
    versions/.retired-*/        a version being deleted

Every change is one rename: a finished staging folder is renamed to ``versions/<dir>``, and ``current``
is replaced by a new symlink with ``os.replace``. A process killed at any point therefore leaves either
the old or the new version current, never a half-written one; what it leaves behind starts with a dot
and is removed by the next install, under the lock (before it, a staging folder may belong to a live
install in another process).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kandev_lsp.install.errors import InstallError
from kandev_lsp.install.receipts import InstallReceipt, read_receipt

LOCK_NAME = ".lock"
CURRENT_NAME = "current"
VERSIONS_NAME = "versions"
STAGING_PREFIX = ".staging-"
RETIRED_PREFIX = ".retired-"
LINK_PREFIX = ".current-"


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Delete a folder that may hold read-only files (npm packages, Go binaries): make them writable."""

    def make_writable_and_retry(function: Callable[..., Any], name: str, *_: Any) -> None:
        with contextlib.suppress(OSError):
            parent = os.path.dirname(name)
            os.chmod(parent, os.stat(parent).st_mode | stat.S_IWUSR | stat.S_IXUSR)
            if not os.path.islink(name):
                os.chmod(name, os.stat(name).st_mode | stat.S_IWUSR)
        with contextlib.suppress(FileNotFoundError):
            function(name)

    if not os.path.lexists(path):
        return
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
    elif sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=make_writable_and_retry)
    else:
        shutil.rmtree(path, onerror=make_writable_and_retry)


class ServerCache:
    """The cache folder of one language under one cache root."""

    def __init__(self, root: str | os.PathLike[str], language: str) -> None:
        self.root = Path(root)
        self.language = language
        self.folder = self.root / language
        self.versions = self.folder / VERSIONS_NAME
        self.current = self.folder / CURRENT_NAME
        self.lock_path = self.folder / LOCK_NAME

    def prepare(self) -> None:
        """Create the language's folders (the lock file lives in them), refusing first when one of them is
        a link (:meth:`check_own_folders`), so nothing is created through it either."""
        self.check_own_folders()
        self.versions.mkdir(parents=True, exist_ok=True)

    def check_own_folders(self) -> None:
        """Refuse to change anything when the language's folder or its ``versions/`` is a symbolic link.

        kandev-lsp creates both as plain folders, and every change it makes deletes or renames entries
        in them: through a link, ``uninstall`` (or an install's clean-up and pruning) would delete the
        folders of whatever the link leads to, outside the cache. A checkout that holds the cache (a HOME
        inside the workspace, where ``uninstall`` still works) can ship such a link. Links above (HOME,
        ``~/.kandev``, ``lsp-servers``) are the user's own layout and are followed.

        :raises InstallError: one of them is a link (saying where it leads and what to do).
        """
        for folder in (self.folder, self.versions):
            if os.path.islink(folder):
                raise InstallError(
                    self.language,
                    f"{folder} is a symbolic link (to {os.readlink(folder)}), not the folder kandev-lsp "
                    "created, so nothing was changed: kandev-lsp never deletes or renames through a link "
                    "out of its managed cache. Remove the link (not what it points to), then try again.",
                )

    # Reading ----------------------------------------------------------------------------------------
    def current_name(self) -> str | None:
        """The version folder ``current`` points to, or None when there is none (or it dangles)."""
        try:
            target = os.readlink(self.current)
        except OSError:
            return None
        parts = Path(target).parts
        if len(parts) != 2 or parts[0] != VERSIONS_NAME or parts[1].startswith("."):
            return None
        return parts[1] if (self.versions / parts[1]).is_dir() else None

    def receipt(self, name: str) -> InstallReceipt | None:
        return read_receipt(self.versions / name)

    def current_receipt(self) -> InstallReceipt | None:
        name = self.current_name()
        return self.receipt(name) if name else None

    def version_names(self) -> list[str]:
        """Installed version folders (staging and retired folders excluded)."""
        try:
            entries = sorted(os.listdir(self.versions))
        except OSError:
            return []
        return [name for name in entries if not name.startswith(".") and (self.versions / name).is_dir()]

    def leftovers(self) -> list[Path]:
        """Staging and retired folders and temporary links: what a dead install left behind."""
        found: list[Path] = []
        for folder, prefixes in (
            (self.versions, (STAGING_PREFIX, RETIRED_PREFIX)),
            (self.folder, (LINK_PREFIX,)),
        ):
            with contextlib.suppress(OSError):
                found += [folder / name for name in os.listdir(folder) if name.startswith(prefixes)]
        return sorted(found)

    # Changing (call these only while holding the language's lock) ----------------------------------
    def clean_leftovers(self) -> None:
        self.check_own_folders()
        for path in self.leftovers():
            remove_tree(path)

    def new_staging(self, suffix: str = "") -> Path:
        """A fresh folder in ``versions/`` whose name marks it as a leftover if its install dies."""
        return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, suffix=suffix, dir=self.versions))

    def retire(self, path: Path) -> None:
        """Delete ``path`` by first renaming it out of the way, so a half-deleted folder is never mistaken
        for an installed version."""
        if not os.path.lexists(path):
            return
        retired = self.versions / f"{RETIRED_PREFIX}{uuid.uuid4().hex[:12]}"
        os.rename(path, retired)
        remove_tree(retired)

    def publish(self, staging: Path, name: str) -> Path:
        """Rename a finished staging folder to ``versions/<name>`` (replacing a broken folder of that name)."""
        target = self.versions / name
        self.retire(target)
        os.rename(staging, target)
        return target

    def switch(self, name: str) -> None:
        """Point ``current`` at ``versions/<name>`` atomically: a new symlink renamed over the old one."""
        link = self.folder / f"{LINK_PREFIX}{uuid.uuid4().hex[:12]}"
        try:
            os.symlink(os.path.join(VERSIONS_NAME, name), link, target_is_directory=True)
        except OSError as exc:
            if sys.platform != "win32":
                raise
            raise InstallError(
                self.language,
                f"cannot create the symbolic link {self.current} ({exc.strerror or exc}): Windows allows it "
                "with Developer Mode on or the 'Create symbolic links' privilege. Enable one, then install again.",
            ) from exc
        try:
            os.replace(link, self.current)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(link)
            raise

    def prune(self, keep: set[str]) -> None:
        """Delete installed versions other than ``keep`` (the current one and the one it replaced, which
        servers started before the switch may still be loading files from)."""
        self.check_own_folders()
        for name in self.version_names():
            if name not in keep:
                self.retire(self.versions / name)

    def remove_all(self) -> bool:
        """Delete every version and ``current`` (the lock file stays). Returns whether anything was there."""
        self.check_own_folders()
        existed = os.path.lexists(self.current) or bool(self.version_names())
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.current)
        for name in self.version_names():
            self.retire(self.versions / name)
        self.clean_leftovers()
        with contextlib.suppress(OSError):
            self.versions.rmdir()
        return existed


def cached_languages(root: str | os.PathLike[str]) -> list[str]:
    """Languages with a kandev-lsp folder (``versions/`` or ``current``) in the cache root, sorted.

    Other entries (the flat ``node_modules`` of earlier task hosts) are not ours and are left alone.
    """
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return []
    return [
        name
        for name in entries
        if not name.startswith(".")
        and (
            os.path.isdir(os.path.join(root, name, VERSIONS_NAME))
            or os.path.lexists(os.path.join(root, name, CURRENT_NAME))
        )
    ]
