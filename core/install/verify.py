"""Before an installed server becomes current, it must run.

A server with ``version_args`` (``--version``, ``version``) is run with them and must exit 0 in time. A
server without them (``pyright-langserver``) is started with its usual arguments and must answer an LSP
``initialize`` request over stdio; it is then asked to shut down. Either way the check runs with the
task's environment, outside the task's workspace, and a failure leaves the previous version current.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from kandev_lsp.install.errors import VerificationError
from kandev_lsp.language import LanguageSpec
from kandev_lsp.taskenv import Task

DEFAULT_TIMEOUT = 60.0
#: After ``initialize`` answered, how long shutdown and exit may take before the process is stopped.
SHUTDOWN_GRACE = 2.0
_READ_CHUNK = 64 * 1024


async def verify_server(
    spec: LanguageSpec,
    executable: str,
    task: Task,
    *,
    cwd: str,
    timeout: float = DEFAULT_TIMEOUT,
    supervisor: Any = None,
) -> str:
    """Check that ``executable`` serves ``spec``; return what it said (its version, or a summary).

    :raises VerificationError: it could not start, failed, or did not answer within ``timeout``.
    """
    if spec.version_args:
        return await _version_check(spec, executable, task, cwd=cwd, timeout=timeout, supervisor=supervisor)
    return await _initialize_check(spec, executable, task, cwd=cwd, timeout=timeout, supervisor=supervisor)


def _failed(spec: LanguageSpec, what: str, output: str = "") -> VerificationError:
    return VerificationError(
        spec.id,
        f"the newly installed {spec.command} {what}, so it was not made current (the previous version, if "
        "any, is still in use). The package may not support this platform or toolchain; check the output "
        "below and the versions in `kandev-lsp doctor`.",
        output=output,
    )


async def _version_check(
    spec: LanguageSpec, executable: str, task: Task, *, cwd: str, timeout: float, supervisor: Any
) -> str:
    from kandev_lsp.process import ProcessStartError, ProcessTimeout, run

    argv = [executable, *spec.version_args]
    try:
        result = await run(
            argv, env=task.env, cwd=cwd, timeout=timeout, supervisor=supervisor, output_limit=64 * 1024
        )
    except ProcessStartError as exc:
        raise _failed(spec, f"could not be started ({exc})") from exc
    except ProcessTimeout as exc:
        raise _failed(
            spec, f"did not answer {' '.join(spec.version_args)} within {timeout:g} s", exc.output
        ) from exc
    if result.returncode != 0:
        raise _failed(
            spec, f"exited with status {result.returncode} for {' '.join(spec.version_args)}", result.output
        )
    lines = result.output.strip().splitlines()
    return lines[0].strip() if lines else ""


def _frame(message: dict[str, Any]) -> bytes:
    from kandev_lsp.protocol import encode_frame

    return encode_frame(json.dumps(message, separators=(",", ":")).encode("utf-8"))


def initialize_request(request_id: int = 1) -> dict[str, Any]:
    """A minimal ``initialize``: no workspace, no capabilities; every server must answer it."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "processId": os.getpid(),
            "clientInfo": {"name": "kandev-lsp install check"},
            "rootUri": None,
            "workspaceFolders": None,
            "capabilities": {},
        },
    }


class _Peer:
    """Our side of one stdio LSP conversation: write framed requests, read until a response arrives."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str) -> None:
        from kandev_lsp.protocol import FrameDecoder

        self._reader = reader
        self._writer = writer
        self._decoder = FrameDecoder(peer=peer)

    async def send(self, message: dict[str, Any]) -> None:
        self._writer.write(_frame(message))
        await self._writer.drain()

    async def response(self, request_id: int) -> dict[str, Any]:
        """The response to ``request_id``; requests and notifications the server sends first are skipped."""
        from kandev_lsp.protocol import NEED_DATA

        while True:
            body = self._decoder.next_frame()
            if body is NEED_DATA:
                chunk = await self._reader.read(_READ_CHUNK)
                if not chunk:
                    self._decoder.receive_eof()
                    raise EOFError
                self._decoder.receive_data(chunk)
                continue
            message = json.loads(body)
            if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
                return message

    def close(self) -> None:
        if not self._writer.is_closing():
            self._writer.close()


async def _initialize_check(
    spec: LanguageSpec, executable: str, task: Task, *, cwd: str, timeout: float, supervisor: Any
) -> str:
    from kandev_lsp.process import ProcessStartError, spawn
    from kandev_lsp.protocol import ProtocolError

    try:
        process = await spawn(
            [executable, *spec.args],
            env=task.env,
            cwd=cwd,
            stdin=True,
            stdout="pipe",
            stderr="capture",
            supervisor=supervisor,
        )
    except ProcessStartError as exc:
        raise _failed(spec, f"could not be started ({exc})") from exc
    try:
        assert process.stdout is not None and process.stdin is not None
        peer = _Peer(process.stdout, process.stdin, f"{spec.command} stdout")
        try:
            async with asyncio.timeout(timeout):
                await peer.send(initialize_request(1))
                reply = await peer.response(1)
        except TimeoutError:
            raise _failed(
                spec, f"did not answer an LSP initialize within {timeout:g} s", process.captured_output()
            ) from None
        except (EOFError, ConnectionError) as exc:
            raise _failed(
                spec, "exited before answering an LSP initialize", process.captured_output()
            ) from exc
        except (ProtocolError, ValueError) as exc:
            raise _failed(
                spec,
                f"answered an LSP initialize with something that is not LSP ({exc})",
                process.captured_output(),
            ) from exc
        result = reply.get("result")
        if "error" in reply or not isinstance(result, dict):
            raise _failed(
                spec,
                f"rejected an LSP initialize: {json.dumps(reply.get('error'))[:300]}",
                process.captured_output(),
            )
        await _shut_down(peer, process.wait)
        server = result.get("serverInfo")
        if isinstance(server, dict) and server.get("name"):
            return f"{server['name']} {server.get('version', '')}".strip()
        return "answered initialize"
    finally:
        await process.stop(grace=SHUTDOWN_GRACE)


async def _shut_down(peer: _Peer, exited: Callable[[], Awaitable[int]]) -> None:
    """Ask politely (shutdown, exit, end of input); the caller's ``stop`` ends whatever is left."""
    from kandev_lsp.protocol import ProtocolError

    try:
        async with asyncio.timeout(SHUTDOWN_GRACE):
            await peer.send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
            await peer.response(2)
            await peer.send({"jsonrpc": "2.0", "method": "exit"})
            peer.close()
            await exited()
    except (TimeoutError, EOFError, OSError, ProtocolError, ValueError):
        pass
