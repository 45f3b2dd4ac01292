"""The user's settings file and the per-language settings servers see.

The file is JSON (default: ``<platformdirs user config dir>/kandev-lsp/settings.json``; overridden by
``--settings`` or ``KANDEV_LSP_SETTINGS``). A missing default file means defaults. A file named on purpose
(``--settings``, ``KANDEV_LSP_SETTINGS``, a path given to :func:`load_settings`) that does not exist is an
error for a command that reads it once (a typo would otherwise pass for settings that applied); a live
:class:`SettingsFile` starts with the defaults instead, logs a warning, and reads the file once it appears,
as it reads every later change. A file that is not valid JSON,
or a value of the wrong type, is an error naming the file and the field, so a typo is never silently
ignored; the one exception is ``lsp_status_location``, a cosmetic choice that falls back to ``toolbar``.

Settings are host-independent preferences: one file may serve hosts with different plugins. A language id
that no plugin on this host provides (a third-party ``c`` in ``lsp_auto_start_languages``, a
``lsp_server_configs`` entry for it) is kept, reported once as a warning, and ignored here; it never makes
a command refuse to start nor a live reload reject the file. A known language that cannot be installed
automatically (kotlin) in ``lsp_auto_install_languages`` stays an error: that list would promise something
this host's plugin says it never does.

Settings update live: :class:`SettingsFile` re-reads the file when its modification time or size changes,
and running servers get ``workspace/didChangeConfiguration`` (see the stream and ``run`` bridges).
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kandev_lsp import jsontext
from kandev_lsp._values import dataclass, field
from kandev_lsp.configuration import configuration_items, merge_settings
from kandev_lsp.errors import SettingsError
from kandev_lsp.language import LanguageSpec

if TYPE_CHECKING:
    from kandev_lsp.host import PluginHost

log = logging.getLogger("kandev_lsp.settings")

SETTINGS_ENV = "KANDEV_LSP_SETTINGS"
STATUS_LOCATIONS = ("toolbar", "status_bar")
KNOWN_FIELDS = (
    "lsp_auto_start_languages",
    "lsp_auto_install_languages",
    "lsp_server_configs",
    "lsp_status_location",
    "lsp_release_base_urls",
    "lsp_release_metadata_urls",
    "lsp_disabled_tools",
)


LANGUAGE_FIELDS = ("lsp_auto_start_languages", "lsp_auto_install_languages", "lsp_server_configs")


@dataclass(frozen=True, slots=True)
class UserSettings:
    """The validated contents of the settings file.

    ``auto_start_languages`` and ``auto_install_languages`` hold the languages this host can act on.
    ``ignored_languages`` keeps, per field, the ids the file names that no loaded plugin provides (only
    known when the file was parsed with ``known``); :meth:`to_json` still carries them, and
    ``server_configs`` keeps their entries.
    """

    auto_start_languages: tuple[str, ...] = ()
    auto_install_languages: tuple[str, ...] = ()
    server_configs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    status_location: str = "toolbar"
    release_base_urls: Mapping[str, str] = field(default_factory=dict)
    source: str | None = None
    ignored_languages: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Per-language release metadata listing asset digests (``{version}`` replaced), over the plugin's.
    release_metadata_urls: Mapping[str, str] = field(default_factory=dict)
    #: Code-intelligence tools turned off (``kandev-lsp mcp`` neither lists nor runs them; B9.1).
    disabled_tools: tuple[str, ...] = ()
    #: The file these settings were read from; None when no file was read (the defaults).
    path: str | None = None

    def server_config(self, language: str) -> Mapping[str, Any]:
        return self.server_configs.get(language, {})

    def warnings(self) -> list[str]:
        """One message naming every language id ignored on this host (empty when none is)."""
        ids = sorted({language for names in self.ignored_languages.values() for language in names})
        if not ids:
            return []
        fields = ", ".join(name for name in LANGUAGE_FIELDS if self.ignored_languages.get(name))
        return [
            f"{self.source or 'settings'}: no plugin on this host provides {ids} (named in {fields}); "
            "kept in the file and ignored here. Install the plugin that provides them to use them on "
            "this host; `kandev-lsp plugins` lists what loaded."
        ]

    def to_json(self) -> dict[str, Any]:
        ignored = self.ignored_languages
        return {
            "lsp_auto_start_languages": [
                *self.auto_start_languages,
                *ignored.get("lsp_auto_start_languages", ()),
            ],
            "lsp_auto_install_languages": [
                *self.auto_install_languages,
                *ignored.get("lsp_auto_install_languages", ()),
            ],
            "lsp_server_configs": {k: dict(v) for k, v in self.server_configs.items()},
            "lsp_status_location": self.status_location,
            "lsp_release_base_urls": dict(self.release_base_urls),
            "lsp_release_metadata_urls": dict(self.release_metadata_urls),
            "lsp_disabled_tools": list(self.disabled_tools),
        }


class SettingsFileMissing(SettingsError):
    """A settings file that was named on purpose does not exist."""

    def __init__(self, path: str, named_by: str | None) -> None:
        self.path = path
        by = f" (named by {named_by})" if named_by else ""
        super().__init__(
            f"settings file {path}{by} does not exist, so nothing in it could apply. Fix the name, create "
            "the file (`{}` holds the defaults), or name none to use the default file"
        )


def settings_path(path: str | None = None, environ: Mapping[str, str] | None = None) -> tuple[str, bool]:
    """The settings file to read, and whether it was named on purpose: ``path`` (its caller's, e.g.
    ``--settings``), else ``KANDEV_LSP_SETTINGS``, else the per-user default (not named: it may be absent)."""
    environ = os.environ if environ is None else environ
    chosen = path or environ.get(SETTINGS_ENV)
    return (chosen, True) if chosen else (default_settings_path(environ), False)


def default_settings_path(environ: Mapping[str, str] | None = None) -> str:
    """``KANDEV_LSP_SETTINGS`` when set, else the platform's per-user config folder."""
    environ = os.environ if environ is None else environ
    override = environ.get(SETTINGS_ENV)
    if override:
        return override
    return os.path.join(_user_config_dir(), "settings.json")


def _user_config_dir() -> str:
    """``platformdirs.user_config_dir("kandev-lsp", appauthor=False)``.

    On Linux that is the XDG rule, computed here: importing platformdirs (and the tempfile and random
    modules it pulls in) was a tenth of ``kandev-lsp run``'s own start-up, paid before the editor's
    server could be spawned. Other systems (and Android) ask platformdirs; a test holds the two equal.
    """
    if sys.platform != "linux" or "ANDROID_DATA" in os.environ:
        import platformdirs

        return platformdirs.user_config_dir("kandev-lsp", appauthor=False)
    base = os.environ.get("XDG_CONFIG_HOME", "")
    if not posixpath.isabs(base):
        home = os.environ.get("HOME")
        if home is not None and not posixpath.isabs(home):
            # A relative HOME counts as unset (as in platformdirs): the account's home folder.
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        base = os.path.join(home if home is not None else os.path.expanduser("~"), ".config")
    return os.path.join(base, "kandev-lsp")


def _language_list(where: str, name: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SettingsError(f"{where}: {name} must be a list of language ids (strings), got {_kind(value)}")
    return tuple(dict.fromkeys(value))


def _split_known(
    languages: tuple[str, ...], known: Mapping[str, LanguageSpec] | None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(ids a plugin here provides, ids none does); everything counts as known without ``known``."""
    if known is None:
        return languages, ()
    return (
        tuple(lang for lang in languages if lang in known),
        tuple(lang for lang in languages if lang not in known),
    )


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def parse_settings(
    data: Any,
    *,
    where: str = "settings",
    known: Mapping[str, LanguageSpec] | None = None,
    path: str | None = None,
) -> UserSettings:
    """Validate a decoded settings object.

    ``known`` (language id -> spec, the languages this host's plugins provide) enables the language
    checks: ids it lacks are set aside in :attr:`UserSettings.ignored_languages` (never an error), and a
    known language that is never installed automatically is refused in ``lsp_auto_install_languages``.
    """
    if not isinstance(data, dict):
        raise SettingsError(f"{where}: the settings must be a JSON object, got {_kind(data)}")
    unknown_fields = sorted(set(data) - set(KNOWN_FIELDS))
    if unknown_fields:
        raise SettingsError(
            f"{where}: unknown field(s) {unknown_fields}; known fields: {', '.join(KNOWN_FIELDS)}"
        )
    auto_start, ignored_start = _split_known(
        _language_list(where, "lsp_auto_start_languages", data.get("lsp_auto_start_languages", [])), known
    )
    auto_install, ignored_install = _split_known(
        _language_list(where, "lsp_auto_install_languages", data.get("lsp_auto_install_languages", [])),
        known,
    )
    if known is not None:
        manual = [lang for lang in auto_install if not known[lang].auto_installable]
        if manual:
            raise SettingsError(
                f"{where}: lsp_auto_install_languages cannot include {manual}: "
                "these servers are never installed automatically (install them by hand)"
            )
    configs = data.get("lsp_server_configs", {})
    if not isinstance(configs, dict):
        raise SettingsError(
            f"{where}: lsp_server_configs must be an object keyed by language, got {_kind(configs)}"
        )
    for language, config in configs.items():
        if not isinstance(config, dict):
            raise SettingsError(
                f"{where}: lsp_server_configs.{language} must be a JSON object, got {_kind(config)}"
            )
    _, ignored_configs = _split_known(tuple(configs), known)
    location = data.get("lsp_status_location", "toolbar")
    if location not in STATUS_LOCATIONS:
        location = "toolbar"
    urls = data.get("lsp_release_base_urls", {})
    if not isinstance(urls, dict) or not all(
        isinstance(v, str) and v.startswith(("http://", "https://")) for v in urls.values()
    ):
        raise SettingsError(f"{where}: lsp_release_base_urls must map language ids to http(s) URLs")
    metadata_urls = data.get("lsp_release_metadata_urls", {})
    if not isinstance(metadata_urls, dict) or not all(
        isinstance(v, str) and v.startswith(("http://", "https://")) for v in metadata_urls.values()
    ):
        raise SettingsError(f"{where}: lsp_release_metadata_urls must map language ids to http(s) URLs")
    disabled_tools = data.get("lsp_disabled_tools", [])
    if not isinstance(disabled_tools, list) or not all(isinstance(t, str) for t in disabled_tools):
        raise SettingsError(f"{where}: lsp_disabled_tools must be a list of tool names (e.g. code_hover)")
    ignored = {
        name: ids
        for name, ids in zip(LANGUAGE_FIELDS, (ignored_start, ignored_install, ignored_configs), strict=True)
        if ids
    }
    return UserSettings(
        auto_start,
        auto_install,
        configs,
        location,
        urls,
        source=where,
        ignored_languages=ignored,
        release_metadata_urls=metadata_urls,
        disabled_tools=tuple(disabled_tools),
        path=path,
    )


def load_settings(
    path: str | None = None, *, known: Mapping[str, LanguageSpec] | None = None
) -> UserSettings:
    """Read and validate the settings file: ``path``, else ``KANDEV_LSP_SETTINGS``, else the per-user
    default. A missing default file gives the defaults.

    :raises SettingsFileMissing: a file named on purpose (``path`` or ``KANDEV_LSP_SETTINGS``) is missing.
    :raises SettingsError: the file cannot be read, is not JSON, or holds an invalid field.
    """
    chosen, named = settings_path(path)
    try:
        with open(chosen, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        if named:
            raise SettingsFileMissing(chosen, None if path else SETTINGS_ENV) from None
        return UserSettings(source=None)
    except OSError as exc:
        raise SettingsError(f"cannot read settings file {chosen}: {exc.strerror}") from exc
    try:
        data = jsontext.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"settings file {chosen} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except jsontext.UnacceptableJson as exc:
        raise SettingsError(f"settings file {chosen} is not valid JSON: {exc}") from exc
    return parse_settings(data, where=f"settings file {chosen}", known=known, path=chosen)


class SettingsFile:
    """A settings file watched cheaply: re-read only when its mtime or size changed.

    A file that turns invalid while servers run keeps the last good settings and records the error in
    :attr:`error`, so a half-saved edit never wipes live configuration. Languages no plugin here
    provides are logged once per distinct warning (at start and when a reload names new ones), not on
    every reload. A missing file means the defaults until it appears; one named on purpose (``path``,
    ``KANDEV_LSP_SETTINGS``) that is missing at the start is logged as a warning (``settings_file_missing``),
    since a misspelt name would otherwise look like settings that apply.
    """

    def __init__(self, path: str | None = None, *, known: Mapping[str, LanguageSpec] | None = None) -> None:
        self.path, named = settings_path(path)
        self._known = known
        self._stamp: tuple[int, int] | None = None
        self.error: SettingsError | None = None
        self._warned: set[str] = set()
        self._settings = self._read_initial(named)
        self._warn_once(self._settings)

    def _warn_once(self, settings: UserSettings) -> None:
        ignored = settings.ignored_languages
        key = ";".join(f"{name}={','.join(ids)}" for name, ids in sorted(ignored.items()))
        if key and key not in self._warned:
            self._warned.add(key)
            languages = sorted({language for ids in ignored.values() for language in ids})
            log.warning(
                "event=settings_ignored_languages languages=%s fields=%s detail=%s",
                json.dumps(languages, separators=(",", ":")),  # ids come from a file: escaped
                ",".join(sorted(ignored)),
                '"no plugin on this host provides them: kept in the file, ignored here"',
            )

    def _stat(self) -> tuple[int, int] | None:
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return (info.st_mtime_ns, info.st_size)

    def _read_initial(self, named: bool) -> UserSettings:
        self._stamp = self._stat()
        settings = self._read()
        if named and self._stamp is None:
            log.warning(
                "event=settings_file_missing path=%s detail=%s",
                json.dumps(self.path),  # a name someone typed: escaped
                '"named on purpose but absent: the defaults apply until it is created (re-read live)"',
            )
        return settings

    def _read(self) -> UserSettings:
        """The file's settings; the defaults while it does not exist (yet, or any more)."""
        try:
            return load_settings(self.path, known=self._known)
        except SettingsFileMissing:
            return UserSettings()

    def current(self) -> tuple[UserSettings, bool]:
        """The settings now, and whether they changed since the last call."""
        stamp = self._stat()
        if stamp == self._stamp:
            return self._settings, False
        self._stamp = stamp
        try:
            fresh = self._read()
        except SettingsError as exc:
            self.error = exc
            return self._settings, False
        self.error = None
        self._warn_once(fresh)
        changed = fresh.to_json() != self._settings.to_json()
        self._settings = fresh
        return fresh, changed


def language_settings(defaults: Mapping[str, Any], user: UserSettings, language: str) -> dict[str, Any]:
    """The settings a server of ``language`` sees: plugin defaults with the user's values merged over."""
    return merge_settings(defaults, user.server_config(language))


class ConfigurationAnswerer:
    """Answers ``workspace/configuration`` for one server, with its language's current settings."""

    def __init__(self, plugins: PluginHost, language: LanguageSpec) -> None:
        self._plugins = plugins
        self._language = language

    def answer(self, settings: Mapping[str, Any], params: Any) -> list[Any]:
        """The result array: one answer per item; ``[settings]`` for a request without items."""
        items = configuration_items(params)
        if items is None:
            return [dict(settings)]
        return [
            self._plugins.configuration_item(
                self._language,
                settings,
                _optional_str(item.get("section")),
                _optional_str(item.get("scopeUri")),
            )
            for item in items
        ]


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
