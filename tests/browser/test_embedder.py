"""web/embedder.py, the demo backend, answers only requests that name it in ``Host`` (DNS rebinding).

A page of another site whose name was re-pointed at 127.0.0.1 reaches the backend as one origin with
itself (``Origin: http://evil.example:PORT``, ``Host: evil.example:PORT``): before, it was served
``/api/config`` (the edited file's text) and could mint tickets. Now any ``Host`` but the listening
address and the loopback names, with the port, gets 421 before any route runs. ``localhost`` still
serves the page: the Chromium test of another origin loads it so, and the broker is what refuses it.
A real HTTP server on 127.0.0.1 and a real HTTP client; no broker runs (a ticket request that got
through would be answered 502, the broker being unreachable).
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

WEB = Path(__file__).resolve().parents[2] / "web"
sys.path.insert(0, str(WEB))
from embedder import EmbedderServer, Embedding  # noqa: E402

SECRET_LINE = "token = 'the text of the file being edited'"


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[EmbedderServer]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "main.py").write_text(SECRET_LINE + "\n")
    embedding = Embedding(
        broker_url="ws://127.0.0.1:9",  # nothing listens there
        broker_token="broker-token-never-sent",
        session_id="s1",
        language="python",
        language_id="python",
        workspace=workspace,
        file=workspace / "main.py",
        auto_install=False,
    )
    server = EmbedderServer(("127.0.0.1", 0), embedding, monaco=tmp_path)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def ask(
    server: EmbedderServer, method: str, path: str, host: str | None, body: Any = None, **headers: str
) -> tuple[int, str]:
    """One request with exactly the ``Host`` given (``None``: none at all); status and body."""
    port = int(server.server_address[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        if host is not None:
            connection.putheader("Host", host)
        data = b"" if body is None else json.dumps(body).encode()
        for name, value in {**headers, "Content-Length": str(len(data))}.items():
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Type", "application/json")
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def test_a_rebound_name_is_refused_421_before_any_route(backend: EmbedderServer) -> None:
    port = int(backend.server_address[1])
    evil = f"evil.example:{port}"
    for host in (evil, f"127.0.0.1:{port + 1}", None):
        status, text = ask(backend, "GET", "/api/config", host)
        assert status == 421 and SECRET_LINE not in text, (host, status)
        assert json.loads(text)["error"] == "misdirected_request"
    status, text = ask(
        backend,
        "POST",
        "/api/ticket",
        evil,
        {"sessionId": "s1", "language": "python"},
        Origin=f"http://{evil}",  # the rebound page's own origin: it equals Host
    )
    assert status == 421, text  # refused here: the broker was never asked (that would be 502)
    assert ask(backend, "GET", "/", evil)[0] == 421


def test_the_listening_address_and_localhost_are_served(backend: EmbedderServer) -> None:
    port = int(backend.server_address[1])
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
        status, text = ask(backend, "GET", "/api/config", host)
        assert status == 200, (host, text)
        assert json.loads(text)["document"]["text"] == SECRET_LINE + "\n"
    # its own page's ticket request gets through to the broker (none runs here: 502)
    status, _ = ask(
        backend,
        "POST",
        "/api/ticket",
        f"localhost:{port}",
        {"sessionId": "s1", "language": "python"},
        Origin=f"http://localhost:{port}",
    )
    assert status == 502
