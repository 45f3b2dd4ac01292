"""What every command says about plugins and the settings file: each message once, a named settings file
that is missing said clearly, a disabled-plugin switch that matches nothing warned (issue 17 item 10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clikit import broken_plugin_site, kandev, printing_plugin_site

BROKEN = "plugin 'broken' failed to load"


@pytest.mark.parametrize(
    "args",
    [
        ["languages"],
        ["plugins"],
        ["resolve", "go"],
        ["config", "go"],
        ["doctor", "--no-version"],
        ["run", "cobol"],  # logging configured (run's structured stderr log) before plugins load
        ["list"],
    ],
)
def test_a_plugin_that_fails_to_load_is_reported_once(args: list[str], tmp_path: Path) -> None:
    site = broken_plugin_site(tmp_path / "site")
    result = kandev(*args, env={"PYTHONPATH": str(site), "HOME": str(tmp_path)}, cwd=tmp_path)
    assert (result.stdout + result.stderr).count(BROKEN) == 1, result.stdout + result.stderr


def test_plugins_json_carries_the_load_problem_and_stderr_stays_quiet(tmp_path: Path) -> None:
    site = broken_plugin_site(tmp_path / "site")
    result = kandev("plugins", "--json", env={"PYTHONPATH": str(site)})
    assert result.returncode == 1 and result.stderr == ""
    assert [p["plugin"] for p in json.loads(result.stdout)["problems"]] == ["broken"]


def test_a_disable_switch_naming_no_plugin_is_warned_once(tmp_path: Path) -> None:
    result = kandev("languages", env={"KANDEV_LSP_DISABLE_PLUGINS": "go,pyton"}, cwd=tmp_path)
    assert result.returncode == 0
    assert "go " not in result.stdout and "python " in result.stdout  # go disabled, the typo nothing
    assert result.stderr.count("KANDEV_LSP_DISABLE_PLUGINS names 'pyton'") == 1, result.stderr
    assert "the plugins are: go, kotlin, python, rust, typescript" in result.stderr
    listed = json.loads(kandev("plugins", "--json", env={"KANDEV_LSP_DISABLE_PLUGINS": "pyton"}).stdout)
    assert listed["disabled"] == [] and any("'pyton'" in w for w in listed["warnings"])


@pytest.mark.parametrize(
    "args",
    [
        ["config", "go"],
        ["install", "go"],
        ["doctor", "--no-version"],
    ],
)
def test_a_missing_settings_file_named_on_purpose_is_an_error(args: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "setings.json"  # a typo
    result = kandev(*args, "--settings", str(missing), env={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"settings file {missing} does not exist" in result.stdout + result.stderr
    via_env = kandev(*args, env={"HOME": str(tmp_path), "KANDEV_LSP_SETTINGS": str(missing)}, cwd=tmp_path)
    assert via_env.returncode == 1
    assert "(named by KANDEV_LSP_SETTINGS) does not exist" in via_env.stdout + via_env.stderr


def test_a_live_command_warns_about_a_missing_settings_file_and_goes_on(tmp_path: Path) -> None:
    """``run`` and ``serve`` re-read the file live: it may be written later, so they start, and say so."""
    missing = tmp_path / "later.json"
    result = kandev("run", "cobol", "--settings", str(missing), "--workspace", str(tmp_path))
    assert result.returncode == 13  # it went on to resolve: the unknown language is what stopped it
    assert f"event=settings_file_missing path={json.dumps(str(missing))}" in result.stderr


def test_config_prints_text_and_json_names_the_settings_file_by_path(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"lsp_server_configs": {"go": {"gopls": {"staticcheck": True}}}}))
    text = kandev("config", "go", "--settings", str(settings), "--section", "go.gopls.staticcheck")
    assert text.returncode == 0, text.stderr
    assert f"settings file {settings}\n" in text.stdout
    assert "workspace/configuration 'go.gopls.staticcheck' -> true" in text.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(text.stdout)
    data = json.loads(kandev("config", "go", "--settings", str(settings), "--json").stdout)
    assert data["settingsFile"] == str(settings) and data["settingsFilePresent"] is True
    assert data["settings"] == {"ui.semanticTokens": True, "gopls": {"staticcheck": True}}
    default = json.loads(
        kandev("config", "go", "--json", env={"XDG_CONFIG_HOME": str(tmp_path / "cfg")}).stdout
    )
    assert default["settingsFile"] == str(tmp_path / "cfg" / "kandev-lsp" / "settings.json")
    assert default["settingsFilePresent"] is False


@pytest.mark.parametrize(
    "args", [["resolve", "go", "--json"], ["plugins", "--json"], ["languages", "--json"]]
)
def test_what_a_plugin_prints_at_import_is_kept_off_a_json_answer(args: list[str], tmp_path: Path) -> None:
    # It came first on stdout: `resolve go --json | jq` failed on 'chatty plugin loaded'.
    site = printing_plugin_site(tmp_path / "site")
    result = kandev(*args, env={"PYTHONPATH": str(site), "HOME": str(tmp_path)}, cwd=tmp_path)
    json.loads(result.stdout)  # the whole of stdout is the answer
    assert "chatty plugin loaded\n" in result.stderr
