"""kandev-lsp: find, install, run and bridge language servers for task hosts.

The names here are the stable Python API. Importing this package is light on purpose (the resolver runs
in short-lived CLI processes, and ``kandev-lsp code`` talks to its warm daemon before it imports any of
them): each name is imported from its module at first use (PEP 562), so ``import kandev_lsp.cli`` or
``kandev_lsp.codedaemon`` pays for none of the resolver, the plugin host or pluggy, and the package does
not depend on what the resolver happens to import. :class:`PluginHost` (a long-lived agent keeps one
``PluginHost.load()``) is one of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kandev_lsp.configuration import ConfigurationAnswer
    from kandev_lsp.discovery import Candidate
    from kandev_lsp.errors import KandevLspError, SettingsError, UnknownLanguageError
    from kandev_lsp.host import PluginHost
    from kandev_lsp.language import (
        GoRecipe,
        InstallRecipe,
        LanguageSpec,
        ManualInstall,
        NpmPackage,
        NpmRecipe,
        Readiness,
        ReadinessKind,
        ReleaseAsset,
        ReleaseRecipe,
    )
    from kandev_lsp.markers import hookimpl
    from kandev_lsp.platform import HostPlatform
    from kandev_lsp.resolver import MissingReason, Resolution, Resolver, resolve
    from kandev_lsp.taskenv import Task, TaskEnvironment

#: Where each public name lives (imported from there at first use).
_HOMES: dict[str, str] = {
    "ConfigurationAnswer": "kandev_lsp.configuration",
    "Candidate": "kandev_lsp.discovery",
    **dict.fromkeys(("KandevLspError", "SettingsError", "UnknownLanguageError"), "kandev_lsp.errors"),
    "PluginHost": "kandev_lsp.host",
    **dict.fromkeys(
        (
            "GoRecipe",
            "InstallRecipe",
            "LanguageSpec",
            "ManualInstall",
            "NpmPackage",
            "NpmRecipe",
            "Readiness",
            "ReadinessKind",
            "ReleaseAsset",
            "ReleaseRecipe",
        ),
        "kandev_lsp.language",
    ),
    "hookimpl": "kandev_lsp.markers",
    "HostPlatform": "kandev_lsp.platform",
    **dict.fromkeys(("MissingReason", "Resolution", "Resolver", "resolve"), "kandev_lsp.resolver"),
    **dict.fromkeys(("Task", "TaskEnvironment"), "kandev_lsp.taskenv"),
}

__all__ = [
    "Candidate",
    "ConfigurationAnswer",
    "GoRecipe",
    "HostPlatform",
    "InstallRecipe",
    "KandevLspError",
    "LanguageSpec",
    "ManualInstall",
    "MissingReason",
    "NpmPackage",
    "NpmRecipe",
    "PluginHost",
    "Readiness",
    "ReadinessKind",
    "ReleaseAsset",
    "ReleaseRecipe",
    "Resolution",
    "Resolver",
    "SettingsError",
    "Task",
    "TaskEnvironment",
    "UnknownLanguageError",
    "hookimpl",
    "resolve",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:  # a submodule (``from kandev_lsp import codes``) is then imported as usual
        raise AttributeError(f"module 'kandev_lsp' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
