"""Recipe kinds: one installer object per recipe type, registered here and nowhere else.

A plugin declares *what* to install with a recipe value (:class:`~kandev_lsp.language.NpmRecipe`,
:class:`~kandev_lsp.language.GoRecipe`, :class:`~kandev_lsp.language.ReleaseRecipe`); the core decides
*how* through the :class:`~kandev_lsp.install.kinds.RecipeInstaller` registered for the recipe's type.
Everything that used to ask "which kind is this?" with ``isinstance`` in several files (the default
``installer_available`` answer, version rules, install identities, receipt package lists, which coroutine
runs) asks the installer.

Registration is one way, as tox registers its built-in plugins: this module imports each kind's module and
hands its installer to :func:`register`; a kind's module implements :mod:`kandev_lsp.install.kinds` and never
imports this registry. Adding a kind is one new file holding its installer object (and, if it is new, its
recipe type), plus its line in :data:`_BUILT_IN`. A recipe whose type has no installer
(:class:`~kandev_lsp.language.ManualInstall`) is never installed automatically.

Installer modules stay light at import: the resolver asks :meth:`RecipeInstaller.available` on every
missing server and must not pull in asyncio or httpx; the install coroutines import what they run.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from kandev_lsp.install.golang import GO_INSTALLER
from kandev_lsp.install.kinds import InstallOptions, RecipeInstaller
from kandev_lsp.install.npm import NPM_INSTALLER
from kandev_lsp.install.release import RELEASE_INSTALLER

if TYPE_CHECKING:
    from kandev_lsp.fileprobe import FileProbe
    from kandev_lsp.language import LanguageSpec
    from kandev_lsp.platform import HostPlatform
    from kandev_lsp.taskenv import TaskEnvironment

_registered: dict[type[Any], RecipeInstaller] = {}
_view: Mapping[type[Any], RecipeInstaller] = MappingProxyType(_registered)


def register(installer: RecipeInstaller) -> None:
    """Make ``installer`` the installer of its :attr:`~RecipeInstaller.recipe_type`.

    :raises ValueError: that recipe type has an installer already (two kinds claiming one type would make
        the answer depend on registration order).
    """
    kind = installer.recipe_type
    if kind in _registered and _registered[kind] is not installer:
        raise ValueError(f"recipe type {kind.__name__} already has an installer: {_registered[kind]!r}")
    _registered[kind] = installer


def installers() -> Mapping[type[Any], RecipeInstaller]:
    """Every registered kind: recipe type -> its installer (a read-only view)."""
    return _view


def installer_for(recipe: object) -> RecipeInstaller | None:
    """The installer registered for ``recipe``'s type, or None (a manual recipe, an unknown kind)."""
    return installers().get(type(recipe))


def install_advice(spec: LanguageSpec, host: HostPlatform) -> str | None:
    """Why ``spec`` cannot be installed unattended on ``host`` and what to do, from its kind's installer;
    None when no installer has anything specific to say (the resolver then gives its generic advice)."""
    installer = installer_for(spec.install)
    if installer is None or installer.available(spec.install, host):
        return None
    return installer.advice(spec, spec.install, host)


def missing_toolchain(
    spec: LanguageSpec, env: TaskEnvironment, workspace: str, probe: FileProbe
) -> str | None:
    """What installing ``spec`` would run that the task lacks (its kind's installer says), or None."""
    installer = installer_for(spec.install)
    return None if installer is None else installer.missing_toolchain(spec.install, env, workspace, probe)


#: The kinds kandev-lsp ships, registered at import.
_BUILT_IN: tuple[RecipeInstaller, ...] = (NPM_INSTALLER, GO_INSTALLER, RELEASE_INSTALLER)
for _installer in _BUILT_IN:
    register(_installer)


__all__ = [
    "InstallOptions",
    "RecipeInstaller",
    "install_advice",
    "installer_for",
    "installers",
    "missing_toolchain",
    "register",
]
