"""The calling side of a ``kandev-lsp code`` daemon: connect and ask, or start it first.

:func:`ask` connects to the daemon's socket and sends the request. When nothing answers there (no socket
file, or a stale one nobody listens on: a crashed or killed daemon), it takes the daemon's lock, looks
again (another first call may have started it meanwhile: two first calls start one daemon), and else
starts one (``start``: :func:`make_room` when too many run for the same roots, then
:mod:`~kandev_lsp.codedaemon.starter`); it leaves the lock before it asks, so the calls that waited for
that start are asked concurrently. A daemon that answers
``restart`` (its settings file changed) has already left its socket: the next attempt starts its
successor.

Blocking sockets, :mod:`json` and :mod:`os` only: a warm call imports nothing else before its answer
(the lock and the starter are imported when a daemon must be started).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kandev_lsp.codedaemon.names import DaemonFiles, roots_prefix
from kandev_lsp.codedaemon.wire import MAX_MESSAGE, PROTOCOL, WireError, check_peer, decode, encode

__all__ = [
    "Lost",
    "NotRunning",
    "Unavailable",
    "ask",
    "exchange",
    "listening",
    "make_room",
    "put_down",
    "stop_all",
]

#: Seconds a caller waits for the lock while another call starts the same daemon (its start included).
LOCK_TIMEOUT = 90.0
#: Seconds a killed daemon may take to be gone.
PUT_DOWN_TIMEOUT = 5.0
#: Seconds a daemon asked to make room has to answer (it answers before it stops its servers).
RETIRE_TIMEOUT = 5.0


class NotRunning(Exception):
    """No daemon listens on the socket (no file, or a stale one)."""


class Unavailable(Exception):
    """No daemon can answer this call here (why is the message): the caller answers one-shot."""


class Lost(Exception):
    """The daemon took the call but gave no answer (it died or stalled): the call may or may not have run.

    :param pid: the daemon's (from the kernel, checked to be this user's).
    :param stalled: it was connected and alive but gave no answer in time: :func:`put_down` replaces it.
    """

    def __init__(self, message: str, *, pid: int, stalled: bool = False) -> None:
        super().__init__(message)
        self.pid = pid
        self.stalled = stalled


def exchange(path: str, request: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    """Send ``request`` to the daemon listening on ``path`` and return its reply.

    :raises NotRunning: nothing listens there.
    :raises Unavailable: the socket cannot be used (another user's, not a socket, ...).
    :raises Lost: connected, but no whole reply within ``timeout`` seconds.
    """
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(timeout)
        try:
            connection.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            raise NotRunning(path) from None
        except OSError as error:
            raise Unavailable(f"cannot connect to {path}: {error.strerror or error}") from None
        try:
            pid = check_peer(connection)
        except WireError as error:
            raise Unavailable(f"{path}: {error}") from None
        try:
            connection.sendall(encode(request))
            line = _read_line(connection)
        except TimeoutError:
            raise Lost(
                f"the daemon (pid {pid}) gave no answer within {timeout:g} s", pid=pid, stalled=True
            ) from None
        except OSError as error:
            line = b""
            reason = error.strerror or str(error)
        else:
            reason = "it closed the connection"
        if not line.endswith(b"\n"):
            raise Lost(
                f"the daemon (pid {pid}) ended the call without an answer ({reason}): it may have crashed "
                f"(its log: {os.path.splitext(path)[0]}.log); the call may or may not have run; the next "
                "call starts a new daemon",
                pid=pid,
            )
        try:
            return decode(line)
        except WireError as error:
            raise Lost(f"the daemon (pid {pid}) answered an unreadable reply: {error}", pid=pid) from None
    finally:
        connection.close()


def listening(path: str) -> bool:
    """Whether a daemon listens on ``path`` (a connection is accepted; nothing is sent on it)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        try:
            connection.connect(path)
        except OSError:
            return False
    return True


def _read_line(connection: socket.socket) -> bytes:
    """Bytes up to and with the first newline, or all of them when the peer closed before one."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = connection.recv(1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n") or size > MAX_MESSAGE:
            return b"".join(chunks)


def ask(
    files: DaemonFiles,
    request: Mapping[str, Any],
    *,
    timeout: float,
    start: Callable[[], dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """The reply of the daemon at ``files`` to ``request``, starting it (``start``) when none answers.

    ``start`` returns None once the daemon listens, or its refusal of the configuration (``usage`` or
    ``error``, as a one-shot run would refuse the same flags), which is then the reply.

    :raises NotRunning: none answers and ``start`` is None.
    :raises Unavailable: no daemon can answer here (a name collision, a daemon that cannot start, ...).
    :raises Lost: see :func:`exchange`.
    """
    why = "it stopped before it answered"
    for _ in range(4):  # start, ask; and once more after a "restart" reply (or a daemon gone meanwhile)
        try:
            reply = exchange(files.socket, request, timeout)
        except NotRunning:
            if start is None:
                raise
            # The lock is held while a daemon is started, never during a call: a cold call can take a
            # minute, and a second first call must not wait for its answer (or outwait LOCK_TIMEOUT).
            with _locked(files.lock):
                refusal = None if listening(files.socket) else start()
            if refusal is not None:
                return refusal
            continue
        if reply.get("mismatch"):
            raise Unavailable(f"{files.socket} is served by a daemon of another configuration")
        if "restart" not in reply:
            return reply
        why = str(reply["restart"])
    raise Unavailable(f"the daemon at {files.socket} kept restarting ({why})")


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    """Hold the daemon's start lock (a file lock in the private runtime folder)."""
    import filelock

    try:
        with filelock.FileLock(path, timeout=LOCK_TIMEOUT, mode=0o600):
            yield
    except filelock.Timeout:
        raise Unavailable(
            f"another call has been starting this daemon for {LOCK_TIMEOUT:g} s (lock {path})"
        ) from None


def stop_all(folder: str, roots: list[str], *, timeout: float) -> list[int]:
    """Stop every daemon in ``folder`` serving these roots (any environment or flags); return their pids.

    Each answers once its servers are stopped; one that does not within ``timeout`` (stalled) is killed
    (:func:`put_down`). A stale socket (a daemon that died) is removed, and what that daemon left marked is
    swept up (:mod:`~kandev_lsp.codedaemon.leftovers`).
    """
    prefix = roots_prefix(roots)
    stopped: list[int] = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return stopped
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".sock")):
            continue
        path = os.path.join(folder, name)
        files = DaemonFiles.of_socket(path)
        try:
            reply = exchange(path, {"op": "stop", "protocol": PROTOCOL}, timeout)
        except NotRunning:
            with _locked(files.lock):
                _remove_stale(files)
            continue
        except Lost as lost:
            if lost.stalled:  # not stopped within the timeout: stopped the hard way
                put_down(files, lost.pid)
                stopped.append(lost.pid)
            continue
        except Unavailable:
            continue
        pid = reply.get("stopped")
        if isinstance(pid, int):
            stopped.append(pid)
    return stopped


def make_room(files: DaemonFiles, identity: Mapping[str, Any], *, limit: int) -> list[dict[str, Any]]:
    """Before the daemon of ``identity`` (at ``files``) starts: retire the daemons of the same roots under
    other configurations that went unused longest (their sockets' mtimes) until fewer than ``limit`` are
    left; return their answers (``retired``: the pid, ``differs``: what differs from ``identity``).

    A daemon with a call under way or a parked edit declines (``busy``) and the next is asked; if all
    decline, the new one starts anyway (there are more than ``limit`` for a while). A stale socket is no
    daemon and counts for none (the call of its own configuration replaces it); one that does not answer
    is skipped. Called under ``files``' lock only: never another's (two callers could wait for each other).
    """
    folder = os.path.dirname(files.socket)
    prefix = roots_prefix(identity["roots"])
    others: list[tuple[int, str]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if entry.name.startswith(prefix) and entry.name.endswith(".sock") and entry.path != files.socket:
            with contextlib.suppress(OSError):
                others.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
    excess = len(others) - (limit - 1)
    retired: list[dict[str, Any]] = []
    for _, path in sorted(others):  # the least recently used first
        if excess <= 0:
            break
        request = {"op": "retire", "protocol": PROTOCOL, "identity": dict(identity)}
        try:
            reply = exchange(path, request, RETIRE_TIMEOUT)
        except NotRunning:
            excess -= 1
            continue
        except (Lost, Unavailable):
            continue
        if isinstance(reply.get("retired"), int):
            retired.append(reply)
            excess -= 1
    return retired


def put_down(files: DaemonFiles, pid: int) -> None:
    """Kill a stalled daemon (SIGKILL; its servers die with it, the parent-death signal) and sweep up what it
    leaves, so the next call starts a new one. ``pid`` came from the kernel with the uid checked: ours."""
    import signal  # here: a warm call never needs them
    import time

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + PUT_DOWN_TIMEOUT
    while listening(files.socket) and time.monotonic() < deadline:
        time.sleep(0.02)  # its socket closes when it is gone
    with _locked(files.lock):
        _remove_stale(files)


def _remove_stale(files: DaemonFiles) -> None:
    """Remove a socket nobody listens on, after sweeping up what its dead daemon left running."""
    if listening(files.socket):
        return  # a daemon started meanwhile: not stale
    from kandev_lsp.codedaemon.leftovers import sweep_now

    sweep_now(files.owner)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(files.socket)
