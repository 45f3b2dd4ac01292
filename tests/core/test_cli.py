"""The CLI as agentctl and people use it: real processes, real gopls from Debian on PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kandev_lsp.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        check=False,
    )


@pytest.fixture
def gopls() -> str:
    path = shutil.which("gopls")
    assert path, "gopls is not installed: .ci/run installs it (apt-get install gopls)"
    return path


def test_resolve_real_gopls_from_task_path(gopls: str, tmp_path: Path) -> None:
    env_file = tmp_path / "task.env"
    env_file.write_text(f"PATH={os.path.dirname(gopls)}\nHOME={tmp_path}\n")
    result = cli("resolve", "go", "--json", "--env-file", str(env_file), "--workspace", str(tmp_path / "ws"))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["status"] == "found" and data["argv"] == [gopls, "serve"] and data["source"] == "PATH[0]"
    # The argv really starts a server that answers.
    version = subprocess.run([data["executable"], "version"], capture_output=True, text=True, check=True)
    assert "golang.org/x/tools/gopls" in version.stdout


def test_resolve_uses_the_task_environment_not_the_agents(gopls: str, tmp_path: Path) -> None:
    go = tmp_path / "toolchain" / "go"  # installable needs the task's go; its gopls is what is looked for
    go.parent.mkdir()
    go.write_text("#!/bin/sh\n")
    go.chmod(0o755)
    path = f"PATH={tmp_path}:{go.parent}"
    result = cli("resolve", "go", "--json", "--env", path, "--env", f"HOME={tmp_path}")
    assert result.returncode == 10
    data = json.loads(result.stdout)
    assert data["reason"] == "installable_not_requested" and data["closeCode"] == 4001


@pytest.mark.parametrize(
    ("language", "code", "reason"),
    [
        ("kotlin", 11, "no_installer"),
        ("cobol", 13, "unsupported_language"),
        ("typescript", 12, "cache_unavailable"),
    ],
)
def test_resolve_exit_codes(tmp_path: Path, language: str, code: int, reason: str) -> None:
    result = cli("resolve", language, "--json", "--env", f"PATH={tmp_path}", "--env", "HOME=relative")
    assert result.returncode == code
    assert json.loads(result.stdout)["reason"] == reason


def test_resolve_explain_lists_every_candidate_in_order(tmp_path: Path) -> None:
    result = cli("resolve", "rust", "--explain", "--env", f"PATH=rel:{tmp_path}", "--env", f"HOME={tmp_path}")
    lines = result.stdout.splitlines()
    assert "skipped" in lines[0] and "relative entry ignored" in lines[0]
    assert f"{tmp_path}/rust-analyzer" in lines[1] and "missing" in lines[1]
    assert "kandev-lsp install rust" in result.stderr


def test_resolve_simulated_windows_platform(tmp_path: Path) -> None:
    result = cli(
        "resolve",
        "rust",
        "--json",
        "--explain",
        "--platform",
        "windows-x86_64",
        "--env",
        r"PATH=C:\tools",
        "--env",
        "HOME=",
        "--env",
        r"USERPROFILE=C:\Users\me",
    )
    data = json.loads(result.stdout)
    assert result.returncode == 11 and data["reason"] == "no_installer"
    assert data["explain"][0]["path"] == r"C:\tools\rust-analyzer.com"


def test_bad_env_file_is_a_clear_error(tmp_path: Path) -> None:
    env_file = tmp_path / "bad.env"
    env_file.write_text("{not json")
    result = cli("resolve", "go", "--env-file", str(env_file))
    assert result.returncode == 1
    assert "not valid JSON" in result.stderr and str(env_file) in result.stderr


def test_languages_and_config(tmp_path: Path) -> None:
    languages = json.loads(cli("languages", "--json").stdout)
    assert [row["id"] for row in languages] == ["go", "kotlin", "python", "rust", "typescript"]
    assert next(r for r in languages if r["id"] == "kotlin")["experimental"] is True
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"lsp_server_configs": {"go": {"gopls": {"staticcheck": True}}}}))
    shown = json.loads(
        cli("config", "go", "--json", "--settings", str(settings), "--section", "go.gopls.staticcheck").stdout
    )
    assert shown["settings"] == {"ui.semanticTokens": True, "gopls": {"staticcheck": True}}
    assert shown["answer"] is True


def test_config_rejects_kotlin_auto_install(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"lsp_auto_install_languages": ["kotlin"]}))
    result = cli("config", "go", "--settings", str(settings))
    assert result.returncode == 1
    assert "lsp_auto_install_languages cannot include ['kotlin']" in result.stderr


def test_doctor_reports_every_language_with_reasons(gopls: str, tmp_path: Path) -> None:
    result = cli(
        "doctor", "--json", "--env", f"PATH={os.path.dirname(gopls)}:/usr/bin", "--env", f"HOME={tmp_path}"
    )
    data = json.loads(result.stdout)
    by_language = {entry["language"]: entry for entry in data["languages"]}
    assert set(by_language) == {"go", "kotlin", "python", "rust", "typescript"}
    direct = subprocess.run([gopls, "version"], capture_output=True, text=True, check=True).stdout
    assert by_language["go"]["status"] == "found"
    assert by_language["go"]["serverVersion"] == direct.strip().splitlines()[0]
    assert by_language["kotlin"]["reason"] == "no_installer"
    assert by_language["python"]["installerAvailable"] is True
    assert result.returncode == 1  # python and typescript are missing in this task
    assert data["toolchains"]


def test_help_and_no_command() -> None:
    assert "resolve" in cli("--help").stdout
    assert cli().returncode == 2


def test_resolve_does_not_import_the_heavy_stacks() -> None:
    probe = (
        "import sys; from kandev_lsp.cli import main\n"
        "try:\n    main(['resolve', 'go', '--json'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('httpx', 'websockets', 'lsprotocol', 'asyncio') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


# Usage errors, kandev-lsp's own variables, output to a closed pipe (issue 7 items 20, 21) ---------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["resolve", "go", "--platform", "windows"], "--platform windows"),
        (["resolve", "go", "--env", "NOEQUALS"], "--env 'NOEQUALS': expected KEY=VALUE"),
        (["doctor", "--env", "=x"], "expected KEY=VALUE"),
        (["resolve", "go", "--env", "KANDEV_LSP_SETTINGS=/m.json"], "pass --settings FILE"),
        (["install", "go", "--env", "KANDEV_LSP_DISABLE_PLUGINS=go"], "from its own environment"),
        (["run", "go", "--env", "KANDEV_LSP_SETTINGS=/m.json"], "pass --settings FILE"),
    ],
)
def test_usage_errors_exit_2_with_what_to_do(args: list[str], message: str, tmp_path: Path) -> None:
    result = cli(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_own_variables_in_an_env_file_are_refused(tmp_path: Path) -> None:
    env_file = tmp_path / "task.env"
    env_file.write_text("PATH=/usr/bin\nKANDEV_LSP_SETTINGS=/mirror.json\n")
    result = cli("resolve", "go", "--env-file", str(env_file))
    assert result.returncode == 2
    assert f"--env-file {env_file} sets KANDEV_LSP_SETTINGS" in result.stderr


@pytest.mark.parametrize(
    "args",
    [["plugins", "--json"], ["languages"], ["resolve", "go", "--json"]],
)
@pytest.mark.parametrize("buffered", [False, True])
def test_a_closed_stdout_ends_quietly(args: list[str], buffered: bool) -> None:
    """``kandev-lsp plugins --json | head`` must not print a BrokenPipeError traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write
    try:
        result = subprocess.run(
            [sys.executable, "-m", "kandev_lsp.cli", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env={k: v for k, v in os.environ.items() if not (buffered and k == "PYTHONUNBUFFERED")},
            check=False,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr, result.stderr
    assert result.returncode == 141


def test_plugins_json_exits_1_on_load_problems_like_the_text_form(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "kandev_lsp_broken-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kandev-lsp-broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[kandev_lsp]\nbroken = kandev_lsp_no_such_module\n")
    env = {"PYTHONPATH": str(site)}
    text = cli("plugins", env=env)
    data = cli("plugins", "--json", env=env)
    assert text.returncode == 1
    assert data.returncode == 1, data.stdout
    assert json.loads(data.stdout)["problems"][0]["plugin"] == "broken"


def test_help_lists_every_command_and_each_command_has_its_own_help() -> None:
    from kandev_lsp.cli import COMMANDS

    listing = cli("--help").stdout
    assert all(name in listing for name in COMMANDS)
    for name in COMMANDS:
        result = cli(name, "--help")
        assert result.returncode == 0 and f"kandev-lsp {name}" in result.stdout


def test_version_prints_the_projects_version() -> None:
    """What a new user types first; before, "error: unrecognized arguments: --version", exit 2."""
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    result = cli("--version")
    assert (result.returncode, result.stdout) == (0, f"kandev-lsp {pyproject['project']['version']}\n")


def test_resolve_registers_only_its_own_subcommand() -> None:
    probe = (
        "import sys; from kandev_lsp.cli import main\n"
        "try:\n    main(['resolve', 'go', '--json'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('kandev_lsp.cli.')"
        " or m in ('shutil', 'logging', 'subprocess', 'platform')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    loaded = out.strip().splitlines()[-1]
    assert loaded == "['kandev_lsp.cli.common', 'kandev_lsp.cli.resolve']", loaded


def test_doctor_and_config_take_settings_and_ignore_languages_without_a_plugin(tmp_path: Path) -> None:
    """A third-party ``c`` in a shared settings file is a warning here, not a failure (item 13)."""
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps({"lsp_auto_start_languages": ["c"], "lsp_server_configs": {"go": {"x": 1}, "c": {}}})
    )
    shown = cli("config", "go", "--json", "--settings", str(settings))
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["settings"]["x"] == 1
    assert "no plugin on this host provides ['c']" in shown.stderr

    doctor = cli("doctor", "--json", "--no-version", "--settings", str(settings), "--env", f"HOME={tmp_path}")
    report = json.loads(doctor.stdout)["settings"]
    assert report["file"] == str(settings) and report["error"] is None
    assert report["ignoredLanguages"] == {"lsp_auto_start_languages": ["c"], "lsp_server_configs": ["c"]}

    settings.write_text(json.dumps({"lsp_auto_install_languages": ["kotlin"]}))
    broken = cli("doctor", "--no-version", "--settings", str(settings), "--env", f"HOME={tmp_path}")
    assert broken.returncode == 1
    assert "!! settings" in broken.stdout and "cannot include ['kotlin']" in broken.stdout


def test_serve_starts_with_a_language_that_has_no_plugin_here(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"lsp_auto_start_languages": ["c", "python"]}))
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kandev_lsp.cli",
            "serve",
            "--settings",
            str(settings),
            "--workspace",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # the listening line, or "" when serve refused to start
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=30)
    assert json.loads(line or "{}").get("event") == "listening", stderr
    assert 'event=settings_ignored_languages languages=["c"]' in stderr


def test_run_ends_without_a_traceback_after_the_editor_leaves(gopls: str, tmp_path: Path) -> None:
    """``run`` hands stdout to its bridge, which closes it: the CLI's final flush must not fail."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
    env = {"PATH": f"{os.path.dirname(gopls)}:/usr/bin:/bin", "HOME": str(tmp_path)}
    editor = subprocess.Popen(
        [sys.executable, "-m", "kandev_lsp.cli", "run", "go", "--workspace", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **env},
    )
    assert editor.stdin is not None and editor.stdout is not None
    editor.stdin.write(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
    editor.stdin.flush()
    headers = b""
    while not headers.endswith(b"\r\n\r\n"):
        headers += editor.stdout.read(1) or b"\r\n\r\n"
    length = int(headers.split(b"Content-Length:")[1].split(b"\r\n")[0])
    answer = json.loads(editor.stdout.read(length))
    editor.stdin.close()  # the editor leaves
    editor.wait(timeout=60)
    assert editor.stderr is not None
    stderr = editor.stderr.read()
    editor.stdout.close()
    editor.stderr.close()
    assert answer["id"] == 1 and "capabilities" in answer["result"]
    assert b"Traceback" not in stderr, stderr.decode()
    assert editor.returncode == 0


def test_resolve_go_without_go_on_the_task_path_promises_no_install(tmp_path: Path) -> None:
    # issue 17 item 6: it answered 10, installable, "Run `kandev-lsp install go`"; the install then failed.
    result = cli("resolve", "go", "--json", "--env", "PATH=", "--env", f"HOME={tmp_path}")
    data = json.loads(result.stdout)
    assert (result.returncode, data["reason"], data["installable"]) == (11, "no_installer", False)
    assert "go was not found on the task's PATH" in data["message"] and "install go`" not in data["message"]


def test_install_without_the_installers_toolchain_refuses_as_resolve_does(tmp_path: Path) -> None:
    result = cli("install", "go", "--json", "--env", "PATH=", "--env", f"HOME={tmp_path}")
    data = json.loads(result.stdout)
    assert (result.returncode, data["status"]) == (11, "no_installer")
    assert "go was not found on the task's PATH" in data["error"]
    assert not (tmp_path / ".kandev").exists()  # refused before the lock: nothing was created
