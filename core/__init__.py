"""kandev-lsp: find, install, run and bridge language servers for task hosts.

The names here are the stable Python API. Importing this package is light on purpose (the resolver runs
in short-lived CLI processes): the installers, the stream and the LSP types are imported where used.
"""

from __future__ import annotations

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
