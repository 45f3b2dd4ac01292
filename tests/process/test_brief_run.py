"""``run_briefly`` (the rustup proxy check in every resolve, ``doctor``'s version probes, the installers'
toolchain checks) owns what it starts, as every other child is owned.

Before, it was ``subprocess.run(capture_output=True, timeout=...)``: a check that timed out lost only its
direct child (a wrapper script's ``sleep`` lived on, re-parented), a script that answered but left a
background child behind waited out the whole timeout for the pipe to close and then reported "no answer"
(and left the child), and everything the child printed was kept in memory until the end: a ``gopls`` on
PATH that floods its output took ``doctor`` to 5 GB in its 5 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from kandev_lsp.probe import run_briefly

if TYPE_CHECKING:
    from conftest import Kit


def none_left(kit: Kit, timeout: float = 5.0) -> bool:
    """No tagged process alive (a SIGKILL is delivered asynchronously: wait for it, bounded)."""
    deadline = time.monotonic() + timeout
    while kit.alive():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def shell_script(kit: Kit, body: str) -> str:
    path = kit.scripts / "check"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_an_answer_comes_when_the_check_exits_and_what_it_left_is_killed(kit: Kit) -> None:
    """A background child holds the pipes open: the answer is taken when the check itself exits."""
    check = shell_script(kit, "sleep 600 &\necho 'tool 1.2.3'")
    outcome = run_briefly([check, "--version"], kit.env, timeout=20)
    assert (outcome.ok, outcome.summary) == (True, "tool 1.2.3")
    assert none_left(kit), kit.alive()


def test_a_check_that_does_not_answer_is_stopped_with_its_whole_group(kit: Kit) -> None:
    check = shell_script(kit, "sleep 600\necho never")
    outcome = run_briefly([check, "--version"], kit.env, timeout=0.5)
    assert (outcome.ok, outcome.summary) == (False, "no answer to --version within 0.5 s")
    assert none_left(kit), kit.alive()


def test_output_past_the_head_is_drained_not_kept(kit: Kit) -> None:
    """64 MiB on stdout, then the version line on stderr: the check ends normally (its pipe is drained),
    and the process that ran it stays small (measured in a fresh interpreter, whose peak is its own: its
    memory's high-water mark VmHWM, not getrusage's ru_maxrss, which Linux carries across exec from the
    forked parent, pytest itself, 360 MiB late in a full run)."""
    check = shell_script(kit, "head -c 67108864 /dev/zero\necho 'tool 1.2.3' >&2")
    program = (
        "import json, sys\n"
        "from kandev_lsp.probe import run_briefly\n"
        "outcome = run_briefly([sys.argv[1]], json.loads(sys.argv[2]), timeout=60)\n"
        "status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
        "peak = int(status.split()[0])\n"
        "print(json.dumps([outcome.ok, len(outcome.output), peak]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, check, json.dumps(kit.env.to_dict())],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    ok, kept, peak_kib = json.loads(done.stdout)
    assert ok and kept <= 4096
    assert peak_kib < 48 * 1024, f"peak {peak_kib} KiB"  # a fresh interpreter: ~20 MiB; before: > 128 MiB
