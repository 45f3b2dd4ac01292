"""Which calls share a daemon (follow-up 3 of issue 19): a variable that only says which terminal, session
or command a call came from never starts another daemon; one a server or its toolchain reads (PATH) does;
and a workspace set runs at most ``MAX_DAEMONS`` of them, the least recently used idle one making room.

The calls ask about a file that is not there: the daemon answers that itself (exit 1), so no language
server is started and each daemon costs only its own start.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_kit import Caller, wait_until
from kandev_lsp.codedaemon.lifetime import MAX_DAEMONS
from stream_testkit import tagged_alive

#: Answered by the daemon without a server: the workspace has no such file.
ABSENT = {"target": {"path": "absent.py", "symbol": "f"}}


@pytest.fixture
def light(tmp_path: Path, runtime_folder: Path, tag: str) -> Iterator[Caller]:
    """A caller without the real servers' cache (no call here starts a server); stopped after the test."""
    found = Caller(tmp_path, runtime_folder, tag, {})
    found.settings.write_text("{}")  # no start-up notice: stderr says only what these calls say
    yield found
    found.run("--stop", check=False)
    wait_until(lambda: not tagged_alive(tag), timeout=30, what="the test's daemons to exit")


def _ask(caller: Caller, env: dict[str, str]) -> str:
    """One call with these variables on top of the caller's environment; its stderr."""
    caller.env.update(env)
    done = caller.run("code_hover", "--json", json.dumps(ABSENT))
    assert done.returncode == 1 and "no file 'absent.py'" in json.loads(done.stdout)["error"], done.stderr
    return done.stderr


def _per_command(n: int) -> dict[str, str]:
    """What a terminal, an ssh connection or a harness sets differently for each command."""
    return {
        "COLUMNS": str(80 + n),
        "LINES": str(24 + n),
        "TMUX_PANE": f"%{n}",
        "SSH_CLIENT": f"10.0.0.1 {50000 + n} 22",
        "SSH_CONNECTION": f"10.0.0.1 {50000 + n} 10.0.0.2 22",
        "SSH_AUTH_SOCK": f"/tmp/ssh-{n}/agent.{n}",
        "TERM_SESSION_ID": f"w0t0p0:{n}",
        "WINDOWID": str(4000 + n),
        "PYTEST_CURRENT_TEST": f"t.py::test_{n} (call)",
        "INVOCATION_ID": f"{n:032x}",
    }


def test_a_variable_that_changes_with_every_command_reuses_one_daemon(light: Caller) -> None:
    for n in range(3):
        assert _ask(light, _per_command(n)) == ""
    assert len(light.daemons()) == 1 and len(light.sockets()) == 1


def test_a_changed_path_gets_a_daemon_of_its_own_and_the_first_is_still_reused(light: Caller) -> None:
    path = light.env["PATH"]
    _ask(light, {})
    (first,) = light.daemons()
    _ask(light, {"PATH": f"{path}:/opt/other-toolchain/bin"})
    assert len(light.daemons()) == 2 and len(light.sockets()) == 2
    _ask(light, {"PATH": path})
    assert first in light.daemons() and len(light.daemons()) == 2


def test_a_configuration_past_the_cap_replaces_the_least_recently_used_idle_daemon(light: Caller) -> None:
    path = light.env["PATH"]
    variants = [f"{path}:/opt/toolchain-{n}/bin" for n in range(MAX_DAEMONS + 1)]
    pids: list[int] = []
    for variant in variants[:MAX_DAEMONS]:
        assert _ask(light, {"PATH": variant}) == ""
        (started,) = set(light.daemons()) - set(pids)
        pids.append(started)
        time.sleep(0.01)  # the sockets' mtimes order the daemons' last calls
    assert _ask(light, {"PATH": variants[0]}) == ""  # the first is used again: the second is the oldest
    said = _ask(light, {"PATH": variants[MAX_DAEMONS]})
    assert f"replaced the idle daemon (pid {pids[1]})" in said and "differs from its in $PATH (" in said
    wait_until(lambda: pids[1] not in light.daemons(), timeout=30, what="the replaced daemon to exit")
    assert len(light.daemons()) == MAX_DAEMONS and len(light.sockets()) == MAX_DAEMONS
    assert {pids[0], pids[2]} <= set(light.daemons())
    assert "event=code_daemon_stopped reason=replaced" in _logs(light)


def _logs(caller: Caller) -> str:
    return "".join(path.read_text() for path in caller.runtime.glob("*.log"))


def test_arguments_that_are_not_utf8_are_answered_through_the_daemon_as_without_it(light: Caller) -> None:
    """A byte that is not UTF-8 in ``--json`` (Python's argv holds it as a lone surrogate): the one-shot
    path answered what was wrong with the arguments, quoting it; the daemon path ended in a
    UnicodeEncodeError traceback (the request could not be written, nor could the reply)."""
    _ask(light, {})  # a daemon runs: the next call is its (a refusal alone would start none)
    (daemon,) = light.daemons()
    odd = json.dumps({"target": {"path": "absent.py", "line": 1}, "caf\udcff": 1}, ensure_ascii=False)
    warm = light.run("code_hover", "--json", odd)
    cold = light.run("code_hover", "--json", odd, "--no-daemon")
    assert warm.returncode == cold.returncode == 1, (warm.stderr, cold.stderr)
    assert "Traceback" not in warm.stderr, warm.stderr
    assert warm.stdout == cold.stdout and warm.stderr == cold.stderr, (warm, cold)
    assert r"unknown argument `caf\udcff`" in warm.stdout, warm.stdout  # JSON-escaped, as printed
    assert light.daemons() == [daemon]  # it answered, and still serves
