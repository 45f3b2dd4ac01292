"""``--install`` seen from the agent tools (a user trial of ``kandev-lsp mcp --install``).

The trial: an MCP client passed kandev-lsp only HOME, LOGNAME, PATH, SHELL, TERM and USER, so npm lost
NODE_EXTRA_CA_CERTS and failed with SELF_SIGNED_CERT_IN_CHAIN. Meanwhile every call said "still starting
(9.0 s so far)" (never "installing", the time restarting each call); the failure then came once as an
``ok: true`` empty answer whose notice could not hold npm's error lines, and the next call ran npm again.

Here: the real npm against a 127.0.0.1 HTTPS registry whose certificate is self-signed (the trial's
failure, offline), and a failing stand-in install manager (fault injection) for the phases' clocks and the
back-off, which a real install cannot time.
"""

from __future__ import annotations

import asyncio
import http.server
import re
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from intel_projects import TYPESCRIPT, write
from kandev_lsp import Task, TaskEnvironment
from kandev_lsp.host import PluginHost
from kandev_lsp.install import InstallError
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.runtime.executor import Deadline, ProviderUnavailable
from kandev_lsp.intel.runtime.notices import INSTALL_OUTPUT_LINES, install_output_lines
from kandev_lsp.intel.runtime.pool import INSTALL_RETRY_AFTER, InstallFailed, ServerPool
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.dispatch import IntelContext
from kandev_lsp.lifecycle import Lifecycle
from stream_testkit import TAG_VARIABLE

PINNED = "npm typescript-language-server@5.3.0 typescript@5.9.3"


def _env(home: Path, tag: str, **extra: str) -> TaskEnvironment:
    """What an MCP client's stdio launch passes (nothing of this machine's npm or CA settings)."""
    home.mkdir(exist_ok=True)
    return TaskEnvironment.from_agent(
        {"HOME": str(home), "PATH": "/usr/bin:/bin", TAG_VARIABLE: tag, **extra}, base={}
    )


# -- fault injection: a failing install manager --------------------------------------------------------
NPM_TAIL = [
    f"npm http fetch GET https://user:secret@registry.example/pkg-{n}?token=abc" for n in range(30)
] + [
    "npm error code SELF_SIGNED_CERT_IN_CHAIN",
    "npm error errno SELF_SIGNED_CERT_IN_CHAIN",
    "npm error //registry.example/:_authToken=npm_SECRETVALUE",
    "npm error request to https://registry.example/typescript-language-server failed, reason: self-signed "
    "certificate in certificate chain",
]


class FailingInstalls:
    """Stands in for the install manager: each install waits for ``release``, then fails like npm."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = asyncio.Event()

    async def install(self, language: str, task: Task, **_: Any) -> Any:
        self.calls += 1
        await self.release.wait()
        raise InstallError(
            language,
            "npm install typescript-language-server@5.3.0 typescript@5.9.3 failed (exit status 1); nothing "
            "was changed. Check that the task's npm can reach its registry.",
            output="\n".join(NPM_TAIL),
        )

    async def aclose(self) -> None:
        return None


class FakeInstallLifecycle(Lifecycle):
    installs: FailingInstalls

    def install_manager(self) -> Any:
        return self.installs


async def _unavailable(pool: ServerPool, file: Any, seconds: float | None) -> ProviderUnavailable:
    with pytest.raises(ProviderUnavailable) as raised:
        await pool.server_for(file, Deadline(seconds) if seconds is not None else None)
    return raised.value


def _said_seconds(unavailable: ProviderUnavailable) -> int:
    """The seconds the message says ("... 2 s so far"), checked to be its ``elapsedSeconds``, rounded:
    the message and the field say the same time, however long the machine took."""
    said = re.search(r": (\d+) s so far \(started at ", unavailable.message)
    assert said is not None, unavailable.message
    assert abs(int(said.group(1)) - unavailable.detail["elapsedSeconds"]) <= 0.55, unavailable.message
    return int(said.group(1))


def test_install_phase_clock_failure_lines_and_back_off(tmp_path: Path, tag: str) -> None:
    folder = write(tmp_path / "project", TYPESCRIPT)

    async def scenario() -> None:
        lifecycle = FakeInstallLifecycle(PluginHost.load())
        lifecycle.installs = installs = FailingInstalls()
        pool = ServerPool(Workspace([folder]), lifecycle, _env(tmp_path / "home", tag), install=True)
        file = pool.workspace.resolve("src/lib.ts")
        async with pool:
            first = await _unavailable(pool, file, 0.3)
            assert first.message.startswith(
                f"installing typescript-language-server ({PINNED}) for typescript: "
            ), first.message
            assert first.detail["installing"] is True and "starting" not in first.detail
            assert first.detail["elapsedSeconds"] >= 0.2, first.detail
            _said_seconds(first)  # the message says the time elapsedSeconds does
            await asyncio.sleep(1.2)
            second = await _unavailable(pool, file, 0.3)
            # Counted from the install's start (1.5 s and more), not from this call's (0.3 s). Lower
            # bounds only: a loaded machine makes each wait longer, never shorter.
            assert second.detail["elapsedSeconds"] >= 1.4, second.detail
            assert _said_seconds(second) >= 1, second.message
            assert installs.calls == 1

            pool.install_retry_after = 1.0
            installs.release.set()
            failed = await _unavailable(pool, file, None)
            assert isinstance(failed, InstallFailed)
            lines = failed.detail["installError"]
            assert len(lines) == INSTALL_OUTPUT_LINES and lines[-1].startswith("npm error request to"), lines
            assert "npm error code SELF_SIGNED_CERT_IN_CHAIN" in lines
            assert "npm error code SELF_SIGNED_CERT_IN_CHAIN" in failed.message  # shown where clients show
            assert not any("secret" in line or "abc" in line or "SECRETVALUE" in line for line in lines)
            assert "SECRETVALUE" not in failed.message and "user:secret" not in failed.message
            for advice in ("NODE_EXTRA_CA_CERTS", "`env`", "`kandev-lsp install typescript`", "tried again"):
                assert advice in failed.message, failed.message
            assert failed.message.startswith(
                f"installing typescript-language-server ({PINNED}) for typescript "
            )

            # The back-off: the same failure at once, npm not run again.
            again = await _unavailable(pool, file, 5.0)
            assert isinstance(again, InstallFailed) and again.detail["installError"] == lines
            assert 0 < again.detail["retryInSeconds"] <= 1.0
            assert installs.calls == 1
            # After it, one retry (which fails again here, and is remembered again).
            await asyncio.sleep(1.1)
            retried = await _unavailable(pool, file, 5.0)
            assert isinstance(retried, InstallFailed) and installs.calls == 2
            assert isinstance(await _unavailable(pool, file, 5.0), InstallFailed) and installs.calls == 2

    asyncio.run(scenario())


def test_a_failed_install_is_an_unavailable_tool_result_never_an_empty_answer(
    tmp_path: Path, tag: str
) -> None:
    folder = write(tmp_path / "project", TYPESCRIPT)

    async def scenario() -> None:
        async with IntelService.open([folder], env=_env(tmp_path / "home", tag), install=True) as service:
            installs = FailingInstalls()
            installs.release.set()
            service.pool.lifecycle.install_manager = lambda: installs  # type: ignore[method-assign]
            for _ in range(2):
                result = await service.dispatch(
                    "code_symbols", {"path": "src/lib.ts"}, IntelContext(deadline=5)
                )
                assert result["ok"] is False and result["status"] == "unavailable", result
                assert "symbols" not in result and "notice" not in result, result
                assert result["installError"][-1].startswith("npm error request to"), result
                assert "SELF_SIGNED_CERT_IN_CHAIN" in result["error"]
            assert installs.calls == 1

    asyncio.run(scenario())


def test_output_lines_are_bounded_in_bytes_newest_kept() -> None:
    output = "\n".join(f"line {n} " + "x" * 300 for n in range(10))
    kept = install_output_lines(output)
    assert kept[-1].startswith("line 9 ") and len(kept) < 10
    assert sum(len(line) + 1 for line in kept) <= 2048
    assert install_output_lines("\n\n  \n") == []


# -- the real npm against a registry whose certificate is self-signed ----------------------------------
class _Registry:
    """An HTTPS server on 127.0.0.1 with a self-signed certificate: npm refuses it before any request."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir()
        key, cert = folder / "key.pem", folder / "cert.pem"
        request = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"]
        names = ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)]
        subprocess.run(  # a fixed argv, no shell
            [OPENSSL, *request, *names],
            check=True,
            capture_output=True,
            timeout=60,
        )
        self.connections = 0
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(404)
                self.end_headers()

        class Server(http.server.ThreadingHTTPServer):
            def get_request(self) -> Any:
                registry.connections += 1
                return super().get_request()

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # the refused handshakes

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


OPENSSL = shutil.which("openssl", path="/usr/bin:/bin") or "openssl"


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[_Registry]:
    served = _Registry(tmp_path / "registry")
    yield served
    served.close()


@pytest.mark.real_server
@pytest.mark.timeout(180)
def test_real_npm_refused_by_a_self_signed_registry(tmp_path: Path, tag: str, registry: _Registry) -> None:
    folder = write(tmp_path / "project", TYPESCRIPT)
    env = _env(
        tmp_path / "home",
        tag,
        npm_config_registry=registry.url,
        npm_config_cache=str(tmp_path / "npm-cache"),
        npm_config_fetch_retries="0",
    )

    async def scenario() -> None:
        async with IntelService.open([folder], env=env, install=True) as service:
            call = service.dispatch
            first = await call("code_symbols", {"path": "src/lib.ts"}, IntelContext(deadline=0.5))
            assert first["ok"] is False and first["status"] == "unavailable", first
            # npm may have failed within the first call's 0.5 s already (an idle machine): that answer is
            # then the failure itself; otherwise it says the install is under way.
            if "installError" not in first:
                assert first["error"].startswith(
                    f"installing typescript-language-server ({PINNED}) for typescript: "
                )
                assert first["installing"] is True
            started = time.monotonic()
            result = first
            while "installError" not in result:
                result = await call("code_symbols", {"path": "src/lib.ts"}, IntelContext(deadline=3))
                assert result["ok"] is False and result["status"] == "unavailable", result
                assert "symbols" not in result, result
                if "installError" in result:
                    break
                assert result.get("installing") is True, result
                assert result["elapsedSeconds"] >= time.monotonic() - started, result  # the install's clock
                assert time.monotonic() - started < 120, result
            lines = result["installError"]
            assert any("SELF_SIGNED" in line for line in lines), lines  # npm's own error lines
            assert "self-signed certificate" in result["error"] and "NODE_EXTRA_CA_CERTS" in result["error"]
            assert "`kandev-lsp install typescript`" in result["error"]
            assert 0 < result["retryInSeconds"] <= INSTALL_RETRY_AFTER
            connections = registry.connections
            assert connections >= 1
            again = await call(
                "code_navigate", {"target": {"path": "src/lib.ts", "line": 6}, "kind": "references"}
            )
            assert again["ok"] is False and again["installError"] == lines, again
            assert registry.connections == connections  # npm was not run again

    asyncio.run(scenario())
