"""Starting a ``kandev-lsp code`` daemon detached, and waiting until it is ready (a caller's cold path).

The daemon is this installation's own interpreter (``sys.executable``, which must be absolute) running
``-P -m kandev_lsp.codedaemon``: ``-P`` keeps the working folder off ``sys.path``, and the working folder
is ``/``, so nothing in a workspace (or wherever the caller stood) can be imported or run by it, and it
holds no workspace folder open. It starts in a session of its own, with no descriptor of the caller's
(``close_fds``): stdin is a pipe that carries its start message (the identity, with the environment
overrides, never on a command line others can read) and is then the null device; stdout is a pipe that
carries one readiness line and is then the null device; stderr is its log file in the runtime folder (the
previous one kept as ``.log.1``). Its environment is the caller's plus an owner token of its own
(:mod:`~kandev_lsp.codedaemon.leftovers`).

The started process forks once more and exits at once (the caller waits for it), so the daemon is
nobody's child, cannot get a controlling terminal, and never lingers as the caller's zombie.

The readiness line is ``{"ready": pid}``, or the refusal a one-shot run would give for the same flags
(``{"usage": ...}``, ``{"error": ...}``), which the caller then answers with. A daemon that exits
without one, or is not ready within the timeout, is :class:`~kandev_lsp.codedaemon.client.Unavailable`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from typing import IO, Any

from kandev_lsp.codedaemon.client import Unavailable
from kandev_lsp.codedaemon.names import DaemonFiles
from kandev_lsp.codedaemon.wire import WireError, decode, encode

__all__ = ["DAEMON_MODULE", "daemon_argv", "start_daemon"]

#: The module the daemon runs (``python -P -m``).
DAEMON_MODULE = "kandev_lsp.codedaemon"


def daemon_argv(python: str) -> list[str]:
    """The daemon's command line.

    :raises Unavailable: the interpreter's path is not absolute (it would be looked up or resolved
        against a folder, never run from one).
    """
    if not python or not os.path.isabs(python):
        raise Unavailable(
            f"the interpreter's path {python!r} is not absolute, so no daemon is started from it"
        )
    return [python, "-P", "-m", DAEMON_MODULE]


def start_daemon(
    files: DaemonFiles, identity: Mapping[str, Any], *, idle_timeout: float | None, timeout: float
) -> dict[str, Any] | None:
    """Start the daemon of ``identity`` and wait until it listens on ``files.socket``.

    :returns: None once it is ready, or its refusal (a reply the caller answers with).
    :raises Unavailable: it could not be started, or was not ready within ``timeout`` seconds.
    """
    import subprocess

    from kandev_lsp.process import marked_environment, new_token

    argv = daemon_argv(str(identity["python"]))
    token = new_token()
    environment = marked_environment(os.environ, token, windows=False)
    log = _open_log(files.log)
    deadline = time.monotonic() + timeout
    try:
        child = subprocess.Popen(  # noqa: S603 - this interpreter by absolute path, no shell
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd="/",
            env=environment,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as error:
        raise Unavailable(f"cannot start the daemon ({argv[0]}): {error.strerror or error}") from None
    finally:
        os.close(log)
    assert child.stdin is not None and child.stdout is not None
    start = {"files": files._asdict(), "identity": identity, "idleTimeout": idle_timeout, "token": token}
    try:
        with child.stdin:
            child.stdin.write(encode(start))
    except BrokenPipeError:
        pass  # it died before reading: its status and log say why
    try:
        status = child.wait(timeout)  # the first process forks the daemon and exits at once
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        child.stdout.close()
        raise Unavailable(f"the daemon did not detach within {timeout:g} s (log: {files.log})") from None
    with child.stdout:
        line, closed = _readiness(child.stdout, deadline)
    if not line.endswith(b"\n"):
        late = "exited before it was ready" if closed else f"was not ready within {timeout:g} s"
        raise Unavailable(f"the daemon {late} (status {status}; log: {files.log})")
    try:
        reply = decode(line)
    except WireError as error:
        raise Unavailable(f"the daemon's readiness line is unreadable: {error} (log: {files.log})") from None
    if isinstance(reply.get("ready"), int):
        return None
    if "usage" in reply or "error" in reply:
        return reply
    raise Unavailable(f"the daemon's readiness line says neither ready nor why not (log: {files.log})")


def _open_log(path: str) -> int:
    """The daemon's stderr: a fresh log file (owner-only), the previous daemon's kept as ``.log.1``."""
    with contextlib.suppress(FileNotFoundError):
        os.replace(path, path + ".1")
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)


def _readiness(pipe: IO[bytes], deadline: float) -> tuple[bytes, bool]:
    """The daemon's readiness line (with its newline), or what came before it closed the pipe or the
    deadline passed; and whether the pipe was closed."""
    import select

    descriptor = pipe.fileno()
    chunks: list[bytes] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), False
        readable, _, _ = select.select([descriptor], [], [], remaining)
        if not readable:
            continue
        chunk = os.read(descriptor, 1 << 16)
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(chunks), False
