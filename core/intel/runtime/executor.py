"""The provider executor (B8.1-B8.4, B8.7): one server request with typed outcomes inside one deadline.

Every server read a tool makes goes through :func:`run_provider`, which turns whatever happened into a
:class:`ProviderResult` with one of five outcomes: ``ok``, ``timeout``, ``error``, ``cancelled``,
``unavailable``. The rules:

- **One deadline per tool call.** A :class:`Deadline` (9 s by default) is made once per tool call and
  shared by every request the tool makes: attempts, warm-up waits and backoff all spend the same budget,
  so retries cannot multiply the latency an agent sees (B8.3).
- **Warm-up only for a successful empty read** (B8.2): a server that answers ``[]`` or ``null`` right after
  start may not have loaded the project yet, so an empty answer is asked again after a short wait, while
  time remains. Errors and non-empty answers never warm up; callers turn warm-up off where empty is a
  normal answer (signature help, B6.9). And only while the server is warming up: within
  :data:`WARMUP_WINDOW` seconds of becoming ready (the caller says how long, ``ready_for``). A server
  ready for longer has loaded what it will load, so its empty answer is the answer (hover on a blank
  line took 3.8 s of retries on a long-warm tsserver in the MCP user trial).
- **Transient server errors are retried** within the deadline: ``ContentModified`` (-32801), and a server
  cancelling by itself (``ServerCancelled`` -32802, or ``RequestCancelled`` -32800, which servers such
  as tsserver answer when they drop a request on their own: this executor never waits for an answer to a
  request it cancelled).
- **Cancellation stops everything at once** (B8.7): a set :class:`~kandev_lsp.cancel.CancelToken` ends the
  attempt, the backoff and the retries, and the result is ``cancelled``; cancelling the awaiting task
  cancels the attempt too and propagates. Cancelling the attempt is how the request's own client sends
  ``$/cancelRequest``: the executor never talks to a server itself.

The executor is server-independent: it takes an async callable ``call(timeout) -> value``, which is where
the LSP endpoint's ``request(method, params, timeout)`` goes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sized
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Generic, TypeVar

from kandev_lsp.cancel import CancelToken
from kandev_lsp.session import log_event

__all__ = [
    "DEFAULT_DEADLINE",
    "WARMUP_WINDOW",
    "Deadline",
    "Outcome",
    "ProviderResult",
    "ProviderUnavailable",
    "RetryPolicy",
    "is_empty_answer",
    "run_provider",
    "timeout_message",
]

T = TypeVar("T")

_log = logging.getLogger("kandev_lsp.intel")

#: Seconds of one tool call, all attempts and waits included (B8.3).
DEFAULT_DEADLINE: Final = 9.0
#: Seconds after a server became ready (or first opened the document asked about) during which an empty
#: read is retried as a warm-up (B8.2). pyright, tsserver and gopls answered completely within a few
#: seconds of readiness on the trial's projects; 15 s leaves room for a loaded machine.
WARMUP_WINDOW: Final = 15.0

CONTENT_MODIFIED: Final = -32801
SERVER_CANCELLED: Final = -32802
REQUEST_CANCELLED: Final = -32800
METHOD_NOT_FOUND: Final = -32601


class Outcome(StrEnum):
    """What became of one provider read (B8.1)."""

    OK = "ok"
    TIMEOUT = "timeout"
    ERROR = "error"
    CANCELLED = "cancelled"
    UNAVAILABLE = "unavailable"
    #: The server will never answer this: it does not offer the request (issue 20 item 7). Asking again
    #: changes nothing, where ``unavailable`` (not ready yet, starting, installing, gone) is worth a retry.
    UNSUPPORTED = "unsupported"


class ProviderUnavailable(Exception):
    """Raised by a provider callable when no server can answer: missing, not ready in time, or gone.

    ``detail`` is what the caller can tell the agent (progress titles, elapsed time, the resolver's reason).
    """

    def __init__(self, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class ProviderUnsupported(ProviderUnavailable):
    """Raised when the server does not offer what was asked (its capabilities, or a MethodNotFound
    answer): never available from it, so the result is ``unsupported``, not ``unavailable``."""


class Deadline:
    """The time budget of one tool call, shared by every provider read it makes.

    :param clock: a monotonic clock in seconds (a parameter so tests can drive it).
    """

    def __init__(
        self, seconds: float = DEFAULT_DEADLINE, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.seconds = seconds
        self._clock = clock
        self.started = clock()

    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self.started + self.seconds - self._clock())

    def elapsed(self) -> float:
        return self._clock() - self.started

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Waits between attempts. Each is cut short by the deadline and by cancellation."""

    #: Waits before successive warm-up retries of an empty read.
    warmup_delays: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0)
    #: Waits before successive retries of a transient error (the last one repeats).
    retry_delays: tuple[float, ...] = (0.05, 0.1, 0.2, 0.4, 0.8)
    retry_codes: frozenset[int] = field(
        default_factory=lambda: frozenset({CONTENT_MODIFIED, SERVER_CANCELLED, REQUEST_CANCELLED})
    )


@dataclass(frozen=True, slots=True)
class ProviderResult(Generic[T]):
    """The outcome of one provider read, with the metadata results expose (B8.4)."""

    status: Outcome
    value: T | None
    #: Seconds from the first attempt to the outcome.
    duration: float
    attempts: int
    #: Warm-up retries made after empty answers.
    warmup_retries: int = 0
    #: Whether a warm-up retry turned an empty answer into a non-empty one.
    warmed_up: bool = False
    error: str | None = None
    error_code: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status is Outcome.OK

    def meta(self) -> dict[str, Any]:
        """The compact ``provider`` block of a tool result."""
        out: dict[str, Any] = {
            "status": self.status.value,
            "durationMs": round(self.duration * 1000, 1),
            "attempts": self.attempts,
        }
        if self.warmup_retries:
            out["warmup"] = {"retries": self.warmup_retries, "recovered": self.warmed_up}
        if self.error is not None:
            out["error"] = self.error
        if self.error_code is not None:
            out["errorCode"] = self.error_code
        if self.detail:
            out.update(self.detail)
        return out


def timeout_message(seconds: float) -> str:
    """What a timed-out read tells the agent: what happened, why it may have, and what to do next."""
    return (
        f"no answer within the {seconds:g} s deadline: the server may be busy (indexing or loading the "
        "project, or another long request). Ask again in a few seconds; if it keeps timing out, narrow "
        "the request (one file, a smaller limit or depth). The deadline is kandev-lsp's --deadline"
    )


def is_empty_answer(value: object) -> bool:
    """``null``, ``[]``, ``{}``, ``""``: what a cold server answers before it knows the project."""
    return value is None or (isinstance(value, Sized) and len(value) == 0)


def _error_code(error: BaseException) -> int | None:
    code = getattr(error, "code", None)
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _error_message(error: BaseException) -> str:
    message = getattr(error, "message", None)
    text = message if isinstance(message, str) and message else str(error)
    return text or type(error).__name__


async def _wait_or_cancel(awaitable: asyncio.Future[Any], timeout: float, cancel: CancelToken | None) -> str:
    """Wait for ``awaitable`` until done (``"done"``), ``timeout`` (``"timeout"``) or cancel (``"cancelled"``)."""
    if cancel is not None and cancel.is_set():
        return "cancelled"
    waiters: set[asyncio.Future[Any]] = {awaitable}
    cancel_task = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    if cancel_task is not None:
        waiters.add(cancel_task)
    try:
        done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if cancel_task is not None and not cancel_task.done():
            await _stop(cancel_task)
    if awaitable in done:
        return "done"
    return "cancelled" if cancel_task is not None and cancel_task in done else "timeout"


async def _stop(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait until it has finished, without swallowing a cancellation of our own."""
    if not task.done():
        task.cancel()
        await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved, so asyncio does not log it as never retrieved


async def _attempt_inline(
    call: Callable[[float], Awaitable[T]], timeout: float, self_timed: bool = False
) -> tuple[str, T | None, BaseException | None]:
    """One attempt awaited in the caller's own task when there is no cancel token to watch.

    The same outcomes as a separate task watched by :func:`_wait_or_cancel` (``"done"`` with the value or
    the error, or ``"timeout"``, the attempt then cancelled, which sends ``$/cancelRequest``), without the
    task, the waiter and their event-loop turns: most tool calls make one attempt (issue 9 overhead goal).
    A cancellation of the caller's task propagates; a ``CancelledError`` from inside the attempt (its
    client closed) is the attempt's error, as a cancelled separate task would be.

    ``self_timed``: the call ends itself with ``TimeoutError`` once ``timeout`` passes (an
    :class:`~kandev_lsp.lsp.LspClient` request does, and sends ``$/cancelRequest``), so no timer of the
    executor's own is armed: its ``TimeoutError`` is the attempt timing out.
    """
    task = asyncio.current_task()
    scope = None if self_timed else asyncio.timeout(timeout)
    try:
        if scope is None:
            value = await call(timeout)
        else:
            async with scope:
                value = await call(timeout)
    except TimeoutError as error:
        if scope is None or scope.expired():
            return "timeout", None, None
        return "done", None, error  # the call's own TimeoutError, not our timer's
    except asyncio.CancelledError as error:
        if task is not None and task.cancelling():
            raise
        return "done", None, error
    except Exception as error:  # what the attempt raised is classified by the caller
        return "done", None, error
    return "done", value, None


async def _pause(delay: float, cancel: CancelToken | None) -> bool:
    """Sleep ``delay`` seconds; False when cancelled meanwhile (backoff is abortable, B8.3)."""
    if cancel is None:  # nothing to abort on but the caller's own cancellation, which propagates
        await asyncio.sleep(delay)
        return True
    sleeper = asyncio.ensure_future(asyncio.sleep(delay))
    try:
        return await _wait_or_cancel(sleeper, delay + 1.0, cancel) == "done"
    finally:
        await _stop(sleeper)


async def run_provider(
    call: Callable[[float], Awaitable[T]],
    deadline: Deadline,
    *,
    warmup: bool = True,
    is_empty: Callable[[T], bool] = is_empty_answer,
    policy: RetryPolicy = RetryPolicy(),
    cancel: CancelToken | None = None,
    label: str = "provider",
    ready_for: float | None = None,
    self_timed: bool = False,
) -> ProviderResult[T]:
    """Run ``call(timeout)`` until it gives an outcome, within ``deadline`` (see the module docstring).

    :param ready_for: seconds the server has been ready (for the document asked about) when the call
        starts; warm-up retries happen only while that is under :data:`WARMUP_WINDOW`. None: unknown,
        treated as warming up.

    :param call: one attempt; gets the seconds left and returns the server's answer. It may raise
        ``TimeoutError``, :class:`ProviderUnavailable`, or an error with an ``int`` ``code`` (a JSON-RPC
        error); cancelling it must cancel the request at the server.
    :param label: the LSP method, for the log line (B8.14: no paths, no source text).
    :param self_timed: ``call`` raises ``TimeoutError`` by itself once the timeout it is given passes (an
        LSP client's request): the deadline is then kept without a timer of the executor's own.
    """
    start = time.monotonic()
    attempts = warmups = retries = 0
    result: ProviderResult[T] | None = None

    def finish(status: Outcome, value: T | None = None, **kwargs: Any) -> ProviderResult[T]:
        return ProviderResult(
            status, value, time.monotonic() - start, attempts, warmup_retries=warmups, **kwargs
        )

    transient: tuple[int | None, str] | None = None  # the last retried error, reported if time runs out

    def out_of_time() -> ProviderResult[T]:
        if transient is None:
            return finish(Outcome.TIMEOUT, error=timeout_message(deadline.seconds))
        # The budget ran out while retrying: what kept failing says more than "timeout".
        code, message = transient
        return finish(
            Outcome.ERROR,
            error=f"{message} (retried {retries} times within the {deadline.seconds:g} s deadline)",
            error_code=code,
        )

    while result is None:
        remaining = deadline.remaining()
        if remaining <= 0:
            result = out_of_time()
            break
        attempts += 1
        if cancel is None:
            waited, value, error = await _attempt_inline(call, remaining, self_timed)
        else:
            attempt = asyncio.ensure_future(call(remaining))
            try:
                waited = await _wait_or_cancel(attempt, remaining, cancel)
            finally:
                if not attempt.done():
                    await _stop(attempt)  # the request's own cancellation sends $/cancelRequest
            error = None
            if waited == "done":
                error = attempt.exception() if not attempt.cancelled() else asyncio.CancelledError()
            value = attempt.result() if waited == "done" and error is None else None
        if waited == "cancelled":
            result = finish(Outcome.CANCELLED, error="cancelled by the caller")
            break
        if waited == "timeout":
            result = out_of_time()
            break
        if error is None:
            answer: T = value  # type: ignore[assignment]  # what the server answered (null included)
            warming = ready_for is None or ready_for + (time.monotonic() - start) < WARMUP_WINDOW
            if warmup and warming and is_empty(answer) and warmups < len(policy.warmup_delays):
                delay = policy.warmup_delays[warmups]
                if deadline.remaining() > delay:
                    warmups += 1
                    if not await _pause(delay, cancel):
                        result = finish(Outcome.CANCELLED, error="cancelled by the caller")
                    continue
            result = finish(Outcome.OK, answer, warmed_up=warmups > 0 and not is_empty(answer))
        elif isinstance(error, asyncio.CancelledError):
            # The attempt was cancelled by someone else (its client closed): nothing answered.
            result = finish(Outcome.UNAVAILABLE, error="the request was cancelled before the server answered")
        elif isinstance(error, TimeoutError):
            result = finish(Outcome.TIMEOUT, error=timeout_message(deadline.seconds))
        elif isinstance(error, ProviderUnavailable):
            outcome = Outcome.UNSUPPORTED if isinstance(error, ProviderUnsupported) else Outcome.UNAVAILABLE
            result = finish(outcome, error=error.message, detail=dict(error.detail))
        elif isinstance(error, ConnectionError | EOFError):
            result = finish(
                Outcome.UNAVAILABLE, error=f"the server connection ended: {_error_message(error)}"
            )
        else:
            code = _error_code(error)
            message = _error_message(error)
            if code == METHOD_NOT_FOUND:
                result = finish(
                    Outcome.UNSUPPORTED, error=f"the server does not offer {label}", error_code=code
                )
            elif code in policy.retry_codes:
                transient = (code, message)
                delay = policy.retry_delays[min(retries, len(policy.retry_delays) - 1)]
                if deadline.remaining() > delay:
                    retries += 1
                    if not await _pause(delay, cancel):
                        result = finish(Outcome.CANCELLED, error="cancelled by the caller")
                    continue
                result = finish(
                    Outcome.ERROR,
                    error=f"{message} (retried {retries} times within the {deadline.seconds:g} s deadline)",
                    error_code=code,
                )
            else:
                result = finish(Outcome.ERROR, error=message, error_code=code)
    if not _log.isEnabledFor(logging.DEBUG):  # the fields are not even gathered (issue 9 overhead)
        return result
    log_event(
        _log,
        "intel_provider",
        logging.DEBUG,
        method=label,
        status=result.status.value,
        duration_ms=round(result.duration * 1000, 1),
        attempts=result.attempts,
        warmups=result.warmup_retries,
        warmed_up=result.warmed_up,
        error_code=result.error_code,
    )
    return result
