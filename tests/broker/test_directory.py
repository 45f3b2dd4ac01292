"""The execution directory: sessions to task hosts, 4002 / 4004, and the file re-read on change (K11.2, K11.3)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.broker.directory import (
    DirectoryError,
    DirectoryFileError,
    Execution,
    FileExecutionDirectory,
    parse_directory,
    replaced_executions,
)

GOOD = {
    "executor": "local",
    "streamUrl": "ws://127.0.0.1:41237/api/v1/lsp/stream",
    "token": "tok-SECRET-0123456789",
    "workspace": "/work/task",
}


def _text(executions: dict[str, Any], sessions: dict[str, str] | None = None) -> str:
    return json.dumps({"sessions": sessions or {"s1": "x1"}, "executions": executions})


def test_a_session_resolves_to_its_execution() -> None:
    contents = parse_directory(_text({"x1": GOOD}))
    execution = contents.resolve("s1")
    assert execution == Execution("x1", "local", GOOD["streamUrl"], GOOD["token"], "/work/task")
    assert "SECRET" not in repr(execution)


@pytest.mark.parametrize(
    ("entry", "code", "words"),
    [
        ({**GOOD, "executor": "sprites"}, 4004, "not supported"),
        ({**GOOD, "executor": "remote_docker", "streamUrl": 3}, 4004, "not supported"),
        ({k: v for k, v in GOOD.items() if k != "executor"}, 4002, "no executor"),
        ({**GOOD, "streamUrl": "http://host/x"}, 4002, "streamUrl"),
        ({**GOOD, "streamUrl": "ws:///path-only"}, 4002, "streamUrl"),
        ({**GOOD, "workspace": "relative/dir"}, 4002, "absolute"),
        ({k: v for k, v in GOOD.items() if k != "token"}, 4002, "neither a token"),
        ({**GOOD, "token": "  "}, 4002, "neither a token"),
        ({**{k: v for k, v in GOOD.items() if k != "token"}, "tokenFile": "rel/tok"}, 4002, "absolute"),
        ("not an object", 4002, "not an object"),
    ],
)
def test_unusable_entries_are_4002_and_unsupported_executors_4004(
    entry: object, code: int, words: str
) -> None:
    contents = parse_directory(_text({"x1": entry}))
    with pytest.raises(DirectoryError, match=words) as caught:
        contents.resolve("s1")
    assert caught.value.code == code
    assert "SECRET" not in str(caught.value)


@pytest.mark.parametrize("sessions", [{"other": "x1"}, {"s1": "missing"}])
def test_an_unknown_session_or_execution_is_4002(sessions: dict[str, str]) -> None:
    with pytest.raises(DirectoryError) as caught:
        parse_directory(_text({"x1": GOOD}, sessions)).resolve("s1")
    assert caught.value.code == 4002


def test_docker_and_a_token_file_are_accepted(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("tok-from-file-0123456789\nignored\n")
    entry = {**{k: v for k, v in GOOD.items() if k != "token"}, "executor": "docker", "tokenFile": str(token)}
    assert parse_directory(_text({"x1": entry})).resolve("s1").token == "tok-from-file-0123456789"
    entry["tokenFile"] = str(tmp_path / "absent")
    with pytest.raises(DirectoryError, match="cannot read its tokenFile"):
        parse_directory(_text({"x1": entry})).resolve("s1")


@pytest.mark.parametrize(
    "text",
    ["{", "[]", json.dumps({"sessions": {"s": 1}}), json.dumps({"sessions": {}, "executions": []})],
)
def test_a_malformed_file_is_refused_as_a_whole(text: str) -> None:
    with pytest.raises(DirectoryFileError):
        parse_directory(text)


def _write(path: Path, text: str, stamp: int) -> None:
    path.write_text(text)
    os.utime(path, ns=(stamp, stamp))


def test_the_file_is_re_read_when_it_changes_and_a_bad_edit_keeps_the_last_good(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "directory.json"
    _write(path, _text({"x1": GOOD}), 1_000_000_000)
    directory = FileExecutionDirectory(path)
    assert directory.resolve("s1").id == "x1"

    _write(path, _text({"x2": GOOD}, {"s1": "x2"}), 2_000_000_000)
    assert directory.resolve("s1").id == "x2"

    _write(path, "{ broken", 3_000_000_000)
    assert directory.resolve("s1").id == "x2"
    assert directory.problem is not None and "not valid JSON" in directory.problem
    # Nested past json's depth: RecursionError, not ValueError, went up through resolve() into the
    # route's connection handler (a traceback, every client of every session refused) instead.
    _write(path, "[" * 5000 + "]" * 5000, 3_500_000_000)
    assert directory.resolve("s1").id == "x2"
    assert directory.problem is not None and "not valid JSON" in directory.problem
    assert "keeping its last good contents" in caplog.text

    _write(path, _text({"x3": GOOD}, {"s1": "x3"}), 4_000_000_000)
    assert directory.resolve("s1").id == "x3" and directory.problem is None


def test_an_unchanged_file_is_not_parsed_again(tmp_path: Path) -> None:
    path = tmp_path / "directory.json"
    _write(path, _text({"x1": GOOD}), 1_000_000_000)
    directory = FileExecutionDirectory(path)
    assert directory.refresh() is False
    _write(path, _text({"x1": {**GOOD, "workspace": "/other"}}), 2_000_000_000)
    assert directory.refresh() is True


def test_a_directory_that_cannot_be_read_at_start_is_an_error_that_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(DirectoryFileError, match="fix it"):
        FileExecutionDirectory(tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text("[]")
    with pytest.raises(DirectoryFileError, match="sessions"):
        FileExecutionDirectory(tmp_path / "bad.json")


def test_replaced_or_removed_executions_are_reported() -> None:
    one = Execution("x1", "local", "ws://a/s", "t", "/w")
    two = Execution("x2", "local", "ws://b/s", "t", "/w")
    moved = Execution("x2", "local", "ws://c/s", "t", "/w")
    assert replaced_executions({"x1": one, "x2": two}, {"x1": one, "x2": two}) == set()
    assert replaced_executions({"x1": one, "x2": two}, {"x2": moved}) == {"x1", "x2"}
