"""JSON nested past the parser's depth is unreadable text with its command's own error, not a traceback.

``json.loads`` raises RecursionError for it (a few KB of ``[``), which every "not JSON" branch missed.
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
    with pytest.raises(jsontext.NestedTooDeeply, match="nested too deeply") as caught:
        jsontext.loads(text)
    assert isinstance(caught.value, ValueError)
    assert jsontext.loads('{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}


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
