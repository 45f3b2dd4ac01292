"""What the page tests share (not a test module): the shipped processes of an embedding, and a few
questions asked of the page, of Chromium and of the server.

:class:`Stack` runs them as a deployment does: ``kandev-lsp serve`` on a copy of ``web/example`` with the
suite's installed pyright (``real_servers``) behind a wiretap (``wiretap_pyright.py``), ``kandev-lsp
broker`` with continuity on and the page's origin allowed, and ``web/embedder.py`` holding the broker's
token. Every process a language server runs in carries the test's tag.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdp import Page
from kandev_lsp.testing import processes_tagged

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stream"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from standin_framing import copied_source
from stream_testkit import write_executable

REPO = Path(__file__).resolve().parents[2]
WEB = REPO / "web"
sys.path.insert(0, str(WEB))
from demo import free_port  # noqa: E402  (the demo's own way to give the page a port before the broker starts)

CLI = [sys.executable, "-m", "kandev_lsp.cli"]
TAG = "KANDEV_TEST_TAG"
SESSION = "page-session"
FILE = "greetings.py"
TICKET_PROTOCOL = "kandev-lsp.ticket."
STATE = "document.getElementById('status').dataset.state"
STATUS = "document.getElementById('status').textContent"
MARKERS = (
    "monaco.editor.getModelMarkers({owner: kandevLsp.markerOwner}).map(m => [m.startLineNumber, m.message])"
)
#: The line of web/example/greetings.py with the deliberate error, and its call of greeting().
ERROR_LINE = 14
CALL_LINE, CALL_COLUMN = 11, 13
DEFINITION_LINE = 5


def _environ(**extra: str) -> dict[str, str]:
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("KANDEV_LSP_", "KANDEV_FEATURES")) and key != TAG
    }
    return {**environ, **extra}


def _listening(process: subprocess.Popen[str], log: Path) -> dict[str, Any]:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, f"{log.stem} printed no listening line: {log.read_text()[-3000:]}"
    return dict(json.loads(line))


def reap(tag: str) -> list[int]:
    """Kill every process still carrying ``tag``; the ones there were (a test asserts there were none)."""
    leaked = processes_tagged(TAG, tag)
    for pid in leaked:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return leaked


@dataclass
class Stack:
    tmp: Path
    real_home: Path
    tag: str = field(default_factory=lambda: uuid.uuid4().hex)
    workspace: Path = field(init=False)
    page_port: int = field(init=False)
    broker_port: int = 0
    broker_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    processes: dict[str, subprocess.Popen[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.workspace = self.tmp / "workspace"
        self.workspace.mkdir()
        (self.workspace / FILE).write_text((WEB / "example" / FILE).read_text())
        self.record = self.tmp / "wiretap.jsonl"
        self.hold = self.tmp / "wiretap.hold"
        self.page_port = free_port("127.0.0.1")

    # The processes ---------------------------------------------------------------------------------------
    def _start(self, name: str, argv: list[str], environ: dict[str, str]) -> dict[str, Any]:
        log = self.tmp / f"{name}.log"
        with log.open("a") as sink:
            process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=sink, env=environ, text=True)
        self.processes[name] = process
        return _listening(process, log)

    def start(self) -> None:
        bin_folder = self.tmp / "task-bin"
        write_executable(
            bin_folder / "pyright-langserver",
            copied_source(Path(__file__).parent / "wiretap_pyright.py"),
            f"{sys.executable} -IS",
        )
        real = self.real_home / ".kandev" / "lsp-servers" / "python" / "current" / "node_modules" / ".bin"
        serve_token = secrets.token_urlsafe(32)
        serve = self._start(
            "serve",
            [
                *CLI,
                "serve",
                "--workspace",
                str(self.workspace),
                f"--env=PATH={bin_folder}:/usr/bin:/bin",
                f"--env=HOME={self.real_home}",
                f"--env={TAG}={self.tag}",
                f"--env=WIRETAP_SERVER={real / 'pyright-langserver'}",
                f"--env=WIRETAP_RECORD={self.record}",
                f"--env=WIRETAP_HOLD={self.hold}",
            ],
            _environ(KANDEV_LSP_TOKEN=serve_token),
        )
        directory = self.tmp / "directory.json"
        execution = {"executor": "local", "streamUrl": serve["url"], "token": serve_token}
        directory.write_text(
            json.dumps(
                {
                    "sessions": {SESSION: "page-execution"},
                    "executions": {"page-execution": {**execution, "workspace": str(self.workspace)}},
                }
            )
        )
        token_file = self.tmp / "broker-token"
        token_file.write_text(self.broker_token + "\n")
        self.start_broker()
        self._start(
            "embedder",
            [
                sys.executable,
                str(WEB / "embedder.py"),
                f"--broker-url=ws://127.0.0.1:{self.broker_port}",
                f"--broker-token-file={token_file}",
                f"--session={SESSION}",
                f"--workspace={self.workspace}",
                f"--file={FILE}",
                f"--port={self.page_port}",
            ],
            _environ(),
        )

    def start_broker(self) -> None:
        """Start the broker, on the port of the one before when there was one (the page reconnects there)."""
        line = self._start(
            "broker",
            [
                *CLI,
                "broker",
                f"--directory={self.tmp / 'directory.json'}",
                f"--token-file={self.tmp / 'broker-token'}",
                f"--allow-origin=http://127.0.0.1:{self.page_port}",
                f"--port={self.broker_port}",
            ],
            _environ(KANDEV_FEATURES_LSP_BROWSER_CONTINUITY="1"),
        )
        self.broker_port = int(line["port"])

    def stop(self, name: str) -> int:
        """SIGTERM, then the exit status (killed after 30 s)."""
        process = self.processes.pop(name)
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            status = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            status = process.wait()
        if process.stdout is not None:
            process.stdout.close()
        return status

    def close(self) -> None:
        for name in ("embedder", "broker", "serve"):  # the broker stops its leases' servers first
            if name in self.processes:
                self.stop(name)

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()

    # The server's side -----------------------------------------------------------------------------------
    def received(self, method: str) -> list[dict[str, Any]]:
        """What the real pyright got with this method, as the wiretap wrote it down."""
        if not self.record.exists():
            return []
        entries = [json.loads(line) for line in self.record.read_text().splitlines()]
        return [entry for entry in entries if entry["method"] == method]

    def servers(self) -> list[int]:
        """Live processes of language servers (the wiretap and pyright, with pyright's short-lived
        children): for "nothing runs"."""
        return processes_tagged(TAG, self.tag)

    def pyright(self) -> list[int]:
        """The live pyright server processes themselves, for "the same pyright": not the python pyright
        runs now and then for its search paths, which may be listed in one look and gone in the next."""
        return processes_tagged(TAG, self.tag, named="node")

    @property
    def page_url(self) -> str:
        return f"http://127.0.0.1:{self.page_port}/"

    @property
    def foreign_url(self) -> str:
        """The same page from another origin (a host name instead of the address)."""
        return f"http://localhost:{self.page_port}/"


@contextlib.contextmanager
def running_stack(tmp: Path, real_home: Path) -> Iterator[Stack]:
    """A started stack; at the end it is stopped, and a language server left running fails the test."""
    stack = Stack(tmp, real_home)
    try:
        stack.start()
        yield stack
    finally:
        stack.close()
        assert reap(stack.tag) == [], "a language server outlived its test"


# The page's side ------------------------------------------------------------------------------------------
async def state(page: Page, *states: str, timeout: float = 60) -> str:
    """Wait until the page's status is one of ``states``; its status text."""
    await page.wait_for(f"{json.dumps(list(states))}.includes({STATE})", timeout=timeout)
    return str(await page.evaluate(STATUS))


async def markers(page: Page, timeout: float = 60) -> list[list[Any]]:
    """Wait for Monaco to hold markers of the page's language server; them, as [line, message]."""
    return list(
        await page.wait_for(f"(() => {{ const m = {MARKERS}; return m.length ? m : null; }})()", timeout)
    )


def sockets_opened(page: Page) -> int:
    """WebSockets the tab opened, as Chromium reported them (not as the page says)."""
    return len(page.log.matching("Network.webSocketCreated"))


def tickets_asked(page: Page) -> int:
    """Requests the tab sent to its backend's ticket endpoint, as Chromium reported them."""
    return len(
        page.log.matching("Network.requestWillBeSent", lambda p: p["request"]["url"].endswith("/api/ticket"))
    )


def offered_tickets(page: Page) -> list[str]:
    """The ticket the tab offered in each WebSocket handshake it sent, in order, read from Chromium's record
    of the handshakes (a socket whose connection was refused sent none)."""
    tickets = []
    for handshake in page.log.matching("Network.webSocketWillSendHandshakeRequest"):
        protocols: str = handshake["params"]["request"]["headers"]["Sec-WebSocket-Protocol"]
        [ticket] = [
            value.strip() for value in protocols.split(",") if value.strip().startswith(TICKET_PROTOCOL)
        ]
        tickets.append(ticket.removeprefix(TICKET_PROTOCOL))
    return tickets


def frames_received(page: Page) -> list[dict[str, Any]]:
    """Every text frame the tab received on its WebSockets, parsed, in order, with its ``socket``."""
    return _frames(page, "Network.webSocketFrameReceived")


def frames_sent(page: Page) -> list[dict[str, Any]]:
    """Every text frame the tab sent on its WebSockets, parsed, in order, with its ``socket``."""
    return _frames(page, "Network.webSocketFrameSent")


def _frames(page: Page, method: str) -> list[dict[str, Any]]:
    frames = []
    for event in page.log.matching(method, lambda p: p["response"]["opcode"] == 1):
        with contextlib.suppress(ValueError):
            frames.append(
                {
                    "socket": event["params"]["requestId"],
                    **json.loads(event["params"]["response"]["payloadData"]),
                }
            )
    return frames


async def answer_tickets_with(page: Page, ticket: str) -> list[str]:
    """Answer the tab's ticket requests with ``ticket`` (a backend handing out a spent one), through
    Chromium's request interception; the list of requests answered so far."""
    return await _answer_tickets(page, 200, {"ticket": ticket, "expiresIn": 30})


async def refuse_tickets_with(page: Page, status: int, message: str) -> list[str]:
    """Answer the tab's ticket requests with an HTTP error (a backend that mints none, as the demo's says
    it); the list of requests answered so far."""
    return await _answer_tickets(page, status, {"error": "refused", "message": message})


async def _answer_tickets(page: Page, status: int, answer: dict[str, Any]) -> list[str]:
    answered: list[str] = []
    replies: list[asyncio.Future[dict[str, Any]]] = []
    body = base64.b64encode(json.dumps(answer).encode()).decode()

    def fulfil(event: dict[str, Any]) -> None:
        if event["method"] != "Fetch.requestPaused":
            return
        answered.append(event["params"]["requestId"])
        reply = {
            "requestId": event["params"]["requestId"],
            "responseCode": status,
            "responseHeaders": [{"name": "Content-Type", "value": "application/json"}],
            "body": body,
        }
        replies.append(asyncio.ensure_future(page.send("Fetch.fulfillRequest", reply)))

    page.log.listeners.append(fulfil)
    await page.send("Fetch.enable", {"patterns": [{"urlPattern": "*/api/ticket"}]})
    return answered


class TicketGate:
    """The tab's ticket requests refused with 403 while ``refusing`` is true, passed on to the backend
    once it is false (a backend that is down for a while), through Chromium's request interception."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.refusing = True
        self.refused = 0
        self._replies: list[asyncio.Future[dict[str, Any]]] = []
        page.log.listeners.append(self._paused)

    async def enable(self) -> TicketGate:
        await self.page.send("Fetch.enable", {"patterns": [{"urlPattern": "*/api/ticket"}]})
        return self

    def _paused(self, event: dict[str, Any]) -> None:
        if event["method"] != "Fetch.requestPaused":
            return
        request_id = event["params"]["requestId"]
        if not self.refusing:
            self._replies.append(
                asyncio.ensure_future(self.page.send("Fetch.continueRequest", {"requestId": request_id}))
            )
            return
        self.refused += 1
        body = base64.b64encode(json.dumps({"error": "refused", "message": "backend down"}).encode()).decode()
        reply = {
            "requestId": request_id,
            "responseCode": 503,
            "responseHeaders": [{"name": "Content-Type", "value": "application/json"}],
            "body": body,
        }
        self._replies.append(asyncio.ensure_future(self.page.send("Fetch.fulfillRequest", reply)))
