"""See the reference page work: ``.venv/bin/python web/demo.py`` (after ``scripts/setup``).

Starts the three processes an embedding has, on a small example workspace (``web/example``, or
``--workspace``): a task host (``kandev-lsp serve``), ``kandev-lsp broker`` with browser continuity on and
this page's origin allowed, and the demo embedder backend (``web/embedder.py``), which holds the broker's
token and mints a ticket per connection for the page. Prints the page's URL; Ctrl-C stops everything
(the broker stops each language server first), and so do SIGTERM and SIGHUP (a closed terminal). The language server is installed on first use into
``~/.kandev/lsp-servers`` (the task host's managed cache) when it is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

WEB = Path(__file__).resolve().parent
KANDEV_LSP = [sys.executable, "-m", "kandev_lsp.cli"]
SESSION = "demo"


def free_port(host: str) -> int:
    """A port free right now, for the backend: the broker must know the page's origin before it starts."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def listening(process: subprocess.Popen[str], name: str) -> dict[str, Any]:
    """The JSON line a child prints when it listens; SystemExit with its stderr when it ends first."""
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait()
        raise SystemExit(
            f"demo: {name} did not start (exit status {process.returncode}); see its messages above"
        )
    return dict(json.loads(line))


@contextlib.contextmanager
def child(
    argv: list[str], name: str, environ: dict[str, str], log: int | None
) -> Iterator[subprocess.Popen[str]]:
    """A child process stopped with SIGTERM (then killed after 30 s) when the block ends. It has a session
    of its own, so Ctrl-C reaches the demo alone and the children are stopped in order."""
    process = subprocess.Popen(  # noqa: S603 - argv of this interpreter and this folder's script, no shell
        argv, stdout=subprocess.PIPE, stderr=log, env=environ, text=True, start_new_session=True
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()


#: What stops the demo: Ctrl-C, ``kill``, and the terminal closing.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(Exception):
    """A stop signal arrived: unwinding stops the children in reverse order and removes the tokens."""


def _stop(signum: int, _frame: object) -> None:
    for stop_signal in STOP_SIGNALS:  # the children are being stopped now: a second signal waits for it
        signal.signal(stop_signal, signal.SIG_IGN)
    raise Stopped(signal.Signals(signum).name)


def stop_on_signals() -> None:
    """Turn every stop signal into :class:`Stopped`, wherever the demo is (starting its children too).

    Each child runs in a session of its own, so only the demo hears the terminal: had a signal killed it
    (SIGHUP's default), serve, the broker, the backend and pyright would run on, with the tokens left in
    the temporary folder. SIGINT is handled even when it was inherited ignored, as a script's background
    job inherits it, so that ``kill -INT`` (and the tests' Ctrl-C) still stop the demo."""
    for stop_signal in STOP_SIGNALS:
        signal.signal(stop_signal, _stop)


def main(argv: list[str] | None = None) -> int:
    stop_on_signals()
    try:
        return run(argv)
    except Stopped:
        return 0


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", type=Path, default=WEB / "example", help="the task's workspace")
    parser.add_argument("--file", default="greetings.py", help="the file to edit, relative to the workspace")
    parser.add_argument("--language", default="python")
    parser.add_argument("--port", type=int, default=0, help="the page's port (default: a free one)")
    parser.add_argument("--quiet", action="store_true", help="leave out the processes' logs")
    arguments = parser.parse_args(argv)
    host = "127.0.0.1"
    port = arguments.port or free_port(host)
    origin = f"http://{host}:{port}"
    workspace = arguments.workspace.resolve()
    environ = dict(os.environ)
    log = subprocess.DEVNULL if arguments.quiet else None
    with tempfile.TemporaryDirectory(prefix="kandev-lsp-demo-") as private, contextlib.ExitStack() as stack:
        serve_token, broker_token = Path(private, "serve-token"), Path(private, "broker-token")
        for path in (serve_token, broker_token):
            path.write_text(secrets.token_urlsafe(32) + "\n", encoding="utf-8")
            path.chmod(0o600)
        serve = stack.enter_context(
            child(
                [*KANDEV_LSP, "serve", "--workspace", str(workspace), "--token-file", str(serve_token)],
                "kandev-lsp serve",
                environ,
                log,
            )
        )
        stream_url = listening(serve, "kandev-lsp serve")["url"]
        directory = Path(private, "directory.json")
        execution = {
            "executor": "local",
            "streamUrl": stream_url,
            "tokenFile": str(serve_token),
            "workspace": str(workspace),
        }
        directory.write_text(
            json.dumps(
                {"sessions": {SESSION: "demo-execution"}, "executions": {"demo-execution": execution}}
            ),
            encoding="utf-8",
        )
        broker = stack.enter_context(
            child(
                [
                    *KANDEV_LSP,
                    "broker",
                    "--directory",
                    str(directory),
                    "--token-file",
                    str(broker_token),
                    "--allow-origin",
                    origin,
                ],
                "kandev-lsp broker",
                {**environ, "KANDEV_FEATURES_LSP_BROWSER_CONTINUITY": "1"},
                log,
            )
        )
        broker_url = listening(broker, "kandev-lsp broker")["url"]
        embedder = stack.enter_context(
            child(
                [
                    sys.executable,
                    str(WEB / "embedder.py"),
                    "--broker-url",
                    broker_url,
                    "--broker-token-file",
                    str(broker_token),
                    "--session",
                    SESSION,
                    "--language",
                    arguments.language,
                    "--workspace",
                    str(workspace),
                    "--file",
                    arguments.file,
                    "--auto-install",
                    "--host",
                    host,
                    "--port",
                    str(port),
                ],
                "the demo backend",
                environ,
                log,
            )
        )
        url = listening(embedder, "the demo backend")["url"]
        print(json.dumps({"event": "listening", "url": url}), flush=True)
        print(
            f"demo: open {url} (Ctrl-C stops the page, the broker and the language server)", file=sys.stderr
        )
        # Until one of them ends, or a stop signal (Stopped): either way the block ends, which stops them
        # in reverse: the page's backend, then the broker (it stops every lease's server), then serve.
        children = {"the demo backend": embedder, "kandev-lsp broker": broker, "kandev-lsp serve": serve}
        while all(process.poll() is None for process in children.values()):
            time.sleep(0.5)
        ended = ", ".join(
            f"{name} (exit status {process.returncode})"
            for name, process in children.items()
            if process.returncode is not None
        )
        print(f"demo: {ended} ended by itself; stopping the rest", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
