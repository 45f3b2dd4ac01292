"""The contract between the kandev-lsp core and every language plugin.

Every hook is prefixed ``kandev_lsp_``. A plugin implements any subset; an implementation may accept
fewer parameters than its spec, so specs can grow without breaking plugins. Hooks are called by the
core's :class:`~kandev_lsp.host.PluginHost`, one implementation at a time, so a plugin that raises is
reported by name and skipped instead of failing the call for every language. Wrappers are not supported.

Call order is pluggy's: later-registered plugins first, ``tryfirst``/``trylast`` respected. The core's
default implementations are registered ``trylast`` so any plugin can override them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kandev_lsp.markers import hookspec

if TYPE_CHECKING:
    from kandev_lsp.configuration import ConfigurationAnswer
    from kandev_lsp.discovery import Candidate
    from kandev_lsp.language import LanguageSpec, Readiness
    from kandev_lsp.platform import HostPlatform
    from kandev_lsp.taskenv import Task


@hookspec
def kandev_lsp_languages() -> Iterable[LanguageSpec] | None:
    """Declare the languages this plugin provides.

    Called once per plugin when the host loads it. Every implementation's result is collected; a
    language id declared by two plugins is an error reported against the later plugin, which is not
    loaded.

    :return: the plugin's :class:`~kandev_lsp.language.LanguageSpec` values.
    """


@hookspec
def kandev_lsp_discover(language: LanguageSpec, task: Task) -> Iterable[Candidate] | None:
    """Propose executables that may serve ``language`` for ``task``, best first.

    Called by the resolver on every resolution. Results of all implementations are chained in call
    order and probed lazily: the first candidate that exists, is executable, lies outside the task's
    workspace and passes :func:`kandev_lsp_check_candidate` wins (first result wins). The core's default
    discovery (task PATH, toolchain folders, the managed cache) runs last, so a plugin can put its own
    candidates ahead of it. Return None (or nothing) to add no candidates. Do no I/O here beyond
    reading ``task``: the core probes the files.

    :param language: the language being resolved.
    :param task: the task's workspace and environment.
    """


@hookspec
def kandev_lsp_check_candidate(language: LanguageSpec, path: str, task: Task) -> str | None:
    """Reject a candidate that exists but cannot serve, e.g. a rustup proxy with no component.

    Called by the resolver for each candidate that exists and is executable, before it is accepted.
    Keep it cheap and run a process only when a cheap test shows one is needed. Any implementation
    returning a non-None reason rejects the candidate; the reason appears in ``--explain``.

    :param language: the language being resolved.
    :param path: absolute path of the candidate executable.
    :param task: the task, whose environment any check must use.
    :return: None to accept, or a short human reason to reject.
    """


@hookspec(firstresult=True)
def kandev_lsp_installer_available(language: LanguageSpec, host: HostPlatform) -> bool | None:
    """Whether this host has an installer for ``language`` (platform gating).

    Called by the resolver when no server was found, and by ``doctor``. First non-None result wins; the
    core's default (trylast) answers from the language's install recipe: npm and go recipes install
    anywhere, a release recipe only where it has an asset for the host whose SHA-256 is pinned or published
    where the recipe declares (so "installable" never means "fails for want of a digest"), a manual
    recipe never. A digest the user gives (``install --sha256``) lifts the last condition for that install.

    :param language: the language in question.
    :param host: the platform the server would run on.
    """


@hookspec
def kandev_lsp_default_settings(language: LanguageSpec) -> Mapping[str, Any] | None:
    """Default per-language settings (``workspace/configuration`` values) for ``language``.

    Called when a session's settings are computed. All results are merged shallowly in reverse call
    order (so the earliest-called, highest-priority plugin wins a key); the user's
    ``lsp_server_configs[language]`` is then shallow-merged over the result.

    :param language: the language whose defaults are wanted.
    """


@hookspec(firstresult=True)
def kandev_lsp_initialization_options(
    language: LanguageSpec, settings: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """``initializationOptions`` to send in ``initialize`` for ``language``.

    Called once per server start by the runner. First non-None result wins; no result sends none.

    :param language: the language being started.
    :param settings: the merged per-language settings.
    """


@hookspec(firstresult=True)
def kandev_lsp_configuration_item(
    language: LanguageSpec, settings: Mapping[str, Any], section: str | None, scope_uri: str | None
) -> ConfigurationAnswer | None:
    """Answer one ``workspace/configuration`` item for a server of ``language``.

    Called for every item of every ``workspace/configuration`` request the server sends. First
    non-None result wins. Wrap the answer in :class:`~kandev_lsp.configuration.ConfigurationAnswer`
    (JSON ``null`` is a valid answer). The core's default (trylast): ``section == language`` -> the whole
    settings object; otherwise the ``<language>.`` prefix is stripped and the rest looked up as a dotted
    path, null when missing; no section -> the whole object.

    :param language: the server's language.
    :param settings: the merged per-language settings, as they are now (they update live).
    :param section: the item's ``section``, or None.
    :param scope_uri: the item's ``scopeUri``, or None.
    """


@hookspec
def kandev_lsp_suppressed_providers(
    language: LanguageSpec, capabilities: Mapping[str, Any]
) -> Iterable[str] | None:
    """Client built-in providers to suppress for documents owned by a live server of ``language``.

    Called by the stream/editor integration after ``initialize`` returns the server's capabilities.
    Results of all implementations are united. Provider names are LSP method suffixes:
    ``hover``, ``completion``, ``signatureHelp``, ``definition``, ``references``.

    :param language: the server's language.
    :param capabilities: the ``capabilities`` object from the server's ``InitializeResult``.
    """


@hookspec(firstresult=True)
def kandev_lsp_readiness(language: LanguageSpec) -> Readiness | None:
    """When a server of ``language`` gives complete answers (overrides ``language.readiness``).

    Called by whoever waits for readiness before answering (the agent tools, the broker's displays),
    once per server start. First non-None result wins; with none, the language's declared
    :attr:`~kandev_lsp.language.LanguageSpec.readiness` applies.

    :param language: the server's language.
    """


@hookspec
def kandev_lsp_client_capabilities(language: LanguageSpec) -> Mapping[str, Any] | None:
    """Client capabilities to add to ``initialize`` for a server of ``language``.

    Called once per server start by whoever builds the ``initialize`` request. The language's declared
    :attr:`~kandev_lsp.language.LanguageSpec.client_capabilities` come first, then every implementation's
    result is merged in depth, in reverse call order (so the earliest-called, highest-priority plugin
    wins a conflicting value). Example: rust-analyzer needs ``{"experimental":
    {"serverStatusNotification": true}}`` to report readiness.

    :param language: the server's language.
    """


@hookspec(firstresult=True)
def kandev_lsp_language_id(language: LanguageSpec, path: str) -> str | None:
    """The LSP ``languageId`` a file opens with on a server of ``language``.

    Called whenever a document is opened by the core (the agent tools). First non-None result wins; with
    none, :meth:`~kandev_lsp.language.LanguageSpec.language_id_for` decides from the declared
    ``document_language_ids`` and ``file_extensions``.

    :param language: the server's language.
    :param path: the file's path (only its name matters to the default).
    """
