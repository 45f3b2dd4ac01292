"""Run a command to completion in the task (installers, version checks), with timeout and cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from kandev_lsp.cancel import CancelToken
from kandev_lsp.process._errors import ProcessTimeout
from kandev_lsp.process._output import OutputCallback
from kandev_lsp.process._owned import OwnedProcess, spawn
from kandev_lsp.process._start import DEFAULT_OUTPUT_LIMIT
from kandev_lsp.process._supervisor import ProcessSupervisor, stop_all
from kandev_lsp.taskenv import TaskEnvironment


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a run ended. ``argv[0]`` is the executable that ran (the PATH lookup resolved). ``output`` is
    stdout and stderr interleaved as written, capped at the run's ``output_limit`` (head and tail kept);
    ``truncated`` says whether some was left out."""

    argv: tuple[str, ...]
    returncode: int
    output: str
    truncated: bool


async def run(
    argv: Sequence[str],
    *,
    env: TaskEnvironment,
    cwd: str,
    timeout: float | None = None,
    cancel: CancelToken | None = None,
    supervisor: ProcessSupervisor | None = None,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    on_output: OutputCallback | None = None,
    owner_tokens: Sequence[str] = (),
) -> RunResult:
    """Run ``argv`` in the task until it exits; a non-zero exit status is a result, not an error.

    Cancelling the awaiting task, or setting ``cancel``, stops the whole tree and raises
    :class:`asyncio.CancelledError` as soon as the tree is gone. Passing ``timeout`` seconds stops it and
    raises :class:`ProcessTimeout` with the captured output. If ``on_output`` raises, the tree is stopped
    and its exception is raised. When the child exits, descendants it left running are stopped too.
    ``owner_tokens`` are passed to :func:`spawn` (extra owner markers for a later sweep).
    """
    if cancel is not None and cancel.is_set():
        raise asyncio.CancelledError(f"cancelled before {argv[0] if argv else 'the command'} started")
    process = await spawn(
        argv,
        env=env,
        cwd=cwd,
        stdout="capture",
        stderr="capture",
        supervisor=supervisor,
        output_limit=output_limit,
        on_output=on_output,
        owner_tokens=owner_tokens,
    )
    try:
        ending = await _ending(process, timeout, cancel)
    except BaseException:
        await stop_all([process])
        raise
    await stop_all([process])  # sweep up what it left behind; completes the captured output
    if ending == "cancelled":
        raise asyncio.CancelledError(f"{process.argv[0]} was cancelled")
    if ending == "timeout":
        assert timeout is not None
        raise ProcessTimeout(process.argv, timeout, process.captured_output(), process.output_truncated)
    if process.callback_error is not None:
        raise process.callback_error
    returncode = process.returncode
    assert returncode is not None
    return RunResult(process.argv, returncode, process.captured_output(), process.output_truncated)


async def _ending(process: OwnedProcess, timeout: float | None, cancel: CancelToken | None) -> str:
    """``"exited"``, ``"timeout"``, ``"cancelled"`` (the token) or ``"callback"``, whichever comes first."""
    exited, callback_failed = process._exited, process._callback_failed
    watched: list[asyncio.Future[None]] = [exited, callback_failed]
    cancel_task = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    if cancel_task is not None:
        watched.append(cancel_task)
    try:
        await asyncio.wait(watched, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if cancel_task is not None:
            cancel_task.cancel()
    if cancel_task is not None and cancel_task.done() and not cancel_task.cancelled():
        return "cancelled"
    if callback_failed.done():
        return "callback"
    if exited.done():
        return "exited"
    return "timeout"
