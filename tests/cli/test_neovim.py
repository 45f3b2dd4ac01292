"""``kandev-lsp run`` in a real editor: headless Neovim (Debian's nvim 0.7.2, installed by scripts/setup)
with its built-in LSP client, on the example project in examples/greeter (issue 17 item 11).

Neovim starts ``kandev-lsp run LANG`` as it would any server, gets the planted mistake as a diagnostic and
the definition and hover of the call, quits (:qa!, so Neovim's own exit path stops the client), and the
test sees kandev-lsp exit 0 (no signal) and nothing it started left alive.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kandev_lsp.testing import processes_tagged
from stream_testkit import TAG_VARIABLE, wait_until

if TYPE_CHECKING:
    from stream_testkit import RealServers

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "greeter"
CLIENT = Path(__file__).with_name("neovim_client.lua")

#: language -> (file, 0-based line and character of the ``greet`` call with the wrong argument, the
#: file its definition is in, a word of its hover).
CASES = {
    "python": ("app.py", 5, 6, "greet.py", "name: str"),
    "typescript": ("app.ts", 4, 12, "greet.ts", "name: string"),
}


def neovim() -> str:
    path = shutil.which("nvim")
    assert path, "nvim is not installed: scripts/setup installs it (apt-get install neovim)"
    return path


def drive_neovim(language: str, workspace: Path, real_servers: RealServers, tag: str) -> dict[str, Any]:
    file, line, character, _, _ = CASES[language]
    task = {**real_servers.overrides(), TAG_VARIABLE: tag}
    command = [sys.executable, "-m", "kandev_lsp.cli", "run", language, "--workspace", str(workspace)]
    command += [f"--env={key}={value}" for key, value in task.items()]
    files = {"KANDEV_RESULT": workspace.parent / "result.json", "KANDEV_EXIT": workspace.parent / "exit.json"}
    env = {
        **os.environ,
        TAG_VARIABLE: tag,  # Neovim and kandev-lsp carry the tag too, so nothing of the run can hide
        "HOME": str(workspace.parent / "editor-home"),
        "XDG_CONFIG_HOME": str(workspace.parent / "editor-config"),
        "XDG_DATA_HOME": str(workspace.parent / "editor-data"),
        "XDG_STATE_HOME": str(workspace.parent / "editor-state"),
        "XDG_CACHE_HOME": str(workspace.parent / "editor-cache"),
        "KANDEV_CMD": json.dumps(command),
        "KANDEV_ROOT": str(workspace),
        "KANDEV_FILE": str(workspace / file),
        "KANDEV_LINE": str(line),
        "KANDEV_CHARACTER": str(character),
        **{name: str(path) for name, path in files.items()},
    }
    editor = subprocess.run(
        [neovim(), "--headless", "--clean", "-n", "-i", "NONE", "-c", f"luafile {CLIENT}"],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert editor.returncode == 0, editor.stdout + editor.stderr
    seen: dict[str, Any] = json.loads(files["KANDEV_RESULT"].read_text())
    seen["exit"] = json.loads(files["KANDEV_EXIT"].read_text()) if files["KANDEV_EXIT"].exists() else None
    seen["editorOutput"] = editor.stdout + editor.stderr
    return seen


@pytest.mark.real_server
@pytest.mark.parametrize("language", sorted(CASES))
def test_neovim_gets_diagnostics_definition_and_hover_then_run_exits_0(
    language: str, real_servers: RealServers, tmp_path: Path
) -> None:
    workspace = tmp_path / "greeter"
    shutil.copytree(EXAMPLE, workspace)
    tag = uuid.uuid4().hex
    seen = drive_neovim(language, workspace, real_servers, tag)
    file, line, _, defined_in, hover_word = CASES[language]
    assert seen["errors"] == [], seen

    diagnostics = seen["diagnostics"]
    assert diagnostics["uri"] == (workspace / file).as_uri()
    [mistake] = [d for d in diagnostics["diagnostics"] if d["severity"] == 1]
    assert mistake["range"]["start"]["line"] == line

    definition = seen["textDocument/definition"]
    locations = definition if isinstance(definition, list) else [definition]
    uris = {location.get("uri") or location.get("targetUri") for location in locations}
    assert uris == {(workspace / defined_in).as_uri()}

    hover = seen["textDocument/hover"]["contents"]
    text = hover["value"] if isinstance(hover, dict) else json.dumps(hover)
    assert hover_word in text

    assert seen["exit"] == {"code": 0, "signal": 0}, seen["editorOutput"]
    assert wait_until(lambda: not processes_tagged(TAG_VARIABLE, tag), timeout=10), processes_tagged(
        TAG_VARIABLE, tag
    )
