"""Many spawn/stop cycles leave no process and no file descriptor behind."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

from kandev_lsp.process import ProcessSupervisor, spawn

if TYPE_CHECKING:
    from conftest import Kit

CYCLES = 100


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_hundred_spawn_stop_cycles_leak_nothing(kit: Kit) -> None:
    sleeper = kit.script("time.sleep(60)")
    chatty = kit.script("print('x' * 100000, file=sys.stderr, flush=True); time.sleep(60)")

    async def cycles(count: int) -> list[int]:
        supervisor = ProcessSupervisor()
        pids: list[int] = []
        for index in range(count):
            argv = chatty if index % 2 else sleeper
            process = await spawn(
                argv, env=kit.env, cwd=kit.cwd, stdin=True, stdout="pipe", supervisor=supervisor
            )
            pids.append(process.pid)
            if index % 3 == 0:
                await asyncio.sleep(0.05)  # let some of them get going before the stop
            await process.stop()
        assert supervisor.live() == []
        await supervisor.aclose()
        return pids

    before = open_fds()
    pids = asyncio.run(cycles(CYCLES))
    after = open_fds()
    assert after == before
    assert len(set(pids)) == CYCLES
    assert all(kit.gone(pid) for pid in pids)
    assert kit.alive() == []
