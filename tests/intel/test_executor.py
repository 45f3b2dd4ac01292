"""The provider executor (B8.1-B8.4, B8.7): outcomes, one deadline, warm-up, retries, cancellation.

The provider is a fake async callable (fault injection: real servers do not time out or answer
ContentModified on demand); deadlines are short so the suite stays fast.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kandev_lsp.cancel import CancelToken
from kandev_lsp.intel.runtime.executor import (
    WARMUP_WINDOW,
    Deadline,
    Outcome,
    ProviderUnavailable,
    ProviderUnsupported,
    RetryPolicy,
    is_empty_answer,
    run_provider,
)

FAST = RetryPolicy(warmup_delays=(0.01, 0.02, 0.04), retry_delays=(0.01, 0.02))


class RpcError(Exception):
    """Shaped like the LSP client's ResponseError: an int ``code`` and a ``message``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"error {code}: {message}")
        self.code = code
        self.message = message


def scripted(*steps: Any) -> tuple[Callable[[float], Awaitable[Any]], list[float]]:
    """A provider answering ``steps`` in turn: a value, an exception to raise, or ``("sleep", s)``."""
    timeouts: list[float] = []
    queue = list(steps)

    async def call(timeout: float) -> Any:
        timeouts.append(timeout)
        step = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(step, tuple) and step[0] == "sleep":
            await asyncio.sleep(step[1])
            return step[2] if len(step) > 2 else None
        if isinstance(step, BaseException):
            raise step
        return step

    return call, timeouts


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def test_a_non_empty_answer_is_ok_at_once() -> None:
    call, timeouts = scripted([{"uri": "file:///a"}])
    result = run(run_provider(call, Deadline(5), policy=FAST))
    assert (result.status, result.value, result.attempts, result.warmup_retries) == (
        Outcome.OK, [{"uri": "file:///a"}], 1, 0,
    )  # fmt: skip
    assert result.ok and not result.warmed_up
    assert 4.5 < timeouts[0] <= 5  # the attempt gets the time left
    meta = result.meta()
    assert meta["status"] == "ok" and meta["attempts"] == 1 and "warmup" not in meta
    assert meta["durationMs"] >= 0


def test_an_empty_read_warms_up_and_recovers() -> None:
    call, _ = scripted([], None, ["found"])
    result = run(run_provider(call, Deadline(5), policy=FAST))
    assert (result.status, result.value, result.attempts) == (Outcome.OK, ["found"], 3)
    assert (result.warmup_retries, result.warmed_up) == (2, True)
    assert result.meta()["warmup"] == {"retries": 2, "recovered": True}


def test_warm_up_gives_up_after_its_delays_and_stays_ok_empty() -> None:
    call, timeouts = scripted([])
    result = run(run_provider(call, Deadline(5), policy=FAST))
    assert (result.status, result.value, result.attempts, result.warmup_retries) == (Outcome.OK, [], 4, 3)
    assert not result.warmed_up
    assert len(timeouts) == 4


def test_no_warm_up_when_turned_off_or_out_of_time() -> None:
    call, _ = scripted(None)
    assert run(run_provider(call, Deadline(5), policy=FAST, warmup=False)).attempts == 1
    slow = RetryPolicy(warmup_delays=(10.0,))
    result = run(run_provider(call, Deadline(1), policy=slow))
    assert (result.status, result.attempts, result.warmup_retries) == (Outcome.OK, 1, 0)


def test_errors_never_warm_up() -> None:
    call, _ = scripted(RpcError(-32603, "internal"))
    result = run(run_provider(call, Deadline(5), policy=FAST))
    assert (result.status, result.error, result.error_code, result.attempts) == (
        Outcome.ERROR, "internal", -32603, 1,
    )  # fmt: skip
    assert result.meta()["errorCode"] == -32603


@pytest.mark.parametrize("code", [-32801, -32802, -32800])
def test_transient_errors_are_retried_within_the_deadline(code: int) -> None:
    call, _ = scripted(RpcError(code, "content modified"), RpcError(code, "again"), ["ok"])
    result = run(run_provider(call, Deadline(5), policy=FAST))
    assert (result.status, result.value, result.attempts) == (Outcome.OK, ["ok"], 3)


def test_transient_errors_stop_at_the_deadline() -> None:
    call, _ = scripted(RpcError(-32801, "content modified"))
    started = time.monotonic()
    result = run(run_provider(call, Deadline(0.3), policy=FAST))
    assert result.status is Outcome.ERROR and result.error_code == -32801
    assert "retried" in (result.error or "") and result.attempts > 3
    assert time.monotonic() - started < 1.2  # retries of a 0.3 s budget (slack for a loaded machine)


def test_deadline_ending_during_a_retry_reports_what_kept_failing() -> None:
    """A retry that is still unanswered when the shared deadline ends: the result names the transient
    error that caused the retry, not a bare timeout (whatever the machine's load makes of the timing)."""
    call, _ = scripted(RpcError(-32801, "content modified"), ("sleep", 5.0, []))
    result = run(run_provider(call, Deadline(0.3), policy=FAST))
    assert (result.status, result.error_code, result.attempts) == (Outcome.ERROR, -32801, 2)
    assert "retried 1 times" in (result.error or "")


def test_one_deadline_covers_every_attempt_and_backoff() -> None:
    """Attempts that each take most of the budget cannot multiply the latency (B8.3)."""
    call, timeouts = scripted(("sleep", 0.15, []))
    deadline = Deadline(0.4)
    started = time.monotonic()
    result = run(run_provider(call, deadline, policy=RetryPolicy(warmup_delays=(0.01,) * 10)))
    elapsed = time.monotonic() - started
    assert result.status is Outcome.TIMEOUT
    assert elapsed < 1.0  # without the shared deadline: 11 attempts of 0.15 s, past 1.6 s
    assert timeouts == sorted(timeouts, reverse=True) and timeouts[-1] < 0.2  # each attempt gets what is left
    # The same deadline, shared by a second read of the same tool call, has nothing left.
    again, _ = scripted(["x"])
    assert run(run_provider(again, deadline)).status is Outcome.TIMEOUT


def test_a_hanging_request_times_out_and_is_cancelled() -> None:
    cancelled: list[bool] = []

    async def call(timeout: float) -> Any:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)  # where the LSP client sends $/cancelRequest
            raise

    result = run(run_provider(call, Deadline(0.1)))
    assert result.status is Outcome.TIMEOUT and "deadline" in (result.error or "")
    assert cancelled == [True]


def test_the_clients_own_timeout_is_a_timeout() -> None:
    call, _ = scripted(TimeoutError("no answer"))
    assert run(run_provider(call, Deadline(5))).status is Outcome.TIMEOUT


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (ProviderUnavailable("pyright is not ready", progress=["Analyzing"], elapsedMs=1200), "not ready"),
        (ConnectionResetError("gone"), "connection ended"),
    ],
)
def test_unavailable(error: Exception, message: str) -> None:
    call, _ = scripted(error)
    result = run(run_provider(call, Deadline(5), label="textDocument/references"))
    assert result.status is Outcome.UNAVAILABLE and message in (result.error or "")
    if isinstance(error, ProviderUnavailable):
        assert result.meta()["progress"] == ["Analyzing"] and result.meta()["elapsedMs"] == 1200


@pytest.mark.parametrize(
    "error",
    [
        RpcError(-32601, "Unhandled method"),
        ProviderUnsupported("the server does not offer textDocument/references"),
    ],
)
def test_never_available_is_unsupported_not_unavailable(error: Exception) -> None:
    """Issue 20 item 7: a client that retries on "unavailable" looped on a request the server never offers."""
    call, _ = scripted(error)
    result = run(run_provider(call, Deadline(5), label="textDocument/references"))
    assert result.status is Outcome.UNSUPPORTED and "does not offer textDocument/references" in (
        result.error or ""
    )


def test_a_cancel_token_stops_the_attempt_at_once() -> None:
    cancelled: list[bool] = []

    async def main() -> Any:
        token = CancelToken()

        async def call(timeout: float) -> Any:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

        asyncio.get_running_loop().call_later(0.05, token.set)
        return await run_provider(call, Deadline(5), cancel=token)

    started = time.monotonic()
    result = run(main())
    assert result.status is Outcome.CANCELLED and cancelled == [True]
    assert time.monotonic() - started < 1


def test_a_cancel_token_stops_the_backoff() -> None:
    async def main() -> Any:
        token = CancelToken()
        call, _ = scripted([])
        asyncio.get_running_loop().call_later(0.05, token.set)
        return await run_provider(call, Deadline(5), cancel=token, policy=RetryPolicy(warmup_delays=(3.0,)))

    started = time.monotonic()
    result = run(main())
    assert (result.status, result.attempts) == (Outcome.CANCELLED, 1)
    assert time.monotonic() - started < 1


def test_an_already_set_token_sends_nothing() -> None:
    token = CancelToken()
    token.set()
    call, timeouts = scripted(["x"])
    result = run(run_provider(call, Deadline(5), cancel=token))
    assert result.status is Outcome.CANCELLED and timeouts == []


def test_cancelling_the_awaiting_task_cancels_the_request_and_propagates() -> None:
    cancelled: list[bool] = []

    async def main() -> None:
        async def call(timeout: float) -> Any:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

        task = asyncio.ensure_future(run_provider(call, Deadline(5)))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    assert cancelled == [True]


def test_an_attempt_cancelled_by_its_client_is_unavailable() -> None:
    call, _ = scripted(asyncio.CancelledError())
    result = run(run_provider(call, Deadline(5)))
    assert result.status is Outcome.UNAVAILABLE


def test_deadline_with_a_driven_clock() -> None:
    now = [100.0]
    deadline = Deadline(9, clock=lambda: now[0])
    assert deadline.remaining() == 9 and not deadline.expired
    now[0] = 106.5
    assert deadline.remaining() == 2.5 and deadline.elapsed() == 6.5
    now[0] = 120
    assert deadline.remaining() == 0 and deadline.expired


@pytest.mark.parametrize(
    ("value", "empty"),
    [(None, True), ([], True), ({}, True), ("", True), ([0], False), ({"a": 1}, False), (0, False)],
)
def test_is_empty_answer(value: Any, empty: bool) -> None:
    assert is_empty_answer(value) is empty


def test_the_log_line_has_state_and_counts_but_no_paths_or_text(caplog: pytest.LogCaptureFixture) -> None:
    """B8.14: provider state, duration, attempts; never source text, messages or paths."""
    call, _ = scripted([], RpcError(-32603, "cannot read /home/me/secret/project/app.py: def password()"))
    with caplog.at_level(logging.DEBUG, logger="kandev_lsp.intel"):
        run(run_provider(call, Deadline(5), policy=FAST, label="textDocument/references"))
    [line] = [r.getMessage() for r in caplog.records if r.name == "kandev_lsp.intel"]
    assert line.startswith("event=intel_provider method=textDocument/references status=error")
    assert "attempts=2" in line and "warmups=1" in line and "error_code=-32603" in line
    assert "/home/me" not in line and "password" not in line


def test_without_a_cancel_token_the_attempt_runs_in_the_callers_task() -> None:
    """The common path (no token: the MCP server and the code command pass none) awaits the attempt
    inline: no task, no waiter, two event-loop turns fewer per request (issue 9's overhead goal)."""
    seen: list[bool] = []

    async def main() -> Outcome:
        outer = asyncio.current_task()

        async def call(timeout: float) -> Any:
            seen.append(asyncio.current_task() is outer)
            return ["x"]

        return (await run_provider(call, Deadline(5))).status

    assert run(main()) is Outcome.OK and seen == [True]


@pytest.mark.parametrize("with_token", [False, True])
def test_both_paths_give_the_same_outcomes(with_token: bool) -> None:
    """The inline path (no token) and the watched-task path (a token) classify alike."""

    def provider(step: Any) -> Any:
        call, _ = scripted(step)
        return run(
            run_provider(call, Deadline(0.2), cancel=CancelToken() if with_token else None, policy=FAST)
        )

    assert provider(["x"]).status is Outcome.OK
    assert provider(asyncio.CancelledError()).status is Outcome.UNAVAILABLE
    assert provider(TimeoutError("no answer")).status is Outcome.TIMEOUT
    assert provider(RpcError(-32603, "boom")).error == "boom"
    hanging = provider(("sleep", 5))
    assert hanging.status is Outcome.TIMEOUT and "deadline" in (hanging.error or "")


def test_a_server_ready_past_the_warm_up_window_answers_empty_at_once() -> None:
    """MCP user trial: hover on a blank line of a long-warm tsserver took 3.8 s of warm-up retries."""
    call, timeouts = scripted(None, ["late"])
    result = run(run_provider(call, Deadline(5), policy=FAST, ready_for=WARMUP_WINDOW + 60))
    assert (result.status, result.value, result.attempts, result.warmup_retries) == (Outcome.OK, None, 1, 0)
    assert len(timeouts) == 1


def test_a_server_just_ready_still_warms_up() -> None:
    call, _ = scripted([], ["found"])
    result = run(run_provider(call, Deadline(5), policy=FAST, ready_for=1.0))
    assert (result.value, result.attempts, result.warmup_retries, result.warmed_up) == (["found"], 2, 1, True)


def test_warm_up_stops_when_the_window_closes_during_the_call() -> None:
    # 0.05 s of the window left: the first retry's wait (0.1 s) passes it, so no second retry.
    call, _ = scripted([])
    policy = RetryPolicy(warmup_delays=(0.1, 0.1, 0.1))
    result = run(run_provider(call, Deadline(5), policy=policy, ready_for=WARMUP_WINDOW - 0.05))
    assert (result.status, result.attempts, result.warmup_retries) == (Outcome.OK, 2, 1)


def test_a_timeout_says_what_to_do_next() -> None:
    """MCP user trial: "timeout: no answer within the 9 s deadline" left the agent guessing."""
    call, _ = scripted(("sleep", 5.0))
    result = run(run_provider(call, Deadline(0.1), policy=FAST))
    assert result.status is Outcome.TIMEOUT
    error = result.error or ""
    assert error.startswith("no answer within the 0.1 s deadline: the server may be busy"), error
    assert "Ask again" in error and "narrow the request" in error and "--deadline" in error


def test_a_self_timed_call_arms_no_timer_and_classifies_alike() -> None:
    """A call that times itself out (the LSP client's request) needs no executor timer: none is armed
    (a heap push and a cancel per request, issue 9), and its ``TimeoutError`` is the attempt timing out,
    reported as the scope's expiry would be (after retried errors: what kept failing)."""
    armed: list[float] = []

    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()
        call_at = loop.call_at

        def counted(when: float, *args: Any, **kwargs: Any) -> Any:
            armed.append(when)
            return call_at(when, *args, **kwargs)

        loop.call_at = counted  # type: ignore[method-assign]
        results = []
        for steps in (
            (["x"],),
            (TimeoutError("the client's own"),),
            (RpcError(-32801, "modified"), TimeoutError()),
        ):
            call, _ = scripted(*steps)
            results.append(await run_provider(call, Deadline(5), policy=FAST, self_timed=True))
        return results

    ok, timed_out, retried = run(main())
    assert ok.status is Outcome.OK and ok.value == ["x"]
    assert timed_out.status is Outcome.TIMEOUT and "deadline" in (timed_out.error or "")
    assert retried.status is Outcome.ERROR and "modified (retried 1 times" in (retried.error or "")
    assert retried.error_code == -32801
    # Only the backoff's sleep armed a timer: the attempts armed none.
    assert len(armed) == 1, armed
