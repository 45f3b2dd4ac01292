"""One exit status per kind of failure, whichever command met it (issue 17 item 9).

Each case runs the real command; the expected status is written here from the documented table, never
read from the code under test. The table itself is checked against the README's and the resolve
contract's, so the documentation cannot drift from the numbers.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from pathlib import Path

import kandev_lsp
import pytest
from clikit import kandev
from kandev_lsp.cli import build_parser
from kandev_lsp.codes import ExitStatus
from kandev_lsp.errors import KandevLspError
from kandev_lsp.lifecycle import LaunchFailure
from kandev_lsp.resolver import MissingReason

PROJECT = Path(__file__).resolve().parents[2]

UNKNOWN_LANGUAGE = [
    ["resolve", "cobol"],
    ["run", "cobol"],
    ["install", "cobol"],
    ["install", "cobol", "--json"],
    ["uninstall", "cobol"],
    ["config", "cobol"],
]

USAGE = [
    ["resolve", "python", "--bogus"],
    ["install", "python", "--sha256", "abcd"],  # npm verifies its own packages: not a release digest
    ["install", "rust", "--sha256", "abcd"],  # a release recipe, but not a SHA-256 digest
    ["install", "python", "--version", "latest"],
    ["install", "go", "--version", "0.14.2"],  # Go module versions start with v
    ["code", "code_symbols", "--json", '["x"]'],
    ["code", "code_symbols", "--json", "{not json"],
    ["resolve", "go", "--platform", "windows"],
    ["run", "go", "--env", "NOEQUALS"],
    ["config", "go", "--bogus"],
    ["serve", "--port", "70000"],  # not a port: the bind raised OverflowError (a traceback, exit 1)
    ["serve", "--port", "-1"],
    ["broker", "--directory", "sessions.json", "--port", "65536"],
    # Durations: above 0, finite, at most a week (1e300 overflowed the socket's timeout: a traceback, 1).
    ["code", "code_hover", "--deadline", "1e300"],
    ["code", "code_hover", "--deadline", "inf"],
    ["code", "code_hover", "--idle-timeout", "0"],
    ["code", "code_hover", "--stall-timeout", "-1"],
    ["mcp", "--deadline", "-1"],  # taken before, as --idle-timeout nan was: a server never idle
    ["mcp", "--idle-timeout", "nan"],
    ["broker", "--directory", "sessions.json", "--detach-timeout", "inf"],
]


@pytest.mark.parametrize("args", UNKNOWN_LANGUAGE, ids=" ".join)
def test_an_unknown_language_is_13_in_every_command(args: list[str], tmp_path: Path) -> None:
    result = kandev(*args, env={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert result.returncode == 13, result.stdout + result.stderr
    assert "unknown language 'cobol'" in result.stdout + result.stderr


@pytest.mark.parametrize("args", USAGE, ids=" ".join)
def test_a_usage_error_is_2_in_every_command(args: list[str], tmp_path: Path) -> None:
    result = kandev(*args, env={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_flag_is_reported_with_the_commands_own_usage(tmp_path: Path) -> None:
    result = kandev("resolve", "python", "--bogus", cwd=tmp_path)
    assert result.stderr.startswith("usage: kandev-lsp resolve ")
    assert "kandev-lsp resolve: error: unrecognized arguments: --bogus" in result.stderr


@pytest.mark.parametrize(
    ("args", "home", "status"),
    [
        (["resolve", "python"], "tmp", ExitStatus.INSTALLABLE_NOT_REQUESTED),
        (["run", "python"], "tmp", ExitStatus.INSTALLABLE_NOT_REQUESTED),
        (["resolve", "kotlin"], "tmp", ExitStatus.NO_INSTALLER),
        (["run", "kotlin"], "tmp", ExitStatus.NO_INSTALLER),
        (["install", "kotlin"], "tmp", ExitStatus.NO_INSTALLER),
        (["resolve", "python"], "relative", ExitStatus.CACHE_UNAVAILABLE),
        (["run", "python"], "relative", ExitStatus.CACHE_UNAVAILABLE),
        (["install", "python"], "relative", ExitStatus.CACHE_UNAVAILABLE),
        (["install", "python", "--json"], "relative", ExitStatus.CACHE_UNAVAILABLE),
        (["uninstall", "python"], "tmp", ExitStatus.OK),  # nothing to remove: the state asked for holds
        (["doctor", "--no-version"], "tmp", ExitStatus.FAILED),  # python and typescript are missing
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else str(value),
)
def test_a_missing_server_has_the_same_status_in_every_command(
    args: list[str], home: str, status: ExitStatus, tmp_path: Path
) -> None:
    # npm and node stay on the PATH (python is installable), no language server is on it.
    task = ["--workspace", str(tmp_path / "ws"), "--env", "PATH=/usr/bin:/bin"]
    task += ["--env", f"HOME={tmp_path if home == 'tmp' else home}"]
    (tmp_path / "ws").mkdir()
    result = kandev(*args, *task)
    assert result.returncode == status, result.stdout + result.stderr


#: Every command that takes a workspace to serve, with what it needs besides.
SERVING = [
    ["code", "code_hover", "--json", "{}"],
    ["code", "code_hover", "--json", "{}", "--no-daemon"],
    ["mcp"],
    ["run", "python"],
    ["serve"],
]


@pytest.mark.parametrize("args", SERVING, ids=" ".join)
@pytest.mark.parametrize("what", ["missing", "a file"])
def test_a_workspace_that_is_not_a_folder_is_a_reported_failure_in_every_command(
    args: list[str], what: str, tmp_path: Path
) -> None:
    """The README's table: a named file or folder that is missing is a reported failure (1), not a usage
    error (2): the flag was well-formed. Every command says it the same way, nothing started."""
    workspace = tmp_path / "ws"
    if what == "a file":
        workspace.write_text("")
    result = kandev(*args, "--workspace", str(workspace), env={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert result.returncode == ExitStatus.FAILED, result.stdout + result.stderr
    kind = "is not an existing folder" if what == "missing" else "is not a folder"
    assert result.stderr == f"kandev-lsp: the workspace {workspace} {kind}; pass --workspace DIR\n"
    assert result.stdout == ""


def test_install_json_names_the_kind_of_failure(tmp_path: Path) -> None:
    result = kandev("install", "python", "--json", "--env", "HOME=relative", "--workspace", str(tmp_path))
    assert json.loads(result.stdout)["status"] == "cache_unavailable"
    usage = kandev("install", "python", "--json", "--sha256", "abcd", "--env", f"HOME={tmp_path}")
    assert usage.returncode == 2 and json.loads(usage.stdout)["status"] == "usage"


def test_uninstall_json_answers_its_failures_in_the_install_schema(tmp_path: Path) -> None:
    """As install --json does; before, uninstall --json printed nothing on stdout when it failed."""
    unknown = kandev("uninstall", "cobol", "--json", "--env", f"HOME={tmp_path}")
    assert unknown.returncode == 13 and json.loads(unknown.stdout)["status"] == "unknown_language"
    folder = tmp_path / ".kandev" / "lsp-servers" / "go"
    folder.mkdir(parents=True)
    (folder / "versions").symlink_to(tmp_path)  # a cache folder it cannot change (see ServerCache)
    failed = kandev(
        "uninstall", "go", "--json", "--env", f"HOME={tmp_path}", "--workspace", str(tmp_path / "ws")
    )
    answer = json.loads(failed.stdout)
    assert failed.returncode == 20 and answer["status"] == "failed" and "symbolic link" in answer["error"]


def test_a_bad_env_file_is_a_reported_failure(tmp_path: Path) -> None:
    for command in (["resolve", "go"], ["install", "go"], ["run", "go"], ["doctor"]):
        result = kandev(*command, "--env-file", str(tmp_path / "absent.env"), cwd=tmp_path)
        assert result.returncode == ExitStatus.FAILED, (command, result.stderr)


def _every_error_class() -> list[type[KandevLspError]]:
    for module in pkgutil.walk_packages(kandev_lsp.__path__, "kandev_lsp."):
        if not module.name.endswith(("__main__", ".pytest_plugin")):
            importlib.import_module(module.name)
    found: list[type[KandevLspError]] = []
    pending: list[type[KandevLspError]] = [KandevLspError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def test_every_kind_of_failure_has_a_status() -> None:
    """The keys every front end maps (missing reasons, launch failures, errors' kinds) are all members."""
    kinds = {reason.value for reason in MissingReason}
    kinds |= {failure.value for failure in LaunchFailure} - {"install_cancelled"}  # run: the editor left
    kinds |= {cls.failure for cls in _every_error_class()}
    for kind in sorted(kinds):
        assert ExitStatus.of(kind).name == kind.upper()


def _documented(path: Path, heading: str) -> dict[int, str]:
    text = path.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    section = section[: section.index("\n#", 1)] if "\n#" in section[1:] else section
    return {int(number): meaning for number, meaning in re.findall(r"^\| (\d+) \| (.+) \|$", section, re.M)}


def test_the_readme_lists_every_status_and_the_resolve_contract_agrees() -> None:
    readme = _documented(PROJECT / "README.md", "### Exit statuses")
    assert sorted(readme) == sorted(status.value for status in ExitStatus)
    contract = _documented(PROJECT / "docs" / "resolve-contract.md", "## Exit codes")
    assert set(contract) <= set(readme)
    assert "unknown language" in contract[13] and "unknown language" in readme[13]
    assert contract[10].startswith("missing, installable") and "installable" in readme[10]


#: What each command can end with besides 2 (usage) and 141 (stdout's reader left), from the README's
#: table (and the resolve contract's), written here, not read from the parsers.
ENDINGS = {
    "languages": [0],
    "plugins": [0, 1],
    "config": [0, 1, 13],
    "resolve": [0, 1, 10, 11, 12, 13],
    "doctor": [0, 1],
    "install": [0, 11, 12, 13, 20],
    "uninstall": [0, 13, 20],
    "list": [0, 1],
    "serve": [0, 1],
    "run": [0, 10, 13, 20, 21, 22, 23],
}


@pytest.mark.parametrize("command", sorted(ENDINGS))
def test_every_commands_help_names_the_statuses_it_ends_with(command: str) -> None:
    """The README: "Each command's --help lists the statuses it can end with". languages, plugins,
    config, list and serve said none, and uninstall left out a cache it cannot change (20)."""
    (commands,) = [action for action in build_parser(command)._actions if action.dest == "command"]
    parser = commands.choices[command]  # type: ignore[index]
    description = " ".join((parser.description or "").split())
    start = re.search("exit", description, re.IGNORECASE)
    assert start, description
    said = description[start.start() :]
    missing = [status for status in ENDINGS[command] if not re.search(rf"(?<![\d.]){status}(?!\d)", said)]
    assert not missing, said
