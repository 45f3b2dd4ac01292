"""The demo embedder backend of the reference page: what a web app's own backend does for its pages.

A page cannot send the broker's bearer token (a browser sets no ``Authorization`` on a WebSocket) and
must never see it. So this backend, which holds the token, serves the page and, on the page's request
over its own origin, mints a **ticket** at the broker (``POST /lsp/tickets``, docs/broker-contract.md):
short-lived, single-use, bound to the session and language. The page presents it in
``Sec-WebSocket-Protocol``. A real embedder authenticates that request with its user's session (a cookie)
and decides whether that user may use that session; this demo has one session and no users, so it only
checks that the request comes from its own origin (a page elsewhere cannot mint tickets here).

Every request must name this backend in ``Host``: the address it listens on, and ``localhost`` and
``127.0.0.1`` when that is a loopback address (with the port), plus any ``--allow-host``; anything else
is answered 421 before any route runs. Without it a page of any site could reach it by DNS rebinding (its
own name, re-pointed at 127.0.0.1: the browser then sees one origin, and ``Origin`` equals ``Host``) and
read ``/api/config``, the edited file's text included, or mint tickets.

Routes: ``/`` and the page's files; ``/vs/...`` monaco-editor's prebuilt ``min/vs`` (installed by
``scripts/setup`` into ``web/node_modules``); ``GET /api/config`` (the broker's address, the session, the
file to edit); ``POST /api/ticket``. Standard library only. Prints one JSON line when listening:
``{"event": "listening", "url": "http://127.0.0.1:PORT/"}``; the token is never printed or logged.
"""

from __future__ import annotations

import argparse
import http.server
import ipaddress
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WEB = Path(__file__).resolve().parent
MONACO = WEB / "node_modules" / "monaco-editor" / "min" / "vs"
PAGE_FILES = {"index.html", "app.js", "lease-client.js", "monaco-lsp.js", "page.css"}
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".ttf": "font/ttf",
    ".json": "application/json",
}
TICKET_TIMEOUT_S = 10
LOOPBACK_NAMES = ("127.0.0.1", "localhost")


def served_hosts(host: str, port: int, also: tuple[str, ...] = ()) -> frozenset[str]:
    """The ``Host`` values a request to this backend may carry: the listening address, the loopback
    names when it is a loopback address (or every address), and ``also``, each with the port (and bare
    when the port is HTTP's own, 80), lower-case. An IPv6 address is bracketed, as in a URL."""
    names = {host.lower(), *(name.lower() for name in also)}
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if host == "localhost" or (address is not None and (address.is_loopback or address.is_unspecified)):
        names.update(LOOPBACK_NAMES)
    bracketed = {f"[{name}]" if ":" in name else name for name in names}
    served = {f"{name}:{port}" for name in bracketed}
    return frozenset(served | bracketed if port == 80 else served)


@dataclass(frozen=True)
class Embedding:
    """What the page is told and what the backend keeps to itself."""

    broker_url: str  # ws://host:port, as `kandev-lsp broker` printed it
    broker_token: str  # never sent to the page
    session_id: str
    language: str
    language_id: str
    workspace: Path
    file: Path  # inside workspace
    auto_install: bool

    def config(self) -> dict[str, Any]:
        return {
            "brokerUrl": self.broker_url,
            "sessionId": self.session_id,
            "language": self.language,
            "languageId": self.language_id,
            "autoInstall": self.auto_install,
            "document": {
                "path": str(self.file.relative_to(self.workspace)),
                "uri": self.file.as_uri(),
                "text": self.file.read_text(encoding="utf-8"),
            },
        }

    def mint_ticket(self, origin: str) -> dict[str, Any]:
        """A fresh ticket from the broker for this session and language, bound to the page's ``origin``
        too: leaked to a page elsewhere, it is refused there."""
        parts = urllib.parse.urlsplit(self.broker_url)
        scheme = {"ws": "http", "wss": "https"}[parts.scheme]
        request = urllib.request.Request(
            f"{scheme}://{parts.netloc}/lsp/tickets",
            data=json.dumps(
                {"sessionId": self.session_id, "language": self.language, "origin": origin}
            ).encode(),
            headers={"Authorization": f"Bearer {self.broker_token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=TICKET_TIMEOUT_S) as response:
            answer = json.load(response)
        return {"ticket": answer["ticket"], "expiresIn": answer.get("expiresIn")}


class EmbedderHandler(http.server.BaseHTTPRequestHandler):
    server: EmbedderServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if not self._host_served():
            return
        path = urllib.parse.urlsplit(self.path).path
        if path == "/api/config":
            self._json(200, self.server.embedding.config())
        elif path == "/":
            self._file(WEB / "index.html")
        elif path.lstrip("/") in PAGE_FILES:
            self._file(WEB / path.lstrip("/"))
        elif path.startswith("/vs/"):
            self._monaco(path.removeprefix("/vs/"))
        else:
            self._json(404, {"error": "not_found"})

    def do_POST(self) -> None:
        if not self._host_served():
            return
        if urllib.parse.urlsplit(self.path).path != "/api/ticket":
            self._json(404, {"error": "not_found"})
            return
        origin = self._page_origin()
        if origin is None:
            self._json(
                403,
                {"error": "forbidden_origin", "message": "tickets are minted for this origin's pages only"},
            )
            return
        try:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(min(length, 4096)) or b"{}")
        except ValueError:
            self._json(400, {"error": "bad_request", "message": "send a JSON body"})
            return
        embedding = self.server.embedding
        if body != {"sessionId": embedding.session_id, "language": embedding.language}:
            self._json(403, {"error": "forbidden", "message": "this page may use only its own session"})
            return
        try:
            self._json(200, embedding.mint_ticket(origin))
        except (OSError, ValueError, KeyError) as exc:  # the broker is down or answered something else
            detail = f"HTTP {exc.code}" if isinstance(exc, urllib.error.HTTPError) else type(exc).__name__
            self._json(
                502, {"error": "broker_unavailable", "message": f"the broker minted no ticket ({detail})"}
            )

    def _host_served(self) -> bool:
        """Whether the request names this backend in its one ``Host``; answered 421 when it does not
        (DNS rebinding: see the module docstring)."""
        hosts = self.headers.get_all("Host") or []
        if len(hosts) == 1 and hosts[0].strip().lower() in self.server.hosts:
            return True
        self.close_connection = True
        self._json(
            421,
            {
                "error": "misdirected_request",
                "message": "this backend serves " + ", ".join(sorted(self.server.hosts)) + " only; "
                "open the page at the address the demo printed",
            },
        )
        return False

    def _page_origin(self) -> str | None:
        """The origin of the page asking, when it is this very origin (browsers always send Origin on a
        POST); None for anyone else."""
        origin, host = self.headers.get_all("Origin") or [], self.headers.get_all("Host") or []
        if len(origin) == 1 and len(host) == 1 and origin[0] == f"http://{host[0]}":
            return origin[0]
        return None

    def _monaco(self, relative: str) -> None:
        root = self.server.monaco
        target = (root / urllib.parse.unquote(relative)).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            self._json(404, {"error": "not_found"})
            return
        self._file(target, cache=True)

    def _file(self, path: Path, cache: bool = False) -> None:
        body = path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPES.get(path.suffix, "application/octet-stream"))
        self.send_header("Content-Length", str(len(body)))
        # monaco's files never change under a pinned version; the page's own files are re-read each time
        self.send_header("Cache-Control", "max-age=3600" if cache else "no-cache")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: dict[str, Any]) -> None:
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"embedder: {format % args}\n")  # request lines only: no body, no token


class EmbedderServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        embedding: Embedding,
        monaco: Path = MONACO,
        allowed_hosts: tuple[str, ...] = (),
    ) -> None:
        super().__init__(address, EmbedderHandler)
        self.embedding = embedding
        self.monaco = monaco.resolve()
        #: The Host values this backend answers (:func:`served_hosts`); the port is the one bound.
        self.hosts = served_hosts(address[0], int(self.server_address[1]), allowed_hosts)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/"


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker-url", required=True, help="the broker's ws:// URL, as it printed it")
    parser.add_argument(
        "--broker-token-file", required=True, metavar="FILE", help="the broker's token (first line)"
    )
    parser.add_argument("--session", required=True, help="the session id the page edits")
    parser.add_argument("--language", default="python")
    parser.add_argument("--language-id", help="Monaco's language id (default: the language)")
    parser.add_argument("--workspace", required=True, type=Path, help="the task's workspace")
    parser.add_argument("--file", required=True, help="the file to edit, relative to the workspace")
    parser.add_argument(
        "--auto-install", action="store_true", help="let the task host install a missing server"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name the page is opened under (a proxy's), besides the listening address",
    )
    parser.add_argument("--monaco", type=Path, default=MONACO, help="monaco-editor's min/vs folder")
    return parser.parse_args(argv)


def embedding_from(arguments: argparse.Namespace) -> Embedding:
    """The embedding the arguments describe; SystemExit with what to do when one of them is unusable."""
    if not (arguments.monaco / "loader.js").is_file():
        raise SystemExit(
            f"embedder: no monaco-editor at {arguments.monaco}; run scripts/setup (npm installs it)"
        )
    workspace = arguments.workspace.resolve()
    file = (workspace / arguments.file).resolve()
    if not file.is_relative_to(workspace) or not file.is_file():
        raise SystemExit(f"embedder: {arguments.file} is not a file inside {workspace}")
    try:
        token = Path(arguments.broker_token_file).read_text(encoding="utf-8").split("\n", 1)[0].strip()
    except OSError as exc:
        raise SystemExit(f"embedder: cannot read the broker token file: {exc.strerror}") from exc
    return Embedding(
        broker_url=arguments.broker_url.rstrip("/"),
        broker_token=token,
        session_id=arguments.session,
        language=arguments.language,
        language_id=arguments.language_id or arguments.language,
        workspace=workspace,
        file=file,
        auto_install=arguments.auto_install,
    )


def main(argv: list[str] | None = None) -> None:
    arguments = parse_arguments(argv)
    server = EmbedderServer(
        (arguments.host, arguments.port),
        embedding_from(arguments),
        arguments.monaco,
        tuple(arguments.allow_host),
    )
    print(json.dumps({"event": "listening", "url": server.url}), flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
