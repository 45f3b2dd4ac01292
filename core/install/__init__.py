"""Install language servers into the managed cache of a task's HOME, and list or remove them.

The public API is :class:`InstallManager` (``install``, ``installed``, ``uninstall``, ``aclose``), its
values (:class:`InstallReceipt`, :class:`InstalledServer`, :class:`InstallProgress`) and errors. The
cache layout and the install sequence are described in :mod:`kandev_lsp.install.cache` and
:mod:`kandev_lsp.install.manager`; recipe kinds and their installers in
:mod:`kandev_lsp.install.installers`.

The names below are imported on first use (PEP 562), so that the resolver can ask a recipe kind's
installer whether a host can install it (:mod:`kandev_lsp.install.installers`) without importing the
manager, asyncio, file locks or psutil. Release downloads (httpx) are imported only when a release
installs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {
    "InstallCancelled": "errors",
    "InstallError": "errors",
    "NoInstallerError": "errors",
    "ToolchainMissingError": "errors",
    "VerificationError": "errors",
    "InstallManager": "manager",
    "InstalledServer": "manager",
    "InstallPlan": "plan",
    "plan_install": "plan",
    "InstallProgress": "progress",
    "Phase": "progress",
    "ProgressCallback": "progress",
    "InstallReceipt": "receipts",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


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
