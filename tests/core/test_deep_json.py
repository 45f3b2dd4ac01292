"""JSON nested past the parser's depth, NaN, Infinity or a number out of range is unacceptable text with
its command's own error, not a traceback (or, for NaN in settings, a session that dies when it sends them).

``json.loads`` raises RecursionError for the first (a few KB of ``[``), which every "not JSON" branch
missed, and accepts the others, which ``json.dumps(allow_nan=False)`` then refuses mid-session.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kandev_lsp import jsontext
from kandev_lsp.errors import SettingsError, TaskEnvironmentError
from kandev_lsp.install.digests import parse_release_metadata
from kandev_lsp.install.npm import bin_script
from kandev_lsp.install.owners import parse_owner
from kandev_lsp.install.receipts import parse_receipt
from kandev_lsp.language import NpmPackage, NpmRecipe
from kandev_lsp.settings import load_settings
from kandev_lsp.taskenv import load_env_file

#: Well past any recursion limit, well under every size limit (a receipt is read up to 64 KiB).
DEEP = "[" * 20_000
DEEP_OBJECT = '{"a":' * 20_000


@pytest.mark.parametrize("text", [DEEP, DEEP_OBJECT, DEEP.encode()])
def test_loads_turns_too_deep_into_a_value_error(text: str | bytes) -> None:
    with pytest.raises(jsontext.UnacceptableJson, match="nested too deeply") as caught:
        jsontext.loads(text)
    assert isinstance(caught.value, ValueError)
    assert jsontext.loads('{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a": NaN}', "NaN is not valid JSON"),
        ('{"a": [-Infinity]}', "-Infinity is not valid JSON"),
        ('{"a": 1e999}', "the number 1e999 is out of range"),
        ('{"a": ' + "9" * 5000 + "}", "Exceeds the limit"),
    ],
)
def test_loads_refuses_what_is_not_json(text: str, reason: str) -> None:
    with pytest.raises(jsontext.UnacceptableJson, match=reason):
        jsontext.loads(text)


def test_a_settings_file_with_nan_is_refused_before_any_server_gets_it(tmp_path: Path) -> None:
    # It was taken; `run python` then died with a ValueError traceback (allow_nan=False) on pyright's
    # first workspace/configuration request, and `config python` printed NaN, which is not JSON either.
    path = tmp_path / "settings.json"
    path.write_text('{"lsp_server_configs": {"python": {"python": {"analysis": {"x": NaN}}}}}')
    with pytest.raises(SettingsError, match=r"settings\.json is not valid JSON: NaN is not valid JSON"):
        load_settings(str(path))


def test_a_deep_settings_file_is_a_settings_error(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(DEEP_OBJECT, encoding="utf-8")
    with pytest.raises(SettingsError, match=r"settings\.json is not valid JSON: arrays or objects nested"):
        load_settings(str(path))


def test_a_deep_env_file_is_a_task_environment_error(tmp_path: Path) -> None:
    path = tmp_path / "task.json"
    path.write_text(DEEP_OBJECT, encoding="utf-8")
    with pytest.raises(TaskEnvironmentError, match="is not valid JSON: arrays or objects nested"):
        load_env_file(str(path))


def test_deep_release_metadata_is_no_digest_not_a_crash() -> None:
    # What a release origin (or whatever answers in its place) sends is not ours.
    with pytest.raises(ValueError, match=r"it is not JSON \(arrays or objects nested too deeply"):
        parse_release_metadata('{"assets": ' + DEEP, "rust-analyzer.gz")


def test_a_deep_receipt_or_owner_record_is_not_one() -> None:
    assert parse_receipt(DEEP_OBJECT.encode(), "/cache/go/versions/v1") is None
    assert parse_owner(DEEP_OBJECT) is None


def test_a_package_json_nested_too_deep_names_no_script(tmp_path: Path) -> None:
    folder = tmp_path / "node_modules" / "pyright"
    folder.mkdir(parents=True)
    (folder / "package.json").write_text('{"bin": ' + DEEP, encoding="utf-8")
    recipe = NpmRecipe(packages=(NpmPackage("pyright", "1.1.414"),), bin="pyright-langserver")
    assert bin_script(tmp_path, recipe) is None


def test_the_cli_reports_a_deep_settings_or_env_file_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(DEEP, encoding="utf-8")
    (tmp_path / "task.json").write_text(DEEP_OBJECT, encoding="utf-8")
    (tmp_path / "ws").mkdir()
    for args in (
        ["config", "python", "--settings", str(tmp_path / "settings.json")],
        ["resolve", "go", "--workspace", str(tmp_path / "ws"), "--env-file", str(tmp_path / "task.json")],
    ):
        result = subprocess.run(
            [sys.executable, "-m", "kandev_lsp.cli", *args],
            capture_output=True,
            text=True,
            env={**os.environ, "HOME": str(tmp_path)},
            check=False,
            timeout=60,
        )
        assert result.returncode == 1, (args, result.stderr[-2000:])
        assert "Traceback" not in result.stderr
        assert "is not valid JSON: arrays or objects nested too deeply to read" in result.stderr
