"""CancelToken: set from any thread, awaited on any loop."""

from __future__ import annotations

import asyncio
import threading
import time

from kandev_lsp.cancel import CancelToken


def test_set_from_another_thread_wakes_a_waiter() -> None:
    token = CancelToken()

    async def main() -> float:
        timer = threading.Timer(0.1, token.set)
        started = time.monotonic()
        timer.start()
        await asyncio.wait_for(token.wait(), 5)
        timer.join()
        return time.monotonic() - started

    assert not token.is_set()
    assert asyncio.run(main()) < 1.0
    assert token.is_set()


def test_waiters_on_two_loops_in_two_threads_both_wake() -> None:
    token = CancelToken()
    woke: list[str] = []

    def waiter(name: str) -> None:
        asyncio.run(asyncio.wait_for(token.wait(), 5))
        woke.append(name)

    threads = [threading.Thread(target=waiter, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    time.sleep(0.1)
    token.set()
    for thread in threads:
        thread.join(5)
    assert sorted(woke) == ["a", "b"]


def test_wait_on_a_set_token_returns_at_once_and_set_is_idempotent() -> None:
    token = CancelToken()
    token.set()
    token.set()
    asyncio.run(asyncio.wait_for(token.wait(), 0.1))
    assert token.is_set() and "set" in repr(token)


def test_a_cancelled_waiter_is_forgotten() -> None:
    token = CancelToken()

    async def main() -> None:
        task = asyncio.create_task(token.wait())
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    assert token._waiters == []
    token.set()  # nothing left to wake, and the loop is closed: no error
