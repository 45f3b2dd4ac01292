"""The core's own hook implementations: the defaults every plugin can override.

Registered ``trylast`` through the same :meth:`PluginHost.register` path as any plugin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kandev_lsp.configuration import ConfigurationAnswer, lookup_section
from kandev_lsp.discovery import Candidate, default_candidates
from kandev_lsp.language import LanguageSpec
from kandev_lsp.markers import hookimpl
from kandev_lsp.platform import HostPlatform
from kandev_lsp.probe import PROXY_CHECK_TIMEOUT, proxy_launcher_of, run_briefly
from kandev_lsp.taskenv import Task


@hookimpl(trylast=True)
def kandev_lsp_discover(language: LanguageSpec, task: Task) -> Iterable[Candidate]:
    return default_candidates(language, task.env)


@hookimpl(trylast=True)
def kandev_lsp_installer_available(language: LanguageSpec, host: HostPlatform) -> bool:
    from kandev_lsp.install.installers import installer_for

    installer = installer_for(language.install)  # none for a manual recipe
    return installer is not None and installer.available(language.install, host)


@hookimpl(trylast=True)
def kandev_lsp_configuration_item(
    language: LanguageSpec, settings: Mapping[str, Any], section: str | None
) -> ConfigurationAnswer:
    return ConfigurationAnswer(lookup_section(language.id, settings, section))


@hookimpl(trylast=True)
def kandev_lsp_check_candidate(language: LanguageSpec, path: str, task: Task) -> str | None:
    """Run a candidate only when it is a known proxy launcher; every other file is accepted as is."""
    if not language.proxy_launchers:
        return None
    launcher = proxy_launcher_of(path, language.proxy_launchers, task.host)
    if launcher is None:
        return None
    outcome = run_briefly([path, *language.version_args], task.env.to_dict(), timeout=PROXY_CHECK_TIMEOUT)
    if outcome.ok:
        return None
    return f"{launcher} proxy cannot run {language.command}: {outcome.summary}"
