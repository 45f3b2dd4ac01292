"""The settings file and the workspace/configuration answers built from it."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import kandev_lsp_go
import kandev_lsp_kotlin
import kandev_lsp_python
import pytest
from kandev_lsp import ConfigurationAnswer, LanguageSpec, SettingsError, hookimpl
from kandev_lsp.host import PluginHost
from kandev_lsp.settings import (
    ConfigurationAnswerer,
    SettingsFile,
    SettingsFileMissing,
    default_settings_path,
    language_settings,
    load_settings,
    parse_settings,
)
from kandev_lsp.testing import make_plugin_host


@pytest.fixture
def plugins() -> PluginHost:
    return make_plugin_host(kandev_lsp_go, kandev_lsp_python, kandev_lsp_kotlin)


def write(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return str(path)


def test_a_missing_default_file_gives_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KANDEV_LSP_SETTINGS", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    settings = load_settings()
    assert settings.auto_start_languages == () and settings.status_location == "toolbar"
    assert settings.source is None and settings.path is None


def test_a_missing_file_named_on_purpose_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--settings typo.json`` must not pass for settings that applied (issue 17 item 10)."""
    absent = str(tmp_path / "absent.json")
    with pytest.raises(SettingsFileMissing, match=r"settings file .*absent\.json does not exist") as raised:
        load_settings(absent)
    assert raised.value.path == absent
    monkeypatch.setenv("KANDEV_LSP_SETTINGS", absent)
    with pytest.raises(SettingsFileMissing, match=r"\(named by KANDEV_LSP_SETTINGS\)"):
        load_settings()


def test_a_live_file_named_on_purpose_starts_with_defaults_warns_and_is_read_once_it_appears(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "later.json"
    caplog.set_level(logging.WARNING, logger="kandev_lsp.settings")
    watched = SettingsFile(str(path))
    [warning] = [r.getMessage() for r in caplog.records if "settings_file_missing" in r.getMessage()]
    assert json.dumps(str(path)) in warning
    settings, changed = watched.current()
    assert not changed and settings.to_json() == parse_settings({}).to_json() and settings.path is None
    write(path, {"lsp_server_configs": {"go": {"a": 1}}})
    settings, changed = watched.current()
    assert changed and settings.server_config("go") == {"a": 1} and settings.path == str(path)


def test_a_live_default_file_that_is_absent_is_no_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("KANDEV_LSP_SETTINGS", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    caplog.set_level(logging.WARNING, logger="kandev_lsp.settings")
    SettingsFile()
    assert not [r for r in caplog.records if "settings_file_missing" in r.getMessage()]


def test_full_file_round_trip(tmp_path: Path, plugins: PluginHost) -> None:
    data = {
        "lsp_auto_start_languages": ["go", "python", "go"],
        "lsp_auto_install_languages": ["python"],
        "lsp_server_configs": {"go": {"gopls": {"staticcheck": True}}},
        "lsp_status_location": "status_bar",
        "lsp_release_base_urls": {"go": "http://127.0.0.1:9/mirror"},
    }
    settings = load_settings(write(tmp_path / "s.json", data), known=plugins.languages())
    assert settings.auto_start_languages == ("go", "python")
    assert settings.status_location == "status_bar"
    assert settings.server_config("go") == {"gopls": {"staticcheck": True}}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{not json", "not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
        ([], "must be a JSON object, got a list"),
        ({"lsp_auto_start_language": []}, "unknown field(s) ['lsp_auto_start_language']"),
        ({"lsp_auto_start_languages": "go"}, "lsp_auto_start_languages must be a list of language ids"),
        ({"lsp_auto_install_languages": ["kotlin"]}, "lsp_auto_install_languages cannot include ['kotlin']"),
        ({"lsp_server_configs": []}, "lsp_server_configs must be an object keyed by language, got a list"),
        ({"lsp_server_configs": {"go": True}}, "lsp_server_configs.go must be a JSON object, got a boolean"),
        (
            {"lsp_release_base_urls": {"rust": "ftp://x"}},
            "lsp_release_base_urls must map language ids to http(s) URLs",
        ),
    ],
)
def test_bad_settings_name_the_file_and_field(
    tmp_path: Path, plugins: PluginHost, data: Any, message: str
) -> None:
    path = write(tmp_path / "s.json", data)
    with pytest.raises(SettingsError) as raised:
        load_settings(path, known=plugins.languages())
    assert message in str(raised.value)
    assert path in str(raised.value)


@pytest.mark.parametrize("value", [None, 3, "sidebar", ""])
def test_invalid_status_location_falls_back_to_toolbar(value: Any) -> None:
    assert parse_settings({"lsp_status_location": value}).status_location == "toolbar"


def test_default_path_from_environment_or_platform_dirs() -> None:
    assert default_settings_path({"KANDEV_LSP_SETTINGS": "/etc/k.json"}) == "/etc/k.json"
    assert default_settings_path({}).endswith(os.path.join("kandev-lsp", "settings.json"))


def test_go_defaults_shallow_merged_with_user_values(plugins: PluginHost) -> None:
    go = plugins.language("go")
    user = parse_settings({"lsp_server_configs": {"go": {"ui.semanticTokens": False, "gopls": {"a": 1}}}})
    assert language_settings(plugins.default_settings(go), user, "go") == {
        "ui.semanticTokens": False,
        "gopls": {"a": 1},
    }
    assert language_settings(plugins.default_settings(go), parse_settings({}), "go") == {
        "ui.semanticTokens": True
    }


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"items": [{"section": "go"}]}, [{"ui.semanticTokens": True, "gopls": {"hints": {"x": 1}}}]),
        ({"items": [{"section": "go.ui.semanticTokens"}]}, [True]),
        ({"items": [{"section": "go.gopls.hints.x"}]}, [1]),
        ({"items": [{"section": "gopls.hints"}]}, [{"x": 1}]),
        ({"items": [{"section": "go.gopls.missing"}, {"section": "nothing"}]}, [None, None]),
        ({"items": [{"scopeUri": "file:///w"}]}, [{"ui.semanticTokens": True, "gopls": {"hints": {"x": 1}}}]),
        ({"items": []}, [{"ui.semanticTokens": True, "gopls": {"hints": {"x": 1}}}]),
        (None, [{"ui.semanticTokens": True, "gopls": {"hints": {"x": 1}}}]),
    ],
)
def test_workspace_configuration_answers(plugins: PluginHost, params: Any, expected: list[Any]) -> None:
    go = plugins.language("go")
    settings = {"ui.semanticTokens": True, "gopls": {"hints": {"x": 1}}}
    assert ConfigurationAnswerer(plugins, go).answer(settings, params) == expected


def test_plugin_can_answer_configuration_items_itself(plugins: PluginHost) -> None:
    class Custom:
        @hookimpl
        def kandev_lsp_configuration_item(
            self, language: LanguageSpec, section: str | None
        ) -> ConfigurationAnswer | None:
            if language.id == "python" and section == "python.analysis.typeCheckingMode":
                return ConfigurationAnswer(None)  # an explicit null, not "no answer"
            return None

    plugins.register(Custom(), "custom")
    python = plugins.language("python")
    answers = ConfigurationAnswerer(plugins, python).answer(
        {"analysis": {"typeCheckingMode": "strict"}},
        {"items": [{"section": "python.analysis.typeCheckingMode"}, {"section": "python.analysis"}]},
    )
    assert answers == [None, {"typeCheckingMode": "strict"}]


def test_settings_file_reloads_on_change_and_keeps_last_good_on_error(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    write(path, {"lsp_server_configs": {"go": {"a": 1}}})
    watched = SettingsFile(str(path))
    settings, changed = watched.current()
    assert not changed and settings.server_config("go") == {"a": 1}
    write(path, {"lsp_server_configs": {"go": {"a": 22}}})
    settings, changed = watched.current()
    assert changed and settings.server_config("go") == {"a": 22}
    write(path, "{half saved")
    settings, changed = watched.current()
    assert not changed and settings.server_config("go") == {"a": 22}
    assert watched.error is not None and "not valid JSON" in str(watched.error)
    path.unlink()
    settings, changed = watched.current()
    assert changed and settings.server_config("go") == {}


def test_languages_without_a_plugin_here_are_kept_warned_and_ignored(
    tmp_path: Path, plugins: PluginHost
) -> None:
    """Settings are host-independent: a third-party ``c`` elsewhere is no error here (issue 7 item 13)."""
    data = {
        "lsp_auto_start_languages": ["c", "go"],
        "lsp_auto_install_languages": ["python", "zig"],
        "lsp_server_configs": {"c": {"fallbackFlags": ["-std=c11"]}, "go": {"a": 1}},
    }
    settings = load_settings(write(tmp_path / "s.json", data), known=plugins.languages())
    assert settings.auto_start_languages == ("go",) and settings.auto_install_languages == ("python",)
    assert settings.ignored_languages == {
        "lsp_auto_start_languages": ("c",),
        "lsp_auto_install_languages": ("zig",),
        "lsp_server_configs": ("c",),
    }
    assert settings.server_config("go") == {"a": 1}
    assert settings.to_json()["lsp_auto_start_languages"] == ["go", "c"]  # kept
    assert settings.to_json()["lsp_server_configs"]["c"] == {"fallbackFlags": ["-std=c11"]}
    [warning] = settings.warnings()
    assert "['c', 'zig']" in warning and "no plugin on this host" in warning and str(tmp_path) in warning


def test_kotlin_in_auto_install_stays_an_error_next_to_unknown_ids(
    tmp_path: Path, plugins: PluginHost
) -> None:
    path = write(tmp_path / "s.json", {"lsp_auto_install_languages": ["c", "kotlin"]})
    with pytest.raises(SettingsError, match=r"lsp_auto_install_languages cannot include \['kotlin'\]"):
        load_settings(path, known=plugins.languages())


def test_live_reload_with_an_unknown_language_still_delivers_changes_and_warns_once(
    tmp_path: Path, plugins: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s.json"
    write(path, {"lsp_server_configs": {"python": {"python.analysis": {"typeCheckingMode": "basic"}}}})
    watched = SettingsFile(str(path), known=plugins.languages())
    caplog.set_level(logging.WARNING, logger="kandev_lsp.settings")
    strict = {"python.analysis": {"typeCheckingMode": "strict"}}
    write(path, {"lsp_auto_start_languages": ["c"], "lsp_server_configs": {"python": strict}})
    settings, changed = watched.current()
    assert changed and watched.error is None
    assert settings.server_config("python") == strict
    write(path, {"lsp_auto_start_languages": ["c"], "lsp_server_configs": {"python": {}, "go": {"b": 2}}})
    settings, changed = watched.current()
    assert changed and settings.server_config("go") == {"b": 2}
    warnings = [r.getMessage() for r in caplog.records if "settings_ignored_languages" in r.getMessage()]
    assert warnings == [
        'event=settings_ignored_languages languages=["c"] fields=lsp_auto_start_languages '
        'detail="no plugin on this host provides them: kept in the file, ignored here"'
    ]


@pytest.mark.parametrize(
    "variables",
    [
        {},
        {"XDG_CONFIG_HOME": "/xdg/config"},
        {"XDG_CONFIG_HOME": "relative/config"},
        {"XDG_CONFIG_HOME": ""},
        {"HOME": "/home/someone"},
        {"HOME": "/home/someone/"},
        {"HOME": "relative-home"},
        {"HOME": None},
        {"HOME": None, "XDG_CONFIG_HOME": "/xdg"},
    ],
)
def test_default_settings_folder_is_platformdirs_without_importing_it(
    variables: dict[str, str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    import platformdirs

    for name, value in variables.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("KANDEV_LSP_SETTINGS", raising=False)
    expected = os.path.join(platformdirs.user_config_dir("kandev-lsp", appauthor=False), "settings.json")
    assert default_settings_path() == expected


def test_the_default_settings_file_is_found_without_importing_platformdirs(tmp_path: Path) -> None:
    """``kandev-lsp run`` opens the default settings file before it can spawn the editor's server."""
    import subprocess
    import sys

    probe = (
        "import sys; from kandev_lsp.settings import SettingsFile; SettingsFile()\n"
        "print('platformdirs' in sys.modules, 'tempfile' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "KANDEV_LSP_SETTINGS"}
    env["XDG_CONFIG_HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["False", "False"]
