"""``kandev-lsp`` started with a standard stream closed, as a shell does it (``>&-``, ``<&-``, ``2>&-``):
the command behaves as if that stream were the null device, never a traceback.

Before, Python's ``sys.stdout`` (stdin, stderr) was None in such a process: ``resolve --json``, ``config
--json``, ``code``, ``serve``, ``mcp`` and ``run`` died with ``AttributeError: 'NoneType' object has no
attribute 'write'`` (or ``'buffer'``), and an error printed to a closed stderr came out on stdout.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from kandev_lsp.testing import processes_tagged
from stream_testkit import TAG_VARIABLE, wait_until

if TYPE_CHECKING:
    from stream_testkit import RealServers

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "greeter"
KANDEV = [sys.executable, "-m", "kandev_lsp.cli"]


def shell(redirect: str, *args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """``kandev-lsp ARGS REDIRECT`` run by bash (``REDIRECT`` closes a stream; stdin is otherwise the null
    device); its status, stdout and stderr."""
    done = subprocess.run(
        ["bash", "-c", f'exec "$@" {redirect}', "bash", *KANDEV, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=180,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    "args", [["config", "python", "--json"], ["languages", "--json"], ["code", "--stop"]]
)
def test_a_closed_stdout_takes_the_answer_like_the_null_device(args: list[str], tmp_path: Path) -> None:
    status, _, errors = shell(">&-", *args, cwd=tmp_path)
    assert (status, errors) == (0, "")


def test_an_error_for_a_closed_stderr_is_dropped_not_printed_on_stdout() -> None:
    status, output, _ = shell("2>&-", "resolve", "nosuch")
    assert (status, output) == (13, "")  # the unknown language's status, and nothing on stdout


def test_mcp_with_stdin_closed_ends_as_at_the_end_of_input(tmp_path: Path) -> None:
    status, _, errors = shell("<&-", "mcp", "--workspace", str(tmp_path))
    assert (status, errors) == (0, "")


@pytest.mark.real_server
@pytest.mark.parametrize("redirect", ["<&-", ">&-"])
def test_run_with_stdin_or_stdout_closed_ends_cleanly_and_leaves_nothing(
    redirect: str, real_servers: RealServers, tmp_path: Path
) -> None:
    """stdin closed: the end of input at once (as ``< /dev/null``, issue 17 item 3); stdout closed: the
    server's output has nowhere to go and the editor's input (here: none) ends the run, exit 0 both."""
    workspace = tmp_path / "greeter"
    shutil.copytree(EXAMPLE, workspace)
    tag = uuid.uuid4().hex
    task = {**real_servers.overrides(), TAG_VARIABLE: tag}
    env = [f"--env={key}={value}" for key, value in task.items()]
    status, _, errors = shell(redirect, "run", "python", "--workspace", str(workspace), *env)
    assert "Traceback" not in errors and "AttributeError" not in errors, errors
    assert status == 0, errors
    assert wait_until(lambda: not processes_tagged(TAG_VARIABLE, tag), timeout=10), processes_tagged(
        TAG_VARIABLE, tag
    )


@pytest.mark.parametrize(
    ("redirect", "advice"),
    [("<{file}", "`cat FILE | kandev-lsp run ...`"), (">{file}", "`kandev-lsp run ... | cat > FILE`")],
    ids=["stdin", "stdout"],
)
def test_run_on_a_regular_file_says_where_cat_goes(redirect: str, advice: str, tmp_path: Path) -> None:
    """Before, both refusals said "pipe the input through `cat`", wrong for a stdout sent to a file."""
    file = tmp_path / "messages"
    file.write_text("")
    status, _, errors = shell(redirect.format(file=file), "run", "go", "--workspace", str(tmp_path))
    assert status == 1 and f"Start it from an editor, or put `cat` in between: {advice}." in errors, errors
