"""The task environment: overrides, Windows key folding, HOME rules, env files."""

from __future__ import annotations

from pathlib import Path

import pytest
from kandev_lsp import HostPlatform, TaskEnvironment
from kandev_lsp.errors import TaskEnvironmentError
from kandev_lsp.taskenv import load_env_file

LINUX = HostPlatform("linux", "x86_64")
WINDOWS = HostPlatform("windows", "x86_64")


def test_task_overrides_replace_and_remove_agent_variables() -> None:
    env = TaskEnvironment.from_agent(
        {"PATH": "/task/bin", "SECRET": None, "GOBIN": "/gobin"},
        base={"PATH": "/agent/bin", "SECRET": "x", "KEEP": "1"},
        host=LINUX,
    )
    assert dict(env) == {"PATH": "/task/bin", "KEEP": "1", "GOBIN": "/gobin"}


def test_linux_keys_are_case_sensitive() -> None:
    env = TaskEnvironment({"Path": "/a"}, LINUX)
    assert "PATH" not in env
    assert env.path_entries() == [""]


def test_windows_keys_compare_case_insensitively_and_override_whatever_the_case() -> None:
    env = TaskEnvironment.from_agent(
        {"PATH": r"C:\task"}, base={"Path": r"C:\agent", "pathext": ".EXE"}, host=WINDOWS
    )
    assert env["path"] == r"C:\task"
    assert list(env) == ["pathext", "PATH"]
    assert env.pathext() == (".EXE",)


def test_windows_path_uses_semicolons_and_default_pathext() -> None:
    env = TaskEnvironment({"PATH": r"C:\a;;rel"}, WINDOWS)
    assert env.path_entries() == [r"C:\a", "", "rel"]
    assert env.pathext() == (".COM", ".EXE", ".BAT", ".CMD")


@pytest.mark.parametrize(
    ("variables", "host", "expected"),
    [
        ({"HOME": "/home/t"}, LINUX, "/home/t/.kandev/lsp-servers"),
        ({"HOME": "relative/home"}, LINUX, None),
        ({}, LINUX, None),
        ({"HOME": "", "USERPROFILE": r"C:\Users\t"}, WINDOWS, r"C:\Users\t\.kandev\lsp-servers"),
        ({"HOME": r"D:\h", "USERPROFILE": r"C:\Users\t"}, WINDOWS, r"D:\h\.kandev\lsp-servers"),
        ({"USERPROFILE": r"\no-drive"}, WINDOWS, None),
        # USERPROFILE is only a Windows fallback.
        ({"USERPROFILE": "/home/t"}, LINUX, None),
    ],
)
def test_cache_root_follows_task_home(
    variables: dict[str, str], host: HostPlatform, expected: str | None
) -> None:
    assert TaskEnvironment(variables, host).cache_root() == expected


def test_env_file_as_json_and_as_lines(tmp_path: Path) -> None:
    json_file = tmp_path / "env.json"
    json_file.write_text('{"PATH": "/x", "A": "b=c"}')
    assert load_env_file(str(json_file)) == {"PATH": "/x", "A": "b=c"}
    lines = tmp_path / "env"
    lines.write_text("# comment\nPATH=/x:/y\n\nA=b=c\n")
    assert load_env_file(str(lines)) == {"PATH": "/x:/y", "A": "b=c"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"PATH": 1}', "every key and value must be a string"),
        ('{"PATH": ', "not valid JSON"),
        ("JUSTAWORD\n", "line 1: expected KEY=VALUE"),
    ],
)
def test_bad_env_files_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "env"
    path.write_text(text)
    with pytest.raises(TaskEnvironmentError, match=message):
        load_env_file(str(path))


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("GITHUB_TOKEN ghp_s3cr3tValue", "it has no '='"),
        ("=ghp_s3cr3tValue", "nothing comes before its '='"),
        # Was a variable named 'export GITHUB_TOKEN': the task's token (or PATH) silently not set.
        (
            "export GITHUB_TOKEN=ghp_s3cr3tValue",
            "the name before its '=' holds a space (an 'export' line from a shell",
        ),
        ("Bearer ghp_s3cr3tValue=", "the name before its '=' holds a space (a line from a shell file?)"),
    ],
)
def test_a_malformed_line_is_named_by_number_never_quoted(tmp_path: Path, line: str, problem: str) -> None:
    """An env file carries the task's secrets: the error (which lands in the caller's log) says which
    line and what is wrong with it, never what it holds. Before, it quoted the line's first 40 characters."""
    path = tmp_path / "env"
    path.write_text(f"A=b\n{line}\n")
    with pytest.raises(TaskEnvironmentError) as raised:
        load_env_file(str(path))
    assert f"line 2: expected KEY=VALUE, but {problem}" in str(raised.value)
    assert "s3cr3t" not in str(raised.value)


@pytest.mark.parametrize("text", ["PATH=/x\nA=b\n", '{"PATH": "/x", "A": "b"}'], ids=["lines", "json"])
def test_a_byte_order_mark_is_not_part_of_the_first_key(tmp_path: Path, text: str) -> None:
    """Before, a BOM made the first key '\ufeffPATH' (the task's PATH silently not applied) or, in front of
    JSON, turned the file into a malformed KEY=VALUE line."""
    path = tmp_path / "env"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert load_env_file(str(path)) == {"PATH": "/x", "A": "b"}


def test_missing_env_file() -> None:
    with pytest.raises(TaskEnvironmentError, match="cannot read task environment file"):
        load_env_file("/nonexistent/env")


def test_platform_parse_and_absolute_rules() -> None:
    assert HostPlatform.parse("darwin-aarch64") == HostPlatform("darwin", "aarch64")
    with pytest.raises(ValueError, match="not a platform"):
        HostPlatform.parse("beos-x86")
    assert WINDOWS.is_absolute(r"C:\x") and not WINDOWS.is_absolute(r"\x") and not WINDOWS.is_absolute("C:x")
    assert LINUX.is_absolute("/x") and not LINUX.is_absolute("x") and not LINUX.is_absolute("")
