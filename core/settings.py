"""The user's settings file and the per-language settings servers see.

The file is JSON (default: ``<platformdirs user config dir>/kandev-lsp/settings.json``; overridden by
``--settings`` or ``KANDEV_LSP_SETTINGS``). A missing file means defaults. A file that is not valid JSON,
or a value of the wrong type, is an error naming the file and the field, so a typo is never silently
ignored; the one exception is ``lsp_status_location``, a cosmetic choice that falls back to ``toolbar``.

Settings update live: :class:`SettingsFile` re-reads the file when its modification time or size changes,
and running servers get ``workspace/didChangeConfiguration`` (see the stream and ``run`` bridges).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kandev_lsp.configuration import configuration_items, merge_settings
from kandev_lsp.errors import SettingsError
from kandev_lsp.language import LanguageSpec

if TYPE_CHECKING:
    from kandev_lsp.host import PluginHost

SETTINGS_ENV = "KANDEV_LSP_SETTINGS"
STATUS_LOCATIONS = ("toolbar", "status_bar")
KNOWN_FIELDS = (
    "lsp_auto_start_languages",
    "lsp_auto_install_languages",
    "lsp_server_configs",
    "lsp_status_location",
    "lsp_release_base_urls",
)


@dataclass(frozen=True, slots=True)
class UserSettings:
    """The validated contents of the settings file."""

    auto_start_languages: tuple[str, ...] = ()
    auto_install_languages: tuple[str, ...] = ()
    server_configs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    status_location: str = "toolbar"
    release_base_urls: Mapping[str, str] = field(default_factory=dict)
    source: str | None = None

    def server_config(self, language: str) -> Mapping[str, Any]:
        return self.server_configs.get(language, {})

    def to_json(self) -> dict[str, Any]:
        return {
            "lsp_auto_start_languages": list(self.auto_start_languages),
            "lsp_auto_install_languages": list(self.auto_install_languages),
            "lsp_server_configs": {k: dict(v) for k, v in self.server_configs.items()},
            "lsp_status_location": self.status_location,
            "lsp_release_base_urls": dict(self.release_base_urls),
        }


def default_settings_path(environ: Mapping[str, str] | None = None) -> str:
    """``KANDEV_LSP_SETTINGS`` when set, else the platform's per-user config folder."""
    environ = os.environ if environ is None else environ
    override = environ.get(SETTINGS_ENV)
    if override:
        return override
    import platformdirs

    return os.path.join(platformdirs.user_config_dir("kandev-lsp", appauthor=False), "settings.json")


def _language_list(
    where: str, name: str, value: Any, known: Mapping[str, LanguageSpec] | None
) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SettingsError(f"{where}: {name} must be a list of language ids (strings), got {_kind(value)}")
    if known is not None:
        unknown = [item for item in value if item not in known]
        if unknown:
            raise SettingsError(
                f"{where}: {name} names unknown language(s) {unknown}; known: {sorted(known)}"
            )
    return tuple(dict.fromkeys(value))


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def parse_settings(
    data: Any, *, where: str = "settings", known: Mapping[str, LanguageSpec] | None = None
) -> UserSettings:
    """Validate a decoded settings object. ``known`` (language id -> spec) enables language checks."""
    if not isinstance(data, dict):
        raise SettingsError(f"{where}: the settings must be a JSON object, got {_kind(data)}")
    unknown_fields = sorted(set(data) - set(KNOWN_FIELDS))
    if unknown_fields:
        raise SettingsError(
            f"{where}: unknown field(s) {unknown_fields}; known fields: {', '.join(KNOWN_FIELDS)}"
        )
    auto_start = _language_list(
        where, "lsp_auto_start_languages", data.get("lsp_auto_start_languages", []), known
    )
    auto_install = _language_list(
        where, "lsp_auto_install_languages", data.get("lsp_auto_install_languages", []), known
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
    if known is not None:
        unknown = sorted(set(configs) - set(known))
        if unknown:
            raise SettingsError(f"{where}: lsp_server_configs names unknown language(s) {unknown}")
    location = data.get("lsp_status_location", "toolbar")
    if location not in STATUS_LOCATIONS:
        location = "toolbar"
    urls = data.get("lsp_release_base_urls", {})
    if not isinstance(urls, dict) or not all(
        isinstance(v, str) and v.startswith(("http://", "https://")) for v in urls.values()
    ):
        raise SettingsError(f"{where}: lsp_release_base_urls must map language ids to http(s) URLs")
    return UserSettings(auto_start, auto_install, configs, location, urls, source=where)


def load_settings(
    path: str | None = None, *, known: Mapping[str, LanguageSpec] | None = None
) -> UserSettings:
    """Read and validate the settings file; a missing file gives the defaults."""
    path = path or default_settings_path()
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return UserSettings(source=None)
    except OSError as exc:
        raise SettingsError(f"cannot read settings file {path}: {exc.strerror}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"settings file {path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    return parse_settings(data, where=f"settings file {path}", known=known)


class SettingsFile:
    """A settings file watched cheaply: re-read only when its mtime or size changed.

    A file that turns invalid while servers run keeps the last good settings and records the error in
    :attr:`error`, so a half-saved edit never wipes live configuration.
    """

    def __init__(self, path: str | None = None, *, known: Mapping[str, LanguageSpec] | None = None) -> None:
        self.path = path or default_settings_path()
        self._known = known
        self._stamp: tuple[int, int] | None = None
        self.error: SettingsError | None = None
        self._settings = self._read_initial()

    def _stat(self) -> tuple[int, int] | None:
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return (info.st_mtime_ns, info.st_size)

    def _read_initial(self) -> UserSettings:
        self._stamp = self._stat()
        return load_settings(self.path, known=self._known)

    def current(self) -> tuple[UserSettings, bool]:
        """The settings now, and whether they changed since the last call."""
        stamp = self._stat()
        if stamp == self._stamp:
            return self._settings, False
        self._stamp = stamp
        try:
            fresh = load_settings(self.path, known=self._known)
        except SettingsError as exc:
            self.error = exc
            return self._settings, False
        self.error = None
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
