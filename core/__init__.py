"""kandev-lsp: find, install, run and bridge language servers for task hosts.

The names here are the stable Python API. Importing this package is light on purpose (the resolver runs
in short-lived CLI processes): the installers, the stream and the LSP types are imported where used.
:class:`PluginHost` (a long-lived agent keeps one ``PluginHost.load()``) is imported on first use
(PEP 562), so the package does not depend on what the resolver happens to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kandev_lsp.configuration import ConfigurationAnswer
from kandev_lsp.discovery import Candidate
from kandev_lsp.errors import KandevLspError, SettingsError, UnknownLanguageError
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

if TYPE_CHECKING:
    from kandev_lsp.host import PluginHost

#: Names imported on first use: name -> module.
_LAZY = {"PluginHost": "kandev_lsp.host"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


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
