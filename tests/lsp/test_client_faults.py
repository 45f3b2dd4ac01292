"""LspClient against a fake server (fault injection only): timeouts, cancellation, server requests,
garbage, a crash mid-request, and a subscriber that never reads while the server floods."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.lsp import (
    Endpoint,
    EndpointLimits,
    HandlerError,
    LspClient,
    NotificationReceived,
    RequestRefused,
    RequestTimeout,
    ResponseError,
    ServerClosed,
)
from kandev_lsp.protocol.jsonrpc import ErrorCode

FAKE = str(Path(__file__).with_name("fake_server.py"))
pytestmark = pytest.mark.timeout(60)


def asyncio_test(body: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[], None]:
    """Run an async test body in a fresh event loop (the suite has no async test plugin)."""

    @functools.wraps(body)
    def run() -> None:
        asyncio.run(body())

    return run


@contextlib.asynccontextmanager
async def fake_client(**kwargs: Any) -> AsyncIterator[tuple[LspClient, asyncio.subprocess.Process]]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, FAKE, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    client = LspClient(process.stdout, process.stdin, peer="fake server", **kwargs)
    try:
        async with client:
            yield client, process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


@asyncio_test
async def test_request_initialize_and_shutdown() -> None:
    async with fake_client() as (client, process):
        result = await client.initialize({"capabilities": {}, "workDoneToken": "w"})
        assert result["received"]["workDoneToken"] == "w"
        assert client.endpoint.initialize_result == result
        assert client.endpoint.initialize_sent_at is not None
        assert await client.request("test/echo", {"a": [1, "é"]}) == {"a": [1, "é"]}
        with pytest.raises(ResponseError) as raised:
            await client.request("test/unknown")
        assert raised.value.code == ErrorCode.METHOD_NOT_FOUND
        assert await client.shutdown()
        assert await asyncio.wait_for(process.wait(), 5) == 0


@asyncio_test
async def test_timeout_sends_cancel_and_the_late_answer_is_dropped() -> None:
    async with fake_client() as (client, _):
        with client.subscribe("test/cancelled") as cancelled:
            with pytest.raises(RequestTimeout, match=r"did not answer test/never within 0.2 s"):
                await client.request("test/never", timeout=0.2)
            event = await asyncio.wait_for(cancelled.get(), 5)
            assert isinstance(event, NotificationReceived) and event.params == {"id": 1}
        assert client.endpoint.pending == {}
        assert await client.request("test/echo", 5) == 5  # the late RequestCancelled answer was dropped
        assert client.unmatched == 1


@asyncio_test
async def test_cancelling_the_awaiting_task_cancels_the_request() -> None:
    async with fake_client() as (client, _):
        with client.subscribe("test/cancelled") as cancelled:
            task = asyncio.create_task(client.request("test/never", timeout=None))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            event = await asyncio.wait_for(cancelled.get(), 5)
            assert isinstance(event, NotificationReceived) and event.params == {"id": 1}
        assert client.endpoint.pending == {}


@asyncio_test
async def test_server_requests_are_answered_with_defaults_handlers_or_method_not_found() -> None:
    async with fake_client() as (client, _):

        async def apply(params: Any) -> Any:
            await asyncio.sleep(0.01)
            return {"applied": True, "echo": params}

        async def refuse(params: Any) -> Any:
            raise HandlerError(ErrorCode.REQUEST_FAILED, "refused")

        client.handle("workspace/applyEdit", apply)
        client.handle("custom/refused", refuse)
        with client.subscribe("test/answer") as answers:
            for method, params in [
                ("window/workDoneProgress/create", {"token": "x"}),
                ("client/registerCapability", {"registrations": [{"id": "1", "method": "m"}]}),
                ("workspace/applyEdit", {"edit": {}}),
                ("custom/refused", None),
                ("custom/unknown", None),
            ]:
                await client.request("test/ask", {"method": method, "params": params})
            replies = [(await asyncio.wait_for(answers.get(), 5)).params for _ in range(5)]
        by_id = {reply["id"]: reply for reply in replies}
        assert by_id["srv-1"]["result"] is None and by_id["srv-2"]["result"] is None
        assert by_id["srv-3"]["result"] == {"applied": True, "echo": {"edit": {}}}
        assert by_id["srv-4"]["error"]["message"] == "refused"
        assert by_id["srv-5"]["error"]["code"] == ErrorCode.METHOD_NOT_FOUND
        assert [reg.id for reg in client.endpoint.registrations.snapshot()] == ["1"]


@asyncio_test
async def test_a_body_that_is_not_json_is_skipped() -> None:
    async with fake_client() as (client, _):
        assert await client.request("test/badJson") == "after"
        assert client.rejected == 1 and not client.closed


@asyncio_test
async def test_garbage_framing_ends_the_connection_and_fails_what_is_in_flight() -> None:
    async with fake_client() as (client, _):
        pending = asyncio.create_task(client.request("test/never", timeout=None))
        await asyncio.sleep(0.05)
        await client.notify("test/garbage")
        with pytest.raises(ServerClosed, match="not speaking the LSP base protocol"):
            await asyncio.wait_for(pending, 5)
        assert client.protocol_error is not None
        with pytest.raises(ServerClosed):
            await client.request("test/echo", 1)


@asyncio_test
async def test_a_crash_mid_request_fails_the_request_and_ends_subscriptions() -> None:
    async with fake_client() as (client, process):
        subscription = client.subscribe()
        with pytest.raises(ServerClosed, match="no answer to test/crash"):
            await client.request("test/crash")
        assert [event async for event in subscription] == []
        assert await process.wait() == 3
        await client.wait_closed()
        assert client.closed


@asyncio_test
async def test_a_subscriber_that_never_reads_does_not_block_the_reader() -> None:
    async with fake_client() as (client, _):
        idle = client.subscribe("test/tick", maxsize=8)
        # 2000 notifications of 4 KiB while nobody reads `idle`: the reader keeps draining, so the
        # request's answer (queued behind them) arrives.
        assert await client.request("test/notify", {"count": 2000, "size": 4096}, timeout=30) == 2000
        assert idle.dropped == 2000 - 8
        first = await idle.get()
        assert isinstance(first, NotificationReceived) and first.params["n"] == 1992  # the newest kept


@asyncio_test
async def test_progress_from_a_created_token_is_tracked() -> None:
    async with fake_client() as (client, _):
        assert await client.request("test/progressThenAnswer") == "indexed"
        snapshot = client.endpoint.progress.snapshot()
        assert snapshot.active == () and snapshot.last_ended is not None
        assert (snapshot.last_ended.title, snapshot.last_ended.message) == ("Indexing", "done")


@asyncio_test
async def test_bounds_refuse_locally() -> None:
    endpoint = Endpoint(limits=EndpointLimits(max_pending=1))
    async with fake_client(endpoint=endpoint) as (client, _):
        first = asyncio.create_task(client.request("test/never", timeout=None))
        await asyncio.sleep(0.05)
        with pytest.raises(RequestRefused):
            await client.request("test/echo", 1)
        first.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await first
        assert await client.request("test/echo", 2) == 2


@asyncio_test
async def test_a_short_timeout_fires_on_time_behind_a_long_one() -> None:
    async with fake_client() as (client, _):
        long = asyncio.create_task(client.request("test/never", timeout=30))
        await asyncio.sleep(0.05)
        started = client.now()
        with pytest.raises(RequestTimeout):
            await client.request("test/never", timeout=0.2)
        assert client.now() - started < 5  # not held back to the first request's 30 s timer
        assert await client.request("test/echo", 1, timeout=0.5) == 1  # a timer for an answered request
        await asyncio.sleep(0.6)  # ...fires harmlessly
        assert not long.done()
        long.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await long


@asyncio_test
async def test_the_server_cancelling_its_request_cancels_the_handler() -> None:
    async with fake_client() as (client, _):
        started = asyncio.Event()

        async def apply(params: Any) -> Any:
            started.set()
            await asyncio.sleep(60)

        client.handle("workspace/applyEdit", apply)
        with client.subscribe("test/answer") as answers:
            await client.request("test/askThenCancel", {"method": "workspace/applyEdit"})
            reply = (await asyncio.wait_for(answers.get(), 5)).params
        assert reply["id"] == "srv-1" and reply["error"]["code"] == ErrorCode.REQUEST_CANCELLED
        assert started.is_set() and client.endpoint.deferred == {}
        client.handle("workspace/applyEdit", None)  # back to the default: refused
        with client.subscribe("test/answer") as answers:
            await client.request("test/ask", {"method": "workspace/applyEdit", "params": {"edit": {}}})
            reply = (await asyncio.wait_for(answers.get(), 5)).params
        assert reply["result"]["applied"] is False


@asyncio_test
async def test_a_subscription_is_bounded() -> None:
    async with fake_client() as (client, _):
        with pytest.raises(ValueError, match="at least one"):
            client.subscribe(maxsize=0)


@asyncio_test
async def test_a_request_to_a_server_that_is_gone_leaves_no_unretrieved_future() -> None:
    # The server exited before the request was written (issue 17 item 2: a staged server that quits
    # before answering initialize): the caller gets ServerClosed, and asyncio reports nothing later.
    import gc
    import os

    loop = asyncio.get_running_loop()
    reported: list[str] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(str(context.get("message"))))
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read what is written
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(write_end, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    client = LspClient(asyncio.StreamReader(), writer, peer="a server that exited")
    with pytest.raises(ServerClosed):
        await client.request("initialize", {"capabilities": {}})
    await client.aclose()
    gc.collect()
    await asyncio.sleep(0)
    assert reported == []
