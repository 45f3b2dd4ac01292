"""The settings file and the workspace/configuration answers built from it."""

from __future__ import annotations

import json
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


def test_missing_file_gives_defaults(tmp_path: Path) -> None:
    settings = load_settings(str(tmp_path / "absent.json"))
    assert settings.auto_start_languages == () and settings.status_location == "toolbar"
    assert settings.source is None


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
        ({"lsp_auto_start_languages": ["go", "cobol"]}, "unknown language(s) ['cobol']"),
        ({"lsp_auto_install_languages": ["kotlin"]}, "lsp_auto_install_languages cannot include ['kotlin']"),
        ({"lsp_server_configs": []}, "lsp_server_configs must be an object keyed by language, got a list"),
        ({"lsp_server_configs": {"go": True}}, "lsp_server_configs.go must be a JSON object, got a boolean"),
        ({"lsp_server_configs": {"cobol": {}}}, "lsp_server_configs names unknown language(s) ['cobol']"),
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
