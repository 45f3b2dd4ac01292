"""run(): exit statuses, timeouts, and cancellation (of the task, or by a token set from anywhere)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING

import pytest
from kandev_lsp.cancel import CancelToken
from kandev_lsp.errors import KandevLspError
from kandev_lsp.process import DEFAULT_GRACE, ProcessTimeout, run

if TYPE_CHECKING:
    from conftest import Kit

#: Exits on SIGINT (Python's default), after starting a grandchild in its group that does too.
SLEEPER_WITH_CHILD = """
    print("started", flush=True)
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
    publish(sys.argv[1], os.getpid())
    time.sleep(60)
"""


def test_a_failing_command_is_a_result_not_an_error(kit: Kit) -> None:
    script = kit.script('print("bad input", file=sys.stderr); sys.exit(4)')
    result = asyncio.run(run(script, env=kit.env, cwd=kit.cwd, timeout=30))
    assert result.returncode == 4
    assert result.output == "bad input\n" and not result.truncated
    assert result.argv == tuple(script)


def test_cancelling_the_awaiting_task_stops_the_tree_promptly(kit: Kit) -> None:
    pidfile = kit.pidfile("sleeper")

    async def main() -> float:
        task = asyncio.create_task(run([*kit.script(SLEEPER_WITH_CHILD), pidfile], env=kit.env, cwd=kit.cwd))
        await kit.wait_pid(pidfile)
        assert len(kit.alive()) == 2
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    elapsed = asyncio.run(main())
    assert elapsed < DEFAULT_GRACE  # the tree left on the interrupt: nothing waited out the grace
    assert kit.alive() == []


def test_a_cancel_token_set_from_another_thread_stops_the_tree_promptly(kit: Kit) -> None:
    pidfile = kit.pidfile("sleeper")
    token = CancelToken()

    async def main() -> float:
        task = asyncio.create_task(
            run([*kit.script(SLEEPER_WITH_CHILD), pidfile], env=kit.env, cwd=kit.cwd, cancel=token)
        )
        await kit.wait_pid(pidfile)
        started = time.monotonic()
        threading.Thread(target=token.set).start()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    elapsed = asyncio.run(main())
    assert elapsed < DEFAULT_GRACE  # the tree left on the interrupt: nothing waited out the grace
    assert kit.alive() == []


def test_a_token_already_set_starts_nothing(kit: Kit) -> None:
    token = CancelToken()
    token.set()
    marker = kit.root / "ran"
    script = kit.script(f"open({str(marker)!r}, 'w').close()")
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(run(script, env=kit.env, cwd=kit.cwd, cancel=token))
    assert not marker.exists()


def test_timeout_stops_the_tree_and_reports_the_output(kit: Kit) -> None:
    pidfile = kit.pidfile("sleeper")
    started = time.monotonic()
    with pytest.raises(ProcessTimeout) as caught:
        asyncio.run(run([*kit.script(SLEEPER_WITH_CHILD), pidfile], env=kit.env, cwd=kit.cwd, timeout=1.0))
    elapsed = time.monotonic() - started
    error = caught.value
    assert isinstance(error, KandevLspError)
    assert error.timeout == 1.0 and not error.truncated
    assert error.output.startswith("started\n")
    assert "KeyboardInterrupt" in error.output  # it was interrupted before anything was killed
    assert "did not finish within 1 s" in str(error) and "started" in str(error)
    assert 1.0 <= elapsed < 3.0
    assert kit.alive() == []


def test_descendants_left_running_after_a_normal_exit_are_stopped(kit: Kit) -> None:
    pidfile = kit.pidfile("leftover")
    script = kit.script(
        """
        if os.fork() == 0:
            os.setsid()
            publish(sys.argv[1], os.getpid())
            time.sleep(60)
            os._exit(0)
        while not os.path.exists(sys.argv[1]):
            time.sleep(0.01)
        print("installed")
        """
    )
    result = asyncio.run(run([*script, pidfile], env=kit.env, cwd=kit.cwd, timeout=30))
    assert result.returncode == 0 and result.output.startswith("installed\n")
    assert kit.alive() == []
