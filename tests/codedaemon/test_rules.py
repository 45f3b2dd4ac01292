"""The daemon's rules without a server: the private runtime folder, names and identities, when a daemon
stops, the wire, the dry run's two shapes, the command line's refusals, the one-shot fallback, and the
sweep of what a dead daemon left."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_kit import KANDEV_LSP, wait_until
from kandev_lsp.cli import main
from kandev_lsp.cli.code import dry_run
from kandev_lsp.codedaemon import client, leftovers
from kandev_lsp.codedaemon.daemon import CodeDaemon
from kandev_lsp.codedaemon.lifetime import Activity, settings_changed, stop_reason
from kandev_lsp.codedaemon.names import (
    SOCKET_PATH_MAX,
    DaemonFiles,
    NoPrivateFolder,
    daemon_files,
    differences,
    ensure_private,
    identity_environment,
    roots_prefix,
    runtime_folder,
)
from kandev_lsp.codedaemon.starter import daemon_argv
from kandev_lsp.codedaemon.wire import WireError, check_peer, decode, encode
from stream_testkit import TAG_VARIABLE, tagged_alive


# -- the runtime folder ------------------------------------------------------------------------------------
def test_the_runtime_folder_is_created_owner_only(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    assert runtime_folder({"KANDEV_LSP_RUNTIME_DIR": str(folder)}) == str(folder)
    assert folder.stat().st_mode & 0o777 == 0o700
    assert runtime_folder({"XDG_RUNTIME_DIR": str(tmp_path)}) == str(tmp_path / "kandev-lsp")
    assert runtime_folder({"TMPDIR": str(tmp_path)}) == str(tmp_path / f"kandev-lsp-{os.getuid()}")


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda path: (path.mkdir(), path.chmod(0o755)), "has mode 0755"),
        (lambda path: path.symlink_to(path.parent), "is a symbolic link"),
        (lambda path: path.write_text(""), "is not a folder"),
    ],
)
def test_a_runtime_folder_that_is_not_private_is_refused(tmp_path: Path, make: Any, problem: str) -> None:
    folder = tmp_path / "run"
    make(folder)
    with pytest.raises(NoPrivateFolder, match=problem):
        ensure_private(str(folder))


def test_a_runtime_folder_in_a_folder_others_may_rename_in_is_refused(tmp_path: Path) -> None:
    """Whoever may rename entries where the folder lies could swap it for one of their own after the
    check (and have the daemon's owner record written through a link): refused unless that folder is
    this user's or root's, and sticky when others may write it (as /tmp is)."""
    parent = tmp_path / "parent"
    parent.mkdir()
    folder = str(parent / "run")
    parent.chmod(0o777)
    with pytest.raises(NoPrivateFolder, match=r"which others may write \(mode 0777, not sticky\)"):
        ensure_private(folder)
    parent.chmod(0o1777)  # /tmp's mode
    ensure_private(folder)
    if os.geteuid() == 0:  # another user's folder (sudo -E keeping their XDG_RUNTIME_DIR)
        parent.chmod(0o700)
        os.chown(parent, 65534, 65534)
        with pytest.raises(NoPrivateFolder, match="which belongs to uid 65534"):
            ensure_private(folder)


def test_a_relative_runtime_folder_and_a_missing_parent_are_refused(tmp_path: Path) -> None:
    with pytest.raises(NoPrivateFolder, match="not an absolute path"):
        runtime_folder({"KANDEV_LSP_RUNTIME_DIR": "run"})
    with pytest.raises(NoPrivateFolder, match="cannot create the runtime folder"):
        ensure_private(str(tmp_path / "missing" / "run"))


# -- names and identities ----------------------------------------------------------------------------------
def _identity(**changes: Any) -> dict[str, Any]:
    return {"roots": ["/w/a", "/w/b"], "environment": {"HOME": "/h"}, "env": [], **changes}


def test_a_daemons_files_are_named_by_its_roots_and_its_identity() -> None:
    base = daemon_files("/run", _identity())
    other_env = daemon_files("/run", _identity(environment={"HOME": "/other"}))
    other_order = daemon_files("/run", _identity(roots=["/w/b", "/w/a"]))
    prefix = roots_prefix(["/w/a", "/w/b"])
    assert os.path.basename(base.socket).startswith(prefix) and base.socket.endswith(".sock")
    assert os.path.basename(other_env.socket).startswith(prefix)  # --stop finds both by their roots
    assert other_env.socket != base.socket
    assert not os.path.basename(other_order.socket).startswith(prefix)  # root ids follow the order
    assert {base.lock, base.log, base.owner} == {base.socket[:-5] + s for s in (".lock", ".log", ".owner")}
    assert DaemonFiles.of_socket(base.socket) == base  # what --stop finds by the socket's name


def test_a_socket_path_too_long_for_bind_is_refused() -> None:
    folder = "/" + "x" * (SOCKET_PATH_MAX - len("//code-01234567-89abcdef.sock"))
    assert len(daemon_files(folder, _identity()).socket) == SOCKET_PATH_MAX  # the longest that binds
    folder += "x"
    with pytest.raises(NoPrivateFolder, match="longer than the 107 bytes"):
        daemon_files(folder, _identity())


def test_what_only_says_which_terminal_session_or_command_is_not_part_of_the_identity() -> None:
    toolchain = {
        "HOME": "/h",
        "PATH": "/bin",
        "PYTHONPATH": "/p",
        "VIRTUAL_ENV": "/v",
        "NODE_OPTIONS": "--max-old-space-size=4096",
        "GOFLAGS": "-mod=vendor",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",  # a locale, unlike LC_TERMINAL
        "XDG_RUNTIME_DIR": "/run/user/0",  # unlike XDG_SESSION_ID
        "GIT_INDEX_FILE": "/r/.git/index",  # a hook's: the go command's VCS stamping runs git
        "KANDEV_LSP_OWNER": "o",  # an owned tree's daemon goes with that tree
    }
    volatile = {"PWD": "/a", "OLDPWD": "/b", "SHLVL": "2", "_": "/bin/x", "COLUMNS": "80", "LINES": "24"}
    volatile |= {"TERM": "xterm", "TMUX": "/tmp/t,1,0", "TMUX_PANE": "%3", "TERM_SESSION_ID": "w0t1"}
    volatile |= {"SSH_CLIENT": "10.0.0.1 5 22", "SSH_TTY": "/dev/pts/3", "SSH_AUTH_SOCK": "/tmp/ssh-x/a"}
    volatile |= {"LC_TERMINAL": "iTerm2", "XDG_SESSION_ID": "4", "VSCODE_GIT_IPC_HANDLE": "/run/v.sock"}
    volatile |= {"PYTEST_CURRENT_TEST": "t.py::t (call)", "INVOCATION_ID": "ab", "WINDOWID": "7"}
    assert identity_environment({**toolchain, **volatile}) == toolchain


def test_what_differs_between_two_identities_is_named_never_valued() -> None:
    mine = _identity(environment={"HOME": "/h", "TOKEN": "s3cret", "GOPATH": "/g"}, stamp=1)
    theirs = _identity(environment={"HOME": "/h", "TOKEN": "other"}, stamp=2, readOnly=True)
    assert differences(mine, theirs) == ["$GOPATH", "$TOKEN", "--read-only", "the kandev-lsp installation"]
    assert differences(mine, mine) == []


# -- when a daemon stops -----------------------------------------------------------------------------------
def test_when_a_daemon_stops() -> None:
    idle = Activity(last=0.0, idle_timeout=10.0)
    assert stop_reason(idle, 9.9, roots_present=True, socket_ours=True) is None
    assert stop_reason(idle, 10.0, roots_present=True, socket_ours=True) == "idle"
    assert stop_reason(idle, 1.0, roots_present=False, socket_ours=True) == "workspace-gone"
    assert stop_reason(idle, 1.0, roots_present=True, socket_ours=False) == "socket-replaced"
    busy = Activity(last=0.0, idle_timeout=10.0)
    busy.begin(0.0)
    assert stop_reason(busy, 100.0, roots_present=True, socket_ours=True) is None  # a call under way
    busy.end(5.0)
    assert stop_reason(busy, 14.0, roots_present=True, socket_ours=True) is None  # idle from its end
    busy.hold(300.0)  # a parked transaction can still be approved
    assert stop_reason(busy, 200.0, roots_present=True, socket_ours=True) is None
    assert stop_reason(busy, 300.0, roots_present=True, socket_ours=True) == "idle"


def test_a_daemon_makes_room_for_another_configuration_only_when_nothing_would_be_lost(
    tmp_path: Path,
) -> None:
    """``retire`` (a caller of another configuration past MAX_DAEMONS): never during a call, never while a
    parked edit can still be approved, never for other roots; the answer names what differs."""
    identity = _identity(roots=[str(tmp_path)], environment={"PATH": "/a"})
    files = DaemonFiles.of_socket(str(tmp_path / "code-x.sock"))
    start = {"files": files._asdict(), "identity": identity, "token": "t"}
    theirs = {**identity, "environment": {"PATH": "/b"}}
    daemon = CodeDaemon(start, io.BytesIO())
    daemon.activity.begin(time.monotonic())
    assert daemon._retire(theirs) == {"busy": True}
    daemon.activity.end(time.monotonic())
    daemon.activity.hold(time.monotonic() + 300)
    assert daemon._retire(theirs) == {"busy": True}
    daemon.activity.held_until = 0.0
    assert daemon._retire({**theirs, "roots": ["/elsewhere"]}) == {"mismatch": True}
    assert daemon.stop_reason is None
    assert daemon._retire(theirs) == {"retired": os.getpid(), "differs": ["$PATH"]}
    assert daemon.stop_reason == "replaced"
    assert daemon._retire(theirs) == {"busy": True}  # stopping already


class _Settings:
    def __init__(self, text: str) -> None:
        self.text = text

    def to_json(self) -> str:
        return self.text


def test_settings_count_as_changed_only_when_their_values_differ() -> None:
    opened = _Settings("{}")
    assert not settings_changed(opened, opened)
    assert not settings_changed(opened, _Settings("{}"))  # re-read after a touch: the same values
    assert settings_changed(opened, _Settings('{"lsp_disabled_tools": ["code_hover"]}'))


# -- the wire ------------------------------------------------------------------------------------------------
def test_messages_are_one_json_object_per_line() -> None:
    line = encode({"op": "call", "payload": {"text": "a\nb é"}})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode(line) == {"op": "call", "payload": {"text": "a\nb é"}}
    with pytest.raises(WireError, match="JSON object"):
        decode(b"[1]\n")
    with pytest.raises(WireError, match="not a JSON line"):
        decode(b"\xff\n")


def test_a_message_carries_text_that_is_not_utf8_as_it_came() -> None:
    """``--json`` with a byte that is not UTF-8 (Python's argv holds it as a lone surrogate, '\\udcff') and
    a file name of such bytes in an answer: encode raised UnicodeEncodeError (a traceback from
    ``kandev-lsp code``, where --no-daemon answered). Escaped on the wire, it comes back unchanged."""
    message = {"op": "call", "payload": {"target": {"path": "caf\udcff.py", "matchText": "\udce9 é"}}}
    line = encode(message)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode(line) == message


def test_the_peer_is_this_user() -> None:
    one, two = socket.socketpair(socket.AF_UNIX)
    with one, two:
        assert check_peer(one) == os.getpid()


@pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"),
    reason="serving a socket as another user needs root (and /usr/bin/python3, which that user may run)",
)
def test_a_caller_never_talks_to_a_socket_another_user_serves(runtime_folder: Path, tag: str) -> None:
    """The caller's half of the peer check: a socket at the daemon's name that another uid listens on is
    not a daemon of ours; nothing is sent to it, and the call answers one-shot (``Unavailable``)."""
    runtime_folder.chmod(0o777)  # where that user may bind (a private folder is checked apart)
    path = str(runtime_folder / "code-x.sock")
    serve = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "s.bind(sys.argv[1]); s.listen(1); print('ready', flush=True)\n"
        "c, _ = s.accept(); print(repr(c.recv(100)), flush=True)\n"
    )
    other = subprocess.Popen(
        ["/usr/bin/python3", "-c", serve, path],
        stdout=subprocess.PIPE, text=True, user=65534, cwd="/", env={TAG_VARIABLE: tag},
    )  # fmt: skip
    try:
        assert other.stdout is not None and other.stdout.readline() == "ready\n"
        with pytest.raises(client.Unavailable, match="runs as uid 65534, not as this user"):
            client.exchange(path, {"op": "call", "payload": {"secret": "x"}}, 10.0)
        assert other.stdout.readline() == "b''\n"  # it got the connection, and not one byte
    finally:
        other.kill()
        other.communicate()


# -- the command line ----------------------------------------------------------------------------------------
def test_a_one_shot_dry_run_offers_no_transaction_and_a_daemons_keeps_it() -> None:
    parked = {"ok": True, "needsApproval": True, "transactionId": "t" * 32, "expiresInSeconds": 300}
    one_shot = dry_run(dict(parked))
    assert (
        one_shot["dryRun"] is True
        and "transactionId" not in one_shot
        and "--auto-approve" in one_shot["next"]
    )
    held = dry_run(dict(parked), held_by="code_rename")
    assert held["transactionId"] == "t" * 32 and held["dryRun"] is True
    assert (
        f"kandev-lsp code code_rename --approve={'t' * 32}" in held["next"] and "within 300 s" in held["next"]
    )
    assert dry_run({"ok": True, "applied": True}, held_by="code_rename") == {"ok": True, "applied": True}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["code", "--stop", "code_hover"], "--stop takes no TOOL"),
        (["code"], "name a TOOL"),
        (
            ["code", "code_rename", "--approve=-x", "--json", '{"a": 1}'],
            "drop --json",
        ),  # ids may start with -
        (["code", "code_rename", "--approve=x", "--no-daemon"], "need the warm daemon"),
        # a read tool has no transaction: never "unknown argument transactionId" or "no daemon is running"
        (["code", "code_hover", "--approve=x"], "code_hover only reads: it previews no edit"),
        (["code", "code_diagnostics", "--discard=x", "--no-daemon"], "code_diagnostics only reads"),
        (["code", "code_hover", "--read-only", "--auto-approve"], "nothing to approve"),
    ],
)
def test_command_line_refusals_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main([*argv, "--workspace", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


REFUSED_BEFORE_ANY_SERVER = [
    ("code_hover",),  # the trial's call: no --json, so no target
    ("code_hover", "--json", '{"target": 5}'),
    (
        "code_rename",
        "--json",
        '{"target": {"path": "a.py", "symbol": "f"}, "newName": "g", "firstMatch": true}',
    ),
    ("code_rename", "--read-only", "--json", '{"target": {"path": "a.py", "symbol": "f"}, "newName": "g"}'),
    ("code_hover", "--disable-tool", "code_hover", "--json", '{"target": {"path": "a.py", "symbol": "f"}}'),
]


@pytest.mark.parametrize("flags", REFUSED_BEFORE_ANY_SERVER, ids=" ".join)
def test_a_call_refused_before_any_server_starts_no_daemon(
    flags: tuple[str, ...], tmp_path: Path, runtime_folder: Path, tag: str
) -> None:
    """The tool's refusal, exactly as the one-shot path gives it (exit 1, the same JSON), and no daemon
    left idling for minutes behind a call that never needed one."""
    env = {
        **os.environ,
        "KANDEV_LSP_RUNTIME_DIR": str(runtime_folder),
        "KANDEV_LSP_SETTINGS": str(tmp_path / "s.json"),
        TAG_VARIABLE: tag,
    }

    def code(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [KANDEV_LSP, "code", *args, "--workspace", str(tmp_path)]
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)

    try:
        warm, one_shot = code(*flags), code(*flags, "--no-daemon")
        assert list(runtime_folder.glob("*.sock")) == [] and tagged_alive(tag) == []
        assert (warm.returncode, one_shot.returncode) == (1, 1), warm.stderr + one_shot.stderr
        assert warm.stdout == one_shot.stdout and json.loads(warm.stdout)["ok"] is False
        assert warm.stderr == one_shot.stderr == ""  # neither opened the service: nothing to say of it
    finally:
        code("--stop")
        wait_until(lambda: not tagged_alive(tag), timeout=30, what="a daemon the call started")


def test_without_a_private_runtime_folder_the_call_is_answered_one_shot(tmp_path: Path) -> None:
    """A warning says why, and the one-shot path answers (here: the unknown tool's usage error)."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    env = {
        **os.environ,
        "KANDEV_LSP_RUNTIME_DIR": str(shared),
        "KANDEV_LSP_SETTINGS": str(tmp_path / "s.json"),
    }
    done = subprocess.run(
        [KANDEV_LSP, "code", "code_nope", "--workspace", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "warning: the warm daemon is not available" in done.stderr and "has mode 0777" in done.stderr
    assert "no tool 'code_nope'" in done.stderr
    assert list(shared.iterdir()) == []


def test_the_daemon_runs_only_an_absolute_interpreter() -> None:
    assert daemon_argv("/usr/bin/python3") == ["/usr/bin/python3", "-P", "-m", "kandev_lsp.codedaemon"]
    for python in ("python3", ".venv/bin/python", ""):
        with pytest.raises(client.Unavailable, match="not absolute"):
            daemon_argv(python)


# -- what a dead daemon left ---------------------------------------------------------------------------------
def test_the_sweep_kills_what_a_dead_daemon_left_and_spares_a_live_one(tmp_path: Path, tag: str) -> None:
    def marked(token: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(["/bin/sleep", "300"], env={"KANDEV_LSP_OWNER": token, TAG_VARIABLE: tag})

    live = marked("live-token")  # stands for a daemon still stopping its own trees
    orphan = marked("dead-token")  # a grandchild of a daemon that was killed
    owner = str(tmp_path / "code.owner")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with open(owner, "w") as handle:
        handle.write(f"{live.pid} live-token\n{dead.pid} dead-token\n")
    try:
        assert leftovers.sweep_now(owner) == (orphan.pid,)
        assert orphan.wait(timeout=10) < 0 and live.poll() is None
        assert Path(owner).read_text() == f"{live.pid} live-token\n"
        leftovers.record(owner, "mine")
        leftovers.forget(owner, "live-token")
        assert Path(owner).read_text() == f"{os.getpid()} mine\n"
    finally:
        live.kill()
        live.wait()
    wait_until(lambda: not tagged_alive(tag), timeout=10, what="the sleeps")


def test_no_daemon_answers_on_a_missing_or_stale_socket(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sock")
    with pytest.raises(client.NotRunning):
        client.exchange(path, {"op": "stop"}, 5.0)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(path)
    stale.close()  # the file stays, nobody listens: a killed daemon's socket
    with pytest.raises(client.NotRunning):
        client.exchange(path, {"op": "stop"}, 5.0)
    assert not client.listening(path)


def test_a_stopping_daemon_leaves_its_socket_at_once(tmp_path: Path, runtime_folder: Path) -> None:
    """A caller told to ``restart`` (the settings changed) reconnects at once: it must find no daemon
    there, or it would be told ``restart`` again and answer one-shot with a warning."""

    async def scenario() -> tuple[bool, bool]:
        files = DaemonFiles.of_socket(str(runtime_folder / "code-x.sock"))
        start = {"files": files._asdict(), "identity": {"roots": [str(tmp_path)]}, "token": "t"}
        daemon = CodeDaemon(start, io.BytesIO())
        daemon._server = await asyncio.start_unix_server(lambda r, w: None, sock=daemon._bind())
        before = client.listening(files.socket)
        daemon.stop("settings-changed")  # no await: the next caller may come before the loop turns
        after = client.listening(files.socket) or os.path.exists(files.socket)
        await daemon._server.wait_closed()
        return before, after

    assert asyncio.run(scenario()) == (True, False)


class _Daemon:
    """A stand-in daemon on a real Unix socket in a thread: answers each call with its tool's name, and
    holds the calls named ``slow`` until :attr:`release` is set (a cold server's first answer)."""

    def __init__(self, path: str) -> None:
        import threading

        self.release = threading.Event()
        self._listener = socket.socket(socket.AF_UNIX)
        self._path = path
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        import threading

        self._listener.bind(self._path)
        self._listener.listen(8)
        accepting = threading.Thread(target=self._accept, daemon=True)
        accepting.start()
        self._threads.append(accepting)

    def _accept(self) -> None:
        import threading

        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return  # closed
            answering = threading.Thread(target=self._answer, args=(connection,), daemon=True)
            answering.start()
            self._threads.append(answering)

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            line = connection.makefile("rb").readline()
            if not line:
                return  # a caller that only looked whether a daemon listens
            tool = decode(line)["tool"]
            if tool == "slow":
                self.release.wait(60)
            connection.sendall(encode({"result": {"ok": True, "tool": tool}}))

    def close(self) -> None:
        self.release.set()
        self._listener.close()


def test_a_call_waits_for_the_start_lock_only_while_the_daemon_starts(
    runtime_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two first calls at once: the second waits while the first starts the daemon, then asks it at once,
    not after the first call's whole answer (a cold call can take a minute: the lock would outlast its
    timeout, and the second call would fall back to a cold one-shot run)."""
    import threading

    files = DaemonFiles.of_socket(str(runtime_folder / "code-x.sock"))
    daemon = _Daemon(files.socket)
    first_holds, second_waits = threading.Event(), threading.Event()
    locked = client._locked

    @contextlib.contextmanager
    def watched_lock(path: str) -> Iterator[None]:
        if threading.current_thread().name == "second":
            second_waits.set()
        with locked(path):
            if threading.current_thread().name == "first":
                first_holds.set()
            yield

    def start_first() -> None:
        assert second_waits.wait(30), "the second call never came to the lock"
        daemon.start()
        return None

    def start_second() -> None:
        raise AssertionError("a second daemon was started")

    monkeypatch.setattr(client, "_locked", watched_lock)
    replies: dict[str, Any] = {}

    def call(tool: str, start: Any) -> None:
        replies[tool] = client.ask(files, {"tool": tool}, timeout=60, start=start)

    first = threading.Thread(target=call, args=("slow", start_first), name="first")
    second = threading.Thread(target=call, args=("quick", start_second), name="second")
    try:
        first.start()
        assert first_holds.wait(30), "the first call never took the lock"
        second.start()
        second.join(20)
        assert not second.is_alive(), "the second call waited for the first call's answer"
        assert replies == {"quick": {"result": {"ok": True, "tool": "quick"}}}
        daemon.release.set()
        first.join(20)
        assert replies["slow"] == {"result": {"ok": True, "tool": "slow"}}
    finally:
        daemon.close()
        first.join(20)
        second.join(20)


def test_a_call_that_fails_in_the_daemon_logs_where_never_what(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A tool that raises: the caller is told it failed and where the log is; the log gets the exception's
    type and where it was raised, never its message, which may quote the call's text (a replacement's
    source, a symbol) or a secret."""
    secret = "def leaked(): return 'SECRET-SOURCE-TEXT'"

    class Failing:
        async def dispatch(self, tool: str, payload: Any, ctx: Any) -> dict[str, Any]:
            raise ValueError(f"cannot place {payload['text']!r}")

    files = DaemonFiles.of_socket(str(tmp_path / "code-x.sock"))
    start = {"files": files._asdict(), "identity": {"roots": [str(tmp_path)]}, "token": "t"}
    daemon = CodeDaemon(start, io.BytesIO())
    daemon._service = Failing()  # type: ignore[assignment]
    request = {"tool": "code_insert", "payload": {"text": secret}, "deadline": 5}
    with caplog.at_level("ERROR", logger="kandev_lsp.codedaemon"):
        reply = asyncio.run(daemon._call(request))
    assert reply == {"error": f"the call failed in the daemon (ValueError; its log: {files.log})"}
    logged = "\n".join(caplog.text.splitlines())
    assert "event=code_daemon_call_failed tool=code_insert error=ValueError" in logged
    assert "in dispatch" in logged  # where: the frames
    assert "SECRET-SOURCE-TEXT" not in logged
