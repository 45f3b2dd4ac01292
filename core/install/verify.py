"""Before an installed server becomes current, it must run.

A server with ``version_args`` (``--version``, ``version``) is run with them and must exit 0 in time. A
server without them (``pyright-langserver``) is started with its usual arguments and must answer an LSP
``initialize`` request over stdio; it is then asked to shut down. Either way the check runs with the
task's environment, outside the task's workspace, and a failure leaves the previous version current.

The LSP conversation goes through the shared endpoint (:mod:`kandev_lsp.lsp`): no private request loop.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from kandev_lsp.install.errors import VerificationError
from kandev_lsp.language import LanguageSpec
from kandev_lsp.taskenv import Task

if TYPE_CHECKING:
    from kandev_lsp.lsp import LspClient

DEFAULT_TIMEOUT = 60.0
#: After ``initialize`` answered, how long shutdown and exit may take before the process is stopped.
SHUTDOWN_GRACE = 2.0


async def verify_server(
    spec: LanguageSpec,
    command: str | Sequence[str],
    task: Task,
    *,
    cwd: str,
    timeout: float = DEFAULT_TIMEOUT,
    supervisor: Any = None,
    owner_tokens: Sequence[str] = (),
) -> str:
    """Check that the server ``command`` starts serves ``spec``; return what it said (its version, or a
    summary). ``command`` is the executable, or the interpreter and script it is started with
    (``[node, .../langserver.index.js]``: an npm install, never through its ``#!/usr/bin/env node``), without
    the language's arguments. ``owner_tokens`` mark the server's processes like the install's others (a
    dead install's are swept).

    :raises VerificationError: it could not start, failed, or did not answer within ``timeout``.
    """
    program = [command] if isinstance(command, str) else list(command)
    if spec.version_args:
        return await _version_check(
            spec, program, task, cwd=cwd, timeout=timeout, supervisor=supervisor, owner_tokens=owner_tokens
        )
    return await _initialize_check(
        spec, program, task, cwd=cwd, timeout=timeout, supervisor=supervisor, owner_tokens=owner_tokens
    )


def _failed(spec: LanguageSpec, what: str, output: str = "") -> VerificationError:
    return VerificationError(
        spec.id,
        f"the newly installed {spec.command} {what}, so it was not made current (the previous version, if "
        "any, is still in use). The package may not support this platform or toolchain; check the output "
        "below and the versions in `kandev-lsp doctor`.",
        output=output,
    )


async def _version_check(
    spec: LanguageSpec,
    program: list[str],
    task: Task,
    *,
    cwd: str,
    timeout: float,
    supervisor: Any,
    owner_tokens: Sequence[str] = (),
) -> str:
    from kandev_lsp.process import ProcessStartError, ProcessTimeout, run

    argv = [*program, *spec.version_args]
    try:
        result = await run(
            argv,
            env=task.env,
            cwd=cwd,
            timeout=timeout,
            supervisor=supervisor,
            output_limit=64 * 1024,
            owner_tokens=owner_tokens,
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


def initialize_params() -> dict[str, Any]:
    """A minimal ``initialize``: no workspace, no capabilities; every server must answer it."""
    return {
        "processId": os.getpid(),
        "clientInfo": {"name": "kandev-lsp install check"},
        "rootUri": None,
        "workspaceFolders": None,
        "capabilities": {},
    }


async def _initialize_check(
    spec: LanguageSpec,
    program: list[str],
    task: Task,
    *,
    cwd: str,
    timeout: float,
    supervisor: Any,
    owner_tokens: Sequence[str] = (),
) -> str:
    from kandev_lsp.lsp import Endpoint, EndpointLimits, LspClient, ResponseError, ServerClosed
    from kandev_lsp.process import ProcessStartError, spawn

    try:
        process = await spawn(
            [*program, *spec.args],
            env=task.env,
            cwd=cwd,
            stdin=True,
            stdout="pipe",
            stderr="capture",
            supervisor=supervisor,
            owner_tokens=owner_tokens,
        )
    except ProcessStartError as exc:
        raise _failed(spec, f"could not be started ({exc})") from exc
    try:
        assert process.stdout is not None and process.stdin is not None
        client = LspClient(
            process.stdout,
            process.stdin,
            endpoint=Endpoint(limits=EndpointLimits(default_timeout=None)),
            peer=f"{spec.command} stdout",
        )
        try:
            async with asyncio.timeout(timeout):
                result = await client.request("initialize", initialize_params())
        except TimeoutError:
            garbled = (
                f" (it wrote {client.rejected} message(s) that are not JSON-RPC: not LSP)"
                if client.rejected
                else ""
            )
            raise _failed(
                spec,
                f"did not answer an LSP initialize within {timeout:g} s{garbled}",
                process.captured_output(),
            ) from None
        except ServerClosed as exc:
            if client.protocol_error is not None:
                raise _failed(
                    spec,
                    f"answered an LSP initialize with something that is not LSP ({client.protocol_error})",
                    process.captured_output(),
                ) from exc
            raise _failed(
                spec, "exited before answering an LSP initialize", process.captured_output()
            ) from exc
        except ResponseError as exc:
            raise _failed(
                spec, f"rejected an LSP initialize: {exc.code} {exc.message[:300]}", process.captured_output()
            ) from exc
        if not isinstance(result, dict):
            raise _failed(
                spec,
                f"answered an LSP initialize with {json.dumps(result)[:300]}, not an InitializeResult",
                process.captured_output(),
            )
        await _shut_down(client, process.wait)
        server = result.get("serverInfo")
        if isinstance(server, dict) and server.get("name"):
            return f"{server['name']} {server.get('version', '')}".strip()
        return "answered initialize"
    finally:
        await process.stop(grace=SHUTDOWN_GRACE)


async def _shut_down(client: LspClient, exited: Callable[[], Awaitable[int]]) -> None:
    """Ask politely (shutdown, exit, end of input); the caller's ``stop`` ends whatever is left."""
    try:
        async with asyncio.timeout(SHUTDOWN_GRACE):
            await client.shutdown(timeout=SHUTDOWN_GRACE)
            await exited()
    except TimeoutError:
        pass
    finally:
        await client.aclose()
