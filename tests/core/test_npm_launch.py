"""A server kandev-lsp installed with npm resolves to ``node <script>``, with a node the task cannot plant
(issue 17 item 1). These are the resolver's rules on a real temporary folder laid out as npm lays out the
cache (a ``.bin`` symlink to the package's script); the real installs and servers are in
tests/install/test_planted_node.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import kandev_lsp_python
import pytest
from kandev_lsp.host import PluginHost
from kandev_lsp.launchers import looks_node_up, runs_on_node
from kandev_lsp.testing import make_plugin_host, make_task, resolve_in

SCRIPT = "node_modules/pyright/langserver.index.js"


@pytest.fixture
def plugins() -> PluginHost:
    return make_plugin_host(kandev_lsp_python)


def executable(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def npm_layout(home: Path, receipt: dict[str, object] | None = None) -> tuple[Path, Path]:
    """``current -> versions/1+ab`` with pyright's script behind a ``.bin`` symlink; the script's path."""
    language = home / ".kandev" / "lsp-servers" / "python"
    version = language / "versions" / "1.1.414+abcd1234"
    script = executable(version / SCRIPT, "#!/usr/bin/env node\nrequire('./dist/langserver');\n")
    launcher = version / "node_modules" / ".bin" / "pyright-langserver"
    launcher.parent.mkdir(parents=True)
    launcher.symlink_to(os.path.join("..", "pyright", "langserver.index.js"))
    (language / "current").symlink_to(os.path.join("versions", version.name))
    if receipt is not None:
        (version / "receipt.json").write_text(json.dumps(receipt_json(**receipt)))
    return language / "current" / "node_modules" / ".bin" / "pyright-langserver", script


def receipt_json(**fields: object) -> dict[str, object]:
    return {
        "schema": "kandev-lsp/install-receipt", "version": 1, "language": "python", "plugin": "python",
        "pluginVersion": "0.1.0", "recipe": "npm", "serverVersion": "1.1.414", "packages": ["pyright@1.1.414"],
        "identity": "npm pyright@1.1.414", "source": "npm registry", "sha256": None,
        "executable": "node_modules/.bin/pyright-langserver", "installedAt": "2026-12-01T00:00:00Z",
        "toolchain": {}, **fields,
    }  # fmt: skip


def test_an_npm_launcher_runs_as_node_and_its_script_never_through_the_task_paths_first_node(
    plugins: PluginHost, tmp_path: Path
) -> None:
    workspace = tmp_path / "repo"
    planted = executable(workspace / "node_modules" / ".bin" / "node")
    trusted = executable(tmp_path / "nodejs" / "bin" / "node")
    launcher, script = npm_layout(tmp_path / "home")  # an install older than the receipt's script field
    task = make_task(
        str(workspace), path=[str(planted.parent), str(trusted.parent)], home=str(tmp_path / "home")
    )
    found = resolve_in(plugins, "python", task)
    assert found.found and found.executable == str(launcher) and found.source == "managed cache"
    assert found.argv == (str(trusted), str(script), "--stdio")
    assert found.command == (str(trusted), str(script))
    assert f"runs as {trusted} {script} (node from the task's PATH)" in found.trail[-1].reason


def test_the_node_recorded_at_install_is_used_while_it_may_run_then_the_trusted_lookup(
    plugins: PluginHost, tmp_path: Path
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "repo"
    workspace.mkdir()
    recorded = executable(tmp_path / "recorded" / "node")
    on_path = executable(tmp_path / "nodejs" / "node")
    _, script = npm_layout(home, {"interpreter": str(recorded), "script": SCRIPT})
    task = make_task(str(workspace), path=[str(on_path.parent)], home=str(home))
    assert resolve_in(plugins, "python", task).command == (str(recorded), str(script))

    # A node recorded for one task may lie inside another task's workspace: never run from there.
    inside = make_task(str(tmp_path / "recorded"), path=[str(on_path.parent)], home=str(home))
    used = resolve_in(plugins, "python", inside)
    assert used.command == (str(on_path), str(script))
    assert f"the node recorded at install, {recorded}, cannot be used" in used.trail[-1].reason

    recorded.unlink()  # upgraded or removed: the task's own trusted node takes its place, and it says so
    replaced = resolve_in(plugins, "python", task)
    assert replaced.command == (str(on_path), str(script))
    assert (
        "the node recorded at install" in replaced.trail[-1].reason
        and "no such file" in replaced.trail[-1].reason
    )


def test_without_a_node_outside_the_workspace_the_launcher_is_refused_and_named(
    plugins: PluginHost, tmp_path: Path
) -> None:
    workspace = tmp_path / "repo"
    planted = executable(workspace / "node_modules" / ".bin" / "node")
    launcher, _ = npm_layout(tmp_path / "home")
    task = make_task(str(workspace), path=[str(planted.parent)], home=str(tmp_path / "home"))
    missing = resolve_in(plugins, "python", task)
    assert not missing.found
    [refused] = [step for step in missing.trail if step.path == str(launcher)]
    assert refused.verdict == "rejected" and "its interpreter node was not found" in refused.reason
    assert "inside the task workspace; never run" in refused.reason
    assert str(launcher) in missing.message  # "was not found usable (<launcher>: ...)"


def test_a_launcher_that_is_not_a_node_script_starts_as_it_is(plugins: PluginHost, tmp_path: Path) -> None:
    launcher = executable(
        tmp_path / "home" / ".kandev" / "lsp-servers" / "python" / "current" / "node_modules" / ".bin"
        / "pyright-langserver"
    )  # fmt: skip
    task = make_task(str(tmp_path / "repo"), path=[], home=str(tmp_path / "home"))
    assert resolve_in(plugins, "python", task).argv == (str(launcher), "--stdio")


@pytest.mark.parametrize(
    ("head", "node"),
    [
        (b"#!/usr/bin/env node\nrequire('x')", True),
        (b"#!/usr/bin/env -S node --max-old-space-size=4096\n", True),
        (b"#!/opt/node-v20/bin/node\n", True),
        (b"#! /usr/bin/nodejs\n", True),
        (b"#!/usr/bin/env FOO=1 node\n", True),
        (b"#!/bin/sh\nexec node x.js\n", False),
        (b"#!/usr/bin/env python3\n", False),
        (b"\x7fELF\x02\x01", False),
        (b"", False),
    ],
)
def test_runs_on_node_reads_the_shebang_line(head: bytes, node: bool) -> None:
    assert runs_on_node(head) is node


@pytest.mark.parametrize(
    ("head", "on_path"),
    [
        (b"#!/usr/bin/env node\n", True),
        (b"#!/usr/bin/env -S node --flag\n", True),
        (b"#!/opt/node-v20/bin/node\n", False),  # names its node: no PATH lookup to plant into
        (b"#!/usr/bin/env python3\n", False),
        (b"\x7fELF", False),
    ],
)
def test_looks_node_up_is_an_env_shebang_for_node(head: bytes, on_path: bool) -> None:
    assert looks_node_up(head) is on_path


def test_a_receipt_that_is_not_a_regular_file_is_no_receipt_and_never_blocks(
    plugins: PluginHost, tmp_path: Path
) -> None:
    """A FIFO at ``receipt.json``: opening it to read would wait for a writer that never comes, and
    ``resolve`` (on agentctl's hot path) would hang. It counts as no receipt, at once."""
    import threading

    home, workspace = tmp_path / "home", tmp_path / "repo"
    workspace.mkdir()
    on_path = executable(tmp_path / "nodejs" / "node")
    _, script = npm_layout(home)
    receipt = script.parents[2] / "receipt.json"
    os.mkfifo(receipt)
    task = make_task(str(workspace), path=[str(on_path.parent)], home=str(home))
    answers: list[tuple[str, ...]] = []
    resolving = threading.Thread(
        target=lambda: answers.append(resolve_in(plugins, "python", task).command), daemon=True
    )
    resolving.start()
    resolving.join(20)
    if resolving.is_alive():  # unblock it: a writer opens the FIFO and leaves
        os.close(os.open(receipt, os.O_WRONLY | os.O_NONBLOCK))
        resolving.join(20)
        pytest.fail("resolve waited on the FIFO at the receipt's place")
    assert answers == [(str(on_path), str(script))]


def test_a_node_script_on_the_task_path_runs_on_the_trusted_node_not_a_planted_one(tmp_path: Path) -> None:
    """A user's own ``npm install -g`` server is a ``#!/usr/bin/env node`` script on the task's PATH;
    started as it is, env took the first node of the child's PATH, whose absolute workspace entries are
    kept: a repository's ``node_modules/.bin/node`` first on the PATH was its interpreter (issue 17 item 1
    for a server kandev-lsp did not install). A real ``kandev-lsp run`` with a stand-in server that
    records its interpreter, and a planted node that logs every run."""
    import subprocess
    import sys
    import time

    workspace, log, seen = tmp_path / "repo", tmp_path / "planted.log", tmp_path / "interpreter"
    planted = executable(workspace / "node_modules" / ".bin" / "node", f'#!/bin/sh\necho "$*" >> {log}\n'
                         f'exec /usr/bin/node "$@"\n')  # fmt: skip
    script = executable(
        tmp_path / "global" / "lib" / "server.js",
        f"#!/usr/bin/env node\nrequire('fs').writeFileSync({json.dumps(str(seen))}, process.argv[0]);\n"
        "process.stdin.resume();\n",
    )
    (tmp_path / "global" / "bin").mkdir()
    (tmp_path / "global" / "bin" / "typescript-language-server").symlink_to(script)
    path = f"{planted.parent}:{tmp_path / 'global' / 'bin'}:/usr/bin:/bin"
    argv = [sys.executable, "-m", "kandev_lsp.cli", "run", "typescript", "--workspace", str(workspace),
            "--env", f"PATH={path}", "--env", f"HOME={tmp_path / 'home'}"]  # fmt: skip
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as run:
        deadline = time.monotonic() + 60
        while not seen.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        _, errors = run.communicate(b"", timeout=60)
    assert seen.exists(), errors.decode()
    assert not log.exists(), log.read_text()
    assert os.path.realpath(seen.read_text()) == os.path.realpath("/usr/bin/node")
