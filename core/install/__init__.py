"""Install language servers into the managed cache of a task's HOME, and list or remove them.

The public API is :class:`InstallManager` (``install``, ``installed``, ``uninstall``, ``aclose``), its
values (:class:`InstallReceipt`, :class:`InstalledServer`, :class:`InstallProgress`) and errors. The
cache layout and the install sequence are described in :mod:`kandev_lsp.install.cache` and
:mod:`kandev_lsp.install.manager`. Release downloads (httpx) are imported only when a release installs.
"""

from __future__ import annotations

from kandev_lsp.install.errors import (
    InstallCancelled,
    InstallError,
    NoInstallerError,
    ToolchainMissingError,
    VerificationError,
)
from kandev_lsp.install.manager import InstalledServer, InstallManager
from kandev_lsp.install.plan import InstallPlan, plan_install
from kandev_lsp.install.progress import InstallProgress, Phase, ProgressCallback
from kandev_lsp.install.receipts import InstallReceipt

__all__ = [
    "InstallCancelled",
    "InstallError",
    "InstallManager",
    "InstallPlan",
    "InstallProgress",
    "InstallReceipt",
    "InstalledServer",
    "NoInstallerError",
    "Phase",
    "ProgressCallback",
    "ToolchainMissingError",
    "VerificationError",
    "plan_install",
]
