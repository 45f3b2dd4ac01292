"""Shared helpers of the stream tests (imported by name: conftest puts this folder on sys.path).

* :class:`FakePlugin`: a third-party plugin declaring fake languages served by ``fake_lsp.py`` (and a few
  that are missing, to exercise installs against a local release server).
* :class:`ReleaseServer`: a real HTTP server on 127.0.0.1 serving (or stalling, or 404-ing) release assets.
* :class:`LspPeer`: a tiny LSP client over a WebSocket or a subprocess's stdio, written independently of
  the code under test (its own framing, its own JSON handling).
* :func:`tagged_alive`: live processes carrying a test's tag, read from /proc directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import http.server
import itertools
import json
import os
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kandev_lsp import hookimpl
from kandev_lsp.discovery import Candidate
from kandev_lsp.host import PluginHost
from kandev_lsp.language import LanguageSpec, ManualInstall, ReleaseAsset, ReleaseRecipe
from kandev_lsp.platform import HostPlatform
from kandev_lsp.session import BridgeLimits
from kandev_lsp.settings import SettingsFile
from kandev_lsp.stream.auth import StreamToken
from kandev_lsp.stream.server import StreamConfig, StreamServer
from kandev_lsp.taskenv import Task, TaskEnvironment
from kandev_lsp.testing import processes_tagged
from websockets.asyncio.client import ClientConnection, connect

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))  # the stand-ins' shared framing, for the fake's copies
from standin_framing import copied_source  # noqa: E402

TOKEN = "stream-test-token-0123456789abcdef"
TAG_VARIABLE = "KANDEV_TEST_TAG"
FAKE_SOURCE = HERE / "fake_lsp.py"


# Processes ----------------------------------------------------------------------------------------------
def tagged_alive(tag: str) -> list[int]:
    """Live (non-zombie) processes whose environment holds this test's tag."""
    return processes_tagged(TAG_VARIABLE, tag)


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


#: The fake's interpreter line: isolated and without site (which imports every .pth of the venv), so
#: a fake starts in a few milliseconds and hundreds of connection cycles stay fast.
FAST_PYTHON = f"{sys.executable} -IS"


def write_executable(path: Path, source: str, interpreter: str = FAST_PYTHON) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{interpreter}\n{source}", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def fake_server_source() -> str:
    source = copied_source(FAKE_SOURCE)
    # --version for install verification of the release-installed copy
    return source.replace(
        "def main() -> None:\n",
        "def main() -> None:\n    if sys.argv[1:] == ['--version']:\n        print('fake-lsp 1.0.0')\n        return\n",
    )


# A release server on 127.0.0.1 -----------------------------------------------------------------------------
class ReleaseServer:
    """Serves ``/<version>/<asset>`` from :attr:`assets`; paths in :attr:`stall` send headers then hang
    until :meth:`close`; everything else is 404."""

    def __init__(self) -> None:
        self.assets: dict[str, bytes] = {}
        self.stall: set[str] = set()
        self.requests: list[str] = []
        self._release = threading.Event()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                owner.requests.append(self.path)
                self.close_connection = True
                if self.path in owner.stall:
                    self.send_response(200)
                    self.send_header("Content-Length", str(10**6))
                    self.end_headers()
                    self.wfile.write(b"x" * 100)
                    self.wfile.flush()
                    self.connection.settimeout(0.05)
                    while not owner._release.is_set():  # until the client hangs up, or the test ends
                        try:
                            if self.connection.recv(1) == b"":
                                return
                        except TimeoutError:
                            continue
                        except OSError:
                            return
                    return
                body = owner.assets.get(self.path)
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


# The fake plugin ---------------------------------------------------------------------------------------------
def _release_recipe(base_url: str, version: str, name: str, digest: str | None) -> ReleaseRecipe:
    host = HostPlatform.current()
    return ReleaseRecipe(
        version=version,
        base_url=base_url,
        assets={str(host): ReleaseAsset(name, compression="none", sha256=digest or "0" * 64)},
        bin="fake-release-lsp",
    )


class FakePlugin:
    """Fake languages for fault tests, registered like any third-party plugin.

    ``fake-echo``/``fake-mute``/``fake-stubborn``: found at the fake server (modes echo/mute/stubborn); ``fake-badexec``: found at a
    script whose interpreter does not exist; ``fake-release`` (installs from :class:`ReleaseServer`,
    succeeds), ``fake-broken`` (404), ``fake-slow`` (the download stalls): missing until installed;
    ``fake-manual``: missing, no installer.
    """

    def __init__(self, fake: str, bad: str, release: ReleaseServer | None) -> None:
        self.paths = {"fake-echo": fake, "fake-mute": fake, "fake-stubborn": fake, "fake-badexec": bad}
        manual = ManualInstall("Install the fake server by hand.")
        self.specs = [
            LanguageSpec("fake-echo", "Fake echo", "fake-lsp", args=("echo",), install=manual),
            LanguageSpec("fake-mute", "Fake mute", "fake-lsp", args=("mute",), install=manual),
            LanguageSpec("fake-stubborn", "Fake stubborn", "fake-lsp", args=("stubborn",), install=manual),
            LanguageSpec("fake-badexec", "Fake bad exec", "fake-lsp", install=manual),
            LanguageSpec("fake-manual", "Fake manual", "fake-manual-lsp", install=manual),
        ]
        if release is not None:
            source = fake_server_source().encode()
            body = f"#!{FAST_PYTHON}\n".encode() + source
            release.assets["/1.0.0/fake-ls"] = body
            release.stall.add("/1.0.0/slow-ls")
            digest = hashlib.sha256(body).hexdigest()
            url = release.base_url
            self.specs += [
                LanguageSpec(
                    "fake-release",
                    "Fake release",
                    "fake-release-lsp",
                    args=("echo",),
                    install=_release_recipe(url, "1.0.0", "fake-ls", digest),
                ),
                LanguageSpec(
                    "fake-broken",
                    "Fake broken",
                    "fake-release-lsp",
                    install=_release_recipe(url, "9.9.9", "fake-ls", digest),
                ),
                LanguageSpec(
                    "fake-slow",
                    "Fake slow",
                    "fake-release-lsp",
                    install=_release_recipe(url, "1.0.0", "slow-ls", None),
                ),
            ]
        self.discover_calls = 0

    @hookimpl
    def kandev_lsp_languages(self) -> list[LanguageSpec]:
        return self.specs

    @hookimpl
    def kandev_lsp_discover(self, language: LanguageSpec, task: Task) -> Iterable[Candidate] | None:
        self.discover_calls += 1
        path = self.paths.get(language.id)
        return [Candidate(path, "test fake")] if path else None

    @hookimpl
    def kandev_lsp_default_settings(self, language: LanguageSpec) -> Mapping[str, Any] | None:
        if language.id != "fake-echo":
            return None
        return {"fake.flag": True, "nested": {"level": 1}, "kept": "default"}

    @hookimpl
    def kandev_lsp_initialization_options(
        self, language: LanguageSpec, settings: Mapping[str, Any]
    ) -> Mapping[str, Any] | None:
        if language.id != "fake-echo":
            return None
        return {"fromPlugin": True, "kept": settings.get("kept")}

    @hookimpl
    def kandev_lsp_suppressed_providers(
        self, language: LanguageSpec, capabilities: Mapping[str, Any]
    ) -> Iterable[str] | None:
        """``fake-stubborn`` makes the editor's hover redundant when its server advertises one."""
        if language.id != "fake-stubborn":
            return None
        return ["hover"] if capabilities.get("hoverProvider") else []


# A test's world ---------------------------------------------------------------------------------------------
class StreamKit:
    """A test's workspace, HOME, settings file, tag, fake plugin and helpers to serve and connect."""

    def __init__(self, root: Path, tag: str, fake: str, bad: str, release: ReleaseServer | None) -> None:
        self.root = root
        self.tag = tag
        self.workspace = root / "workspace"
        self.workspace.mkdir()
        self.home = root / "home"
        self.home.mkdir()
        self.settings_path = root / "settings.json"
        self.fake = fake
        self.bad = bad
        self.release = release
        self.plugin: FakePlugin | None = None

    def plugins(self, *, builtins: bool = False) -> PluginHost:
        host = PluginHost.load(environ={}) if builtins else PluginHost()
        self.plugin = FakePlugin(self.fake, self.bad, self.release)
        assert host.register(self.plugin, "fake"), host.problems
        return host

    def task(self, **overrides: str | None) -> Task:
        env = TaskEnvironment.from_agent({"HOME": str(self.home), TAG_VARIABLE: self.tag, **overrides})
        return Task(str(self.workspace), env)

    def settings(self, plugins: PluginHost, data: dict[str, Any] | None = None) -> SettingsFile:
        if data is not None:
            self.write_settings(data)
        return SettingsFile(str(self.settings_path), known=plugins.languages())

    def write_settings(self, data: dict[str, Any]) -> None:
        temporary = self.settings_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(data), encoding="utf-8")
        os.replace(temporary, self.settings_path)

    @contextlib.asynccontextmanager
    async def serve(
        self,
        plugins: PluginHost | None = None,
        *,
        limits: BridgeLimits | None = None,
        settings: SettingsFile | None = None,
        task: Task | None = None,
        ping_interval: float | None = 20.0,
    ) -> AsyncIterator[StreamServer]:
        config = StreamConfig(limits=limits or BridgeLimits(), close_timeout=2.0, ping_interval=ping_interval)
        server = StreamServer(
            plugins=plugins or self.plugins(),
            task=task or self.task(),
            token=StreamToken(TOKEN),
            config=config,
            settings=settings,
        )
        async with server:
            yield server

    @staticmethod
    def connect(
        server: StreamServer,
        language: str,
        *,
        auto_install: bool = False,
        token: str | None = TOKEN,
        query: str | None = None,
        **options: Any,
    ) -> connect:
        if query is None:
            query = f"language={language}" + ("&autoInstall=1" if auto_install else "")
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return connect(f"{server.url}?{query}", additional_headers=headers, max_size=None, **options)


# Real servers ----------------------------------------------------------------------------------------------
class RealServers:
    """A HOME whose managed cache holds real servers, and the npm cache their installs share."""

    def __init__(self, home: Path, npm_cache: Path) -> None:
        self.home = home
        self.npm_cache = npm_cache

    def overrides(self) -> dict[str, str]:
        """Task environment overrides that find these servers (and only through the managed cache)."""
        return {"HOME": str(self.home), "npm_config_cache": str(self.npm_cache), "PATH": "/usr/bin:/bin"}

    async def install(self, languages: Iterable[str], workspace: Path) -> None:
        from kandev_lsp.install import InstallManager

        env = TaskEnvironment.from_agent(self.overrides())
        task = Task(str(workspace), env)
        async with InstallManager(PluginHost.load(environ={})) as installer:
            await asyncio.gather(*(installer.install(language, task) for language in languages))


# An independent LSP client ---------------------------------------------------------------------------------
class LspPeer:
    """A minimal LSP client: requests with ids, answers the server's requests with null, keeps notifications."""

    def __init__(
        self, send: Callable[[bytes], Awaitable[None]], receive: Callable[[], Awaitable[bytes]]
    ) -> None:
        self._send = send
        self._receive = receive
        self._ids = itertools.count(1)
        self.notifications: list[dict[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []
        self.unmatched: list[dict[str, Any]] = []
        #: The result sent for each request from the server (an editor answers some of them).
        self.answer: Callable[[dict[str, Any]], Any] = lambda request: None

    @classmethod
    def over_websocket(cls, ws: ClientConnection) -> LspPeer:
        async def send(body: bytes) -> None:
            await ws.send(body.decode())

        async def receive() -> bytes:
            data = await ws.recv()
            return data.encode() if isinstance(data, str) else data

        return cls(send, receive)

    @classmethod
    def over_stdio(cls, process: asyncio.subprocess.Process) -> LspPeer:
        assert process.stdin is not None and process.stdout is not None
        stdin, stdout = process.stdin, process.stdout

        async def send(body: bytes) -> None:
            stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            await stdin.drain()

        async def receive() -> bytes:
            header = await stdout.readuntil(b"\r\n\r\n")
            length = None
            for line in header.decode("ascii").split("\r\n"):
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            assert length is not None, header
            return await stdout.readexactly(length)

        return cls(send, receive)

    async def send(self, message: dict[str, Any]) -> None:
        await self._send(json.dumps(message).encode())

    async def receive(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(await self._receive())
        return message

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def request(self, method: str, params: Any = None, *, timeout: float = 30.0) -> dict[str, Any]:
        """Send a request and return its response message, handling whatever comes in between."""
        number = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": number, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.wait_response(number, timeout=timeout)

    async def wait_response(self, number: int | str, *, timeout: float = 30.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                incoming = await self.receive()
                if "method" in incoming and "id" in incoming:
                    self.server_requests.append(incoming)
                    result = self.answer(incoming)
                    await self.send({"jsonrpc": "2.0", "id": incoming["id"], "result": result})
                elif "method" in incoming:
                    self.notifications.append(incoming)
                elif incoming.get("id") == number:
                    return incoming
                else:
                    self.unmatched.append(incoming)

    async def wait_notification(self, method: str, *, timeout: float = 10.0) -> dict[str, Any]:
        for seen in self.notifications:
            if seen["method"] == method:
                self.notifications.remove(seen)
                return seen
        async with asyncio.timeout(timeout):
            while True:
                incoming = await self.receive()
                if incoming.get("method") == method and "id" not in incoming:
                    return incoming
                if "method" in incoming and "id" in incoming:
                    self.server_requests.append(incoming)
                    result = self.answer(incoming)
                    await self.send({"jsonrpc": "2.0", "id": incoming["id"], "result": result})
                elif "method" in incoming:
                    self.notifications.append(incoming)
                else:
                    self.unmatched.append(incoming)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
