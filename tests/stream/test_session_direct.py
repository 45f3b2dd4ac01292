"""The plain serve/run path's fast lane (issue 8: "keeps its fast byte-scan path and its benchmark figures";
issue 7 item 24): while the one client keeps up, the session's reader writes each server message to it
itself (:meth:`Attachment.write_directly`), without queueing it and waking the client's task (one event-loop
turn per message less). Every guarantee of the queued path holds: the reader never waits (K15.11), order is
kept when a write cannot be made at once, a client that is gone ends its attachment (the server keeps
running), server requests written directly are tracked and answered by default when the client leaves.

Also here: the allocator setting that keeps asyncio's 256 KiB read buffers off a fresh mapping per read
(the largest part of the bridge's per-message CPU in a fresh process, measured by bench/bridge_bench.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from contextlib import aclosing
from typing import Any

import pytest
from kandev_lsp.lifecycle import InstallPolicy, Lifecycle
from kandev_lsp.session import Attachment, ServerSession
from kandev_lsp.stream.bridge import ClientGone
from stream_testkit import StreamKit


def _body(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def _note(number: int) -> bytes:
    return _body({"jsonrpc": "2.0", "method": "test/note", "params": {"n": number}})


def _number(body: bytes) -> int:
    return int(json.loads(body)["params"]["n"])


async def _until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


class _Consumer:
    """What the bridge's server->client task does: read the attachment's queue and send what it gets,
    each send taking ``send_time`` (a client behind a full transport)."""

    def __init__(self, attachment: Attachment, delivered: list[int], send_time: float = 0.0) -> None:
        self.sent: list[int] = []
        #: The message being sent, None while idle.
        self.sending: int | None = None
        self.error: BaseException | None = None
        self._attachment = attachment
        self._delivered = delivered
        self._send_time = send_time
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            async with aclosing(self._attachment.messages()) as messages:
                async for body in messages:
                    self.sending = _number(body)
                    if self._send_time:
                        await asyncio.sleep(self._send_time)
                    self.sent.append(_number(body))
                    self._delivered.append(_number(body))
                    self.sending = None
        except Exception as exc:
            self.error = exc

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def _launch(kit: StreamKit, lifecycle: Lifecycle) -> ServerSession:
    return await lifecycle.launch("fake-echo", kit.task(), InstallPolicy())


def test_a_client_that_keeps_up_is_written_by_the_reader_itself(kit: StreamKit) -> None:
    """Every message goes through the direct writer; the client's task is never handed one."""

    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await _launch(kit, lifecycle)
            try:
                attachment = session.attach("direct")
                delivered: list[int] = []

                def write(body: bytes) -> bool:
                    delivered.append(_number(body))
                    return True

                attachment.write_directly(write)
                consumer = _Consumer(attachment, delivered)
                await asyncio.sleep(0.05)  # the consumer parks on its waiter
                for number in range(50):
                    await session.send(_note(number))
                await _until(lambda: len(delivered) == 50)
                assert delivered == list(range(50))
                assert consumer.sent == []
                assert attachment.queued_bytes == 0
                await consumer.stop()
            finally:
                await session.aclose()

    asyncio.run(scenario())


def test_messages_that_arrive_together_are_flushed_together_and_none_is_held(kit: StreamKit) -> None:
    """A writer with a flush may hold bodies back: the reader flushes once per read of the server's
    stdout, after the last message of that read, never leaving one held while it waits for more."""

    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await _launch(kit, lifecycle)
            try:
                attachment = session.attach("batched")
                events: list[str] = []
                held: list[bytes] = []
                sent: list[bytes] = []

                def write(body: bytes) -> bool:
                    events.append("write")
                    held.append(body)
                    return True

                def flush() -> None:
                    events.append("flush")
                    sent.extend(held)
                    held.clear()

                attachment.write_directly(write, flush)
                consumer = _Consumer(attachment, [])
                await asyncio.sleep(0.05)
                flood = {"jsonrpc": "2.0", "method": "test/flood", "params": {"count": 200, "size": 100}}
                await session.send(_body(flood))
                await _until(lambda: len(sent) == 200)
                assert not held and events[-1] == "flush"
                assert events.count("write") == 200
                assert 1 <= events.count("flush") < 200  # several messages per read: fewer writes
                assert consumer.sent == []
                await consumer.stop()
            finally:
                await session.aclose()

    asyncio.run(scenario())


def test_order_is_kept_when_a_message_cannot_be_written_at_once(kit: StreamKit) -> None:
    """A message the writer refuses (its transport is full) is queued, and so is everything after it until
    the client's task has sent the queue and is idle again, even when the queue is momentarily empty
    while that task is still sending: a direct write then would overtake the message being sent."""

    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await _launch(kit, lifecycle)
            try:
                attachment = session.attach("sometimes-full")
                delivered: list[int] = []
                direct: list[int] = []

                def write(body: bytes) -> bool:
                    number = _number(body)
                    if number == 3:  # "paused": the task sends it, slowly
                        return False
                    direct.append(number)
                    delivered.append(number)
                    return True

                attachment.write_directly(write)
                consumer = _Consumer(attachment, delivered, send_time=0.5)
                await asyncio.sleep(0.05)
                for number in range(3):
                    await session.send(_note(number))
                    await _until(lambda count=number + 1: len(delivered) == count)
                await session.send(_note(3))
                await _until(lambda: consumer.sending == 3)  # the task has taken it off the queue
                await session.send(_note(4))  # arrives while 3 is being sent, with nothing queued
                await _until(lambda: len(delivered) == 5)
                assert delivered == [0, 1, 2, 3, 4]
                assert consumer.sent == [3, 4]
                await asyncio.sleep(0.1)  # the task is idle again: the direct lane is used again
                for number in range(5, 10):
                    await session.send(_note(number))
                await _until(lambda: len(delivered) == 10)
                assert delivered == list(range(10))
                assert direct == [0, 1, 2, *range(5, 10)]
                await consumer.stop()
            finally:
                await session.aclose()

    asyncio.run(scenario())


def test_a_client_gone_during_a_direct_write_ends_only_its_attachment(kit: StreamKit) -> None:
    """The writer's exception reaches the client's task (the bridge then ends with client_closed); the
    server keeps running and the next client gets its answers."""

    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await _launch(kit, lifecycle)
            try:
                attachment = session.attach("leaving")

                def write(body: bytes) -> bool:
                    raise ClientGone

                attachment.write_directly(write)
                delivered: list[int] = []
                consumer = _Consumer(attachment, delivered)
                await asyncio.sleep(0.05)
                await session.send(_note(1))
                await _until(lambda: consumer.task.done())
                assert isinstance(consumer.error, ClientGone)
                assert attachment.ended and session.attachments == 0
                later = session.attach("later")
                async with aclosing(later.messages()) as messages:
                    await session.send(_note(2))
                    async with asyncio.timeout(10):
                        assert _number(await anext(messages)) == 2
                assert session.returncode is None
            finally:
                await session.aclose()

    asyncio.run(scenario())


def test_a_server_request_written_directly_is_answered_by_default_when_the_client_leaves(
    kit: StreamKit,
) -> None:
    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await _launch(kit, lifecycle)
            try:
                attachment = session.attach("direct")
                written: list[dict[str, Any]] = []

                def write(body: bytes) -> bool:
                    written.append(json.loads(body))
                    return True

                attachment.write_directly(write)
                consumer = _Consumer(attachment, [])
                await asyncio.sleep(0.05)
                ask = {"id": "ask-1", "method": "window/workDoneProgress/create", "params": {"token": "t"}}
                await session.send(_body({"jsonrpc": "2.0", "method": "test/ask", "params": [ask]}))
                await _until(lambda: any(m.get("id") == "ask-1" for m in written))
                assert session.unanswered_server_requests == 1
                await consumer.stop()  # closes messages(): detaches, unanswered
                await _until(lambda: session.unanswered_server_requests == 0)
                observer = session.attach("observer")
                async with aclosing(observer.messages()) as messages:
                    await session.send(_body({"jsonrpc": "2.0", "method": "test/answers"}))
                    async with asyncio.timeout(10):
                        while (message := json.loads(await anext(messages))).get("method") != "test/answers":
                            pass
                assert [answer["id"] for answer in message["params"]] == ["ask-1"]
                assert message["params"][0]["result"] is None
            finally:
                await session.aclose()

    asyncio.run(scenario())


# The allocator ------------------------------------------------------------------------------------------
_MAPPED_CHECK = textwrap.dedent(
    """
    import ctypes, json
    libc = ctypes.CDLL(None)

    class Info(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split())]

    libc.mallinfo2.restype = Info
    libc.mallopt(-3, 128 * 1024)  # glibc's default threshold, as a fresh process has it

    def mapped_for(size, count=1):
        # `count` blocks held at once: a free chunk the imports left on the heap may serve one of them
        # without a mapping whatever the threshold, never all of them.
        before = libc.mallinfo2().hblks
        blocks = [bytearray(size) for _ in range(count)]  # asyncio's os.read(fd, 256 KiB) buffers
        after = libc.mallinfo2().hblks
        del blocks
        return after - before

    from kandev_lsp.session import _keep_reads_off_mmap
    untuned = mapped_for(256 * 1024, 8)
    _keep_reads_off_mmap()
    tuned = mapped_for(256 * 1024, 8)
    print(json.dumps({"untuned": untuned, "tuned": tuned, "huge": mapped_for(8 << 20)}))
    """
)


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or "glibc" not in (os.confstr("CS_GNU_LIBC_VERSION") or ""),
    reason="the setting is glibc's",
)
def test_a_read_buffer_comes_from_the_heap_not_a_fresh_mapping() -> None:
    """With glibc's default 128 KiB threshold each 256 KiB read buffer is a new mapping (mmap, a page fault,
    mremap, munmap: 55-70 us per read on the 2-core VM, against 5-7 us from the heap). Large blocks (big
    messages) are still mapped, so they go back to the system at once."""
    result = subprocess.run(
        [sys.executable, "-c", _MAPPED_CHECK], capture_output=True, text=True, timeout=60, check=True
    )
    figures = json.loads(result.stdout)
    assert figures["untuned"] >= 6  # the precondition: a fresh process maps them (bar a free chunk or two)
    assert figures["tuned"] == 0
    assert figures["huge"] == 1
