"""``kandev-lsp code`` through its warm daemon, with real pyright: the cold call starts one detached daemon,
the warm call reuses it and its server and answers the same JSON as the one-shot path; the daemon sees a
file changed between calls, exits when idle, on ``--stop`` and when its workspace goes, is replaced after
a crash (its leftovers swept), starts once for concurrent first calls, and restarts on a settings change.
Each test's daemons and servers must be gone after it (``caller`` and ``tag`` fixtures)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from typing import Any

import pytest
from daemon_kit import REFERENCES, Caller, wait_until
from kandev_lsp.codedaemon import client
from kandev_lsp.process import reap_marked
from stream_testkit import TAG_VARIABLE

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]

#: An interpreter another user may run (the test suite's may sit in a folder only root can enter).
SYSTEM_PYTHON = "/usr/bin/python3"
#: Modules a warm call must not have imported when it connects to its daemon (issue 19).
HEAVY = (
    "asyncio",
    "mcp",
    "pluggy",
    "subprocess",
    "filelock",
    "kandev_lsp.intel",
    "kandev_lsp.host",
    "kandev_lsp.resolver",
    "kandev_lsp.settings",
    "kandev_lsp.process",
)


def _timeless(result: dict[str, Any]) -> dict[str, Any]:
    """A result without the provider's measured duration (the one field that differs between runs)."""
    provider = {key: value for key, value in result["provider"].items() if key != "durationMs"}
    return {**result, "provider": provider}


def _log(caller: Caller) -> str:
    (socket,) = caller.sockets()
    return socket.with_suffix(".log").read_text()


def test_cold_call_starts_a_detached_daemon_and_the_warm_call_reuses_it(caller: Caller) -> None:
    status, cold = caller.call("code_navigate", REFERENCES)
    assert status == 0 and cold["summary"] == "5 references · 2 files"
    (daemon,) = caller.daemons()
    (server,) = caller.servers()
    (socket,) = caller.sockets()

    # Detached: its own session, not the caller's child, / as its folder, stdin and stdout on the null
    # device, stderr its log in the runtime folder, and no descriptor of the caller's.
    assert os.getsid(daemon) not in (os.getsid(0), daemon)
    assert os.readlink(f"/proc/{daemon}/cwd") == "/"
    descriptors = {int(fd): os.readlink(f"/proc/{daemon}/fd/{fd}") for fd in os.listdir(f"/proc/{daemon}/fd")}
    assert descriptors[0] == descriptors[1] == "/dev/null"
    assert descriptors[2] == str(socket.with_suffix(".log"))
    files = {target for fd, target in descriptors.items() if fd > 2 and target.startswith("/")}
    assert files <= {"/dev/null"}, files  # sockets, pipes, inotify and epoll are not paths
    # Private: an owner-only folder and socket.
    assert stat.S_IMODE(caller.runtime.stat().st_mode) == 0o700
    assert stat.S_ISSOCK(socket.stat().st_mode) and stat.S_IMODE(socket.stat().st_mode) == 0o600

    status, warm = caller.call("code_navigate", REFERENCES)
    assert status == 0 and _timeless(warm) == _timeless(cold)
    assert caller.daemons() == [daemon] and caller.servers() == [server]  # warm: nothing started again

    # Same JSON as the one-shot path (which starts and stops a pyright of its own).
    status, one_shot = caller.call("code_navigate", REFERENCES, "--no-daemon")
    assert status == 0 and _timeless(one_shot) == _timeless(cold)
    assert caller.daemons() == [daemon]


def test_a_warm_call_imports_nothing_heavy_before_it_asks_the_daemon(caller: Caller) -> None:
    assert caller.call("code_navigate", REFERENCES)[0] == 0
    argv = caller.argv("code_navigate", "--json", json.dumps(REFERENCES))[1:]
    probe = (
        "import sys\n"
        "def hook(event, args):\n"
        "    if event == 'socket.connect':\n"
        f"        heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "        print('connect', heavy, file=sys.stderr, flush=True)\n"
        "sys.addaudithook(hook)\n"
        "from kandev_lsp.cli import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=caller.env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == "connect []", done.stderr
    assert json.loads(done.stdout)["summary"] == "5 references · 2 files"


def test_a_file_changed_between_two_calls_is_seen_by_the_second(caller: Caller) -> None:
    """References and diagnostics after plain writes: the changed file's, and a dependent's (the freshness
    rule of issue 20: ``current`` only after the server had the change)."""
    assert caller.call("code_navigate", REFERENCES)[1]["summary"] == "5 references · 2 files"
    (daemon,) = caller.daemons()
    app = caller.workspace / "app.py"
    app.write_text(app.read_text() + '\n\ndef again() -> str:\n    return greet("third")\n')  # a plain write
    status, after = caller.call("code_navigate", REFERENCES)
    assert status == 0 and after["summary"] == "6 references · 2 files", after

    diagnostics = {"path": "app.py"}
    before = caller.call("code_diagnostics", diagnostics)[1]
    assert before["status"] == "current" and before["counts"]["error"] == 1, before  # value: int = greet(...)
    lib = caller.workspace / "lib.py"
    lib.write_text(lib.read_text().replace("excited: bool = False", "excited: bool"))  # now required
    changed = caller.call("code_diagnostics", diagnostics)[1]
    missing = [p for p in changed["problems"] if 'Argument missing for parameter "excited"' in p["message"]]
    assert changed["status"] == "current" and len(missing) == 3, changed  # main x2, again()
    assert caller.daemons() == [daemon]


def test_the_daemon_exits_when_idle_and_takes_its_server_with_it(caller: Caller) -> None:
    assert caller.call("code_navigate", REFERENCES, "--idle-timeout", "2")[0] == 0
    assert caller.daemons() and caller.servers()
    log = caller.sockets()[0].with_suffix(".log")
    wait_until(lambda: not caller.daemons() and not caller.servers(), timeout=60, what="the idle daemon")
    assert caller.sockets() == []
    assert "event=code_daemon_stopped reason=idle" in log.read_text()


def test_stop_answers_once_the_servers_are_stopped(caller: Caller) -> None:
    assert caller.call("code_navigate", REFERENCES)[0] == 0
    (daemon,) = caller.daemons()
    done = caller.run("--stop")
    assert done.returncode == 0 and json.loads(done.stdout)["stopped"] == [daemon]
    assert caller.servers() == []  # stopped before the answer
    wait_until(lambda: not caller.daemons(), timeout=30, what="the stopped daemon to exit")
    assert caller.sockets() == []
    again = json.loads(caller.run("--stop").stdout)
    assert again == {"ok": True, "stopped": [], "summary": "no daemon was running for these workspaces"}


def test_a_killed_daemon_is_replaced_and_what_it_left_is_swept(caller: Caller) -> None:
    assert caller.call("code_navigate", REFERENCES)[0] == 0
    (daemon,) = caller.daemons()
    (socket,) = caller.sockets()
    (line,) = socket.with_suffix(".owner").read_text().splitlines()
    token = line.split()[1]
    # A grandchild of the daemon that a kill re-parents (tsserver under typescript-language-server): it
    # carries the daemon's owner token, as everything under the daemon does.
    orphan = subprocess.Popen(
        ["/bin/sleep", "300"], env={"KANDEV_LSP_OWNER": f"outer {token}", TAG_VARIABLE: caller.tag}
    )
    os.kill(daemon, signal.SIGKILL)
    wait_until(lambda: not caller.daemons() and not caller.servers(), timeout=30, what="the killed daemon")
    assert caller.sockets() == [socket]  # stale: nobody listens on it
    status, result = caller.call("code_navigate", REFERENCES)
    assert status == 0 and result["summary"] == "5 references · 2 files"
    (successor,) = caller.daemons()
    assert successor != daemon
    assert orphan.wait(timeout=30) == -signal.SIGKILL  # swept by the successor


def test_concurrent_first_calls_start_one_daemon(caller: Caller) -> None:
    argv = caller.argv("code_navigate", "--json", json.dumps(REFERENCES))
    calls = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=caller.env)
        for _ in range(3)
    ]
    outputs = [call.communicate(timeout=240) for call in calls]
    assert [call.returncode for call in calls] == [0, 0, 0], outputs
    assert {json.loads(out)["summary"] for out, _ in outputs} == {"5 references · 2 files"}
    assert len(caller.daemons()) == 1 and len(caller.servers()) == 1
    (socket,) = caller.sockets()
    assert _log(caller).count("event=code_daemon_started") == 1
    assert not socket.with_suffix(".log.1").exists()  # each start keeps its predecessor's log there


def test_a_settings_change_reaches_the_next_call(caller: Caller) -> None:
    hover = {"target": {"path": "lib.py", "symbol": "greet"}}
    assert caller.call("code_hover", hover)[0] == 0
    (daemon,) = caller.daemons()
    caller.settings.write_text(json.dumps({"lsp_disabled_tools": ["code_hover"]}))
    status, refused = caller.call("code_hover", hover)
    assert status == 1 and "code_hover is disabled" in refused["error"], refused
    wait_until(lambda: daemon not in caller.daemons(), timeout=30, what="the daemon of the old settings")
    assert len(caller.daemons()) == 1  # its successor, under the new settings


def test_a_settings_file_that_turned_invalid_is_refused_as_the_one_shot_path_refuses_it(
    caller: Caller,
) -> None:
    """The one-shot path reads the settings file at each call and refuses one that is not valid JSON
    (exit 1, saying so); a warm daemon must not answer from the last good settings instead."""
    assert caller.call("code_navigate", REFERENCES)[0] == 0
    (daemon,) = caller.daemons()
    caller.settings.write_text('{"lsp_disabled_tools": [')  # a half-saved edit
    one_shot = caller.run("code_navigate", "--json", json.dumps(REFERENCES), "--no-daemon", check=False)
    assert one_shot.returncode == 1 and "is not valid JSON" in one_shot.stderr, one_shot.stderr
    warm = caller.run("code_navigate", "--json", json.dumps(REFERENCES), check=False)
    assert (warm.returncode, warm.stdout) == (1, ""), warm.stdout
    assert "is not valid JSON" in warm.stderr and "warning" not in warm.stderr, warm.stderr
    caller.settings.write_text("{}")
    assert caller.call("code_navigate", REFERENCES)[0] == 0  # a daemon of the repaired settings
    wait_until(lambda: daemon not in caller.daemons(), timeout=30, what="the daemon of the old settings")
    assert len(caller.daemons()) == 1


def test_what_a_one_shot_call_says_on_stderr_at_its_start_every_warm_call_says_too(caller: Caller) -> None:
    """The service's start-up notices (a settings file named on purpose but absent: issue 17 item 10; a
    plugin that failed to load) go to stderr with every one-shot call. The daemon opens the service once:
    each of its answers carries them, the cold one and the warm ones, until they no longer hold."""
    caller.env["KANDEV_LSP_DISABLE_PLUGINS"] = "nosuch"  # a plugin warning, printed by the command line
    absent = f"event=settings_file_missing path={json.dumps(str(caller.settings))}"
    flags = ("code_navigate", "--json", json.dumps(REFERENCES))
    one_shot = caller.run(*flags, "--no-daemon")
    assert one_shot.returncode == 0 and absent in one_shot.stderr, one_shot.stderr
    assert "kandev-lsp: warning: KANDEV_LSP_DISABLE_PLUGINS names 'nosuch'" in one_shot.stderr
    cold, warm = caller.run(*flags), caller.run(*flags)
    assert (cold.returncode, warm.returncode) == (0, 0)
    assert cold.stderr == warm.stderr == one_shot.stderr
    caller.settings.write_text("{}")  # the defaults' values: only the notice changes
    later = caller.run(*flags)
    assert later.returncode == 0 and absent not in later.stderr and "'nosuch'" in later.stderr
    assert json.loads(later.stdout)["summary"] == "5 references · 2 files"


def test_the_daemon_exits_when_its_workspace_is_removed(caller: Caller) -> None:
    assert caller.call("code_navigate", REFERENCES)[0] == 0
    log = caller.sockets()[0].with_suffix(".log")
    shutil.rmtree(caller.workspace)
    wait_until(lambda: not caller.daemons() and not caller.servers(), timeout=30, what="the orphaned daemon")
    assert "event=code_daemon_stopped reason=workspace-gone" in log.read_text()


@pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists(SYSTEM_PYTHON),
    reason=f"connecting as another user needs root (and {SYSTEM_PYTHON}, which that user may run)",
)
def test_a_caller_of_another_uid_gets_no_answer(caller: Caller) -> None:
    assert caller.call("code_navigate", REFERENCES)[0] == 0
    (socket,) = caller.sockets()
    probe = (
        "import socket, sys\n"
        "c = socket.socket(socket.AF_UNIX)\n"
        "c.connect(sys.argv[1])\n"
        "try:\n"
        '    c.sendall(b\'{"op": "stop", "protocol": 1}\\n\')\n'
        "    print(repr(c.recv(100)))\n"
        "except (BrokenPipeError, ConnectionResetError):\n"
        "    print(repr(b''))\n"
    )
    # Open the folder and the socket to everyone: the peer's uid is still checked.
    caller.runtime.chmod(0o755)
    socket.chmod(0o777)
    try:
        done = subprocess.run(
            [SYSTEM_PYTHON, "-c", probe, str(socket)],
            capture_output=True,
            text=True,
            user=65534,
            cwd="/",
            env={TAG_VARIABLE: caller.tag},
            timeout=60,
            check=False,
        )
    finally:
        caller.runtime.chmod(0o700)
    assert done.stdout.strip() == "b''", done.stderr  # dropped unanswered, not stopped
    assert "event=code_daemon_refused_peer" in _log(caller)
    assert caller.call("code_navigate", REFERENCES)[0] == 0  # the daemon still serves its own user
    assert len(caller.daemons()) == 1


def test_the_command_line_is_the_same_with_its_tool_ops(caller: Caller) -> None:
    """An op name (``navigate``) works through the daemon as through the one-shot path; an unknown tool
    is a usage error (exit 2, nothing on stdout)."""
    status, result = caller.call("navigate", REFERENCES)
    assert status == 0 and result["summary"] == "5 references · 2 files"
    unknown = caller.run("code_nope", "--json", "{}", check=False)
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert "no tool 'code_nope'" in unknown.stderr and "code_navigate" in unknown.stderr


def test_a_stalled_daemon_is_killed_and_replaced(caller: Caller) -> None:
    """A daemon that takes a call (or ``--stop``) and never answers: the caller gives up after the call's
    deadline and ``--stall-timeout`` (a user's knob: a hook that must never hang long shortens it too),
    kills it (its server dies with it) and the next call starts a new one."""
    assert caller.call("code_navigate", REFERENCES)[0] == 0
    (daemon,) = caller.daemons()
    os.kill(daemon, signal.SIGSTOP)  # alive, its socket accepting, never answering
    flags = ("--deadline", "1", "--stall-timeout", "1")
    stalled = caller.run("code_navigate", "--json", json.dumps(REFERENCES), *flags, check=False)
    assert stalled.returncode == 1 and stalled.stdout == ""
    assert f"the daemon (pid {daemon}) gave no answer within 2 s" in stalled.stderr, stalled.stderr
    assert "stopped now" in stalled.stderr
    wait_until(lambda: not caller.daemons() and not caller.servers(), timeout=30, what="the killed daemon")
    status, result = caller.call("code_navigate", REFERENCES)
    assert status == 0 and result["summary"] == "5 references · 2 files"
    (successor,) = caller.daemons()
    os.kill(successor, signal.SIGSTOP)
    assert client.stop_all(str(caller.runtime), [str(caller.workspace)], timeout=2.0) == [successor]
    wait_until(lambda: not caller.daemons() and not caller.servers(), timeout=30, what="the stalled daemon")
    assert caller.sockets() == []


def test_a_daemon_started_inside_an_owned_tree_goes_when_that_tree_is_stopped(caller: Caller) -> None:
    """An agent that kandev-lsp started (and so marked) runs ``kandev-lsp code``: the daemon and its
    servers carry the agent's owner token, so stopping the agent's tree sweeps them too."""
    caller.env["KANDEV_LSP_OWNER"] = "outer-owner"
    assert caller.call("code_navigate", REFERENCES)[0] == 0
    tree = set(caller.daemons() + caller.servers())
    assert len(tree) == 2
    killed = asyncio.run(reap_marked(["outer-owner"]))  # what the outer owner's stop does
    assert tree <= set(killed)
    wait_until(lambda: not caller.daemons() and not caller.servers(), timeout=30, what="the swept tree")
