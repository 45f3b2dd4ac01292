"""Many install/cancel cycles leave nothing behind: no processes, no staging folders, no open files."""

from __future__ import annotations

import asyncio
import os
import random
from typing import Any

from kandev_lsp.cancel import CancelToken
from kandev_lsp.install import InstallCancelled, InstallManager
from kandev_lsp.install.cache import ServerCache

CYCLES = 100


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_hundred_install_and_cancel_cycles_leave_nothing_behind(world: Any, kit: Any) -> None:
    host = kit.plugin_host(kit.go_spec())
    asyncio.run(InstallManager(host).install("fakego", world.task()))  # a current version to protect
    started = world.root / "started"
    world.hanging_go(started)
    before = open_fds()
    rng = random.Random(20261130)
    outcomes: dict[str, int] = {}

    async def cycles() -> None:
        manager = InstallManager(host)
        for number in range(CYCLES):
            token = CancelToken()
            install = asyncio.ensure_future(
                manager.install("fakego", world.task(), version="v0.2.0", cancel=token)
            )
            # Cancel at a random moment: before the lock, inside go install, while facts are asked...
            await asyncio.sleep(rng.uniform(0, 0.05))
            how = ("token", "task")[number % 2]
            if how == "token":
                token.set()
            else:
                install.cancel()
            try:
                await install
                outcome = "finished"  # impossible: go install hangs
            except InstallCancelled:
                outcome = "cancelled (token)"
            except asyncio.CancelledError:
                outcome = "cancelled (task)"
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            # The next cycle may start at once: its lock wait covers the unwinding of this one.
        await manager.aclose()

    asyncio.run(cycles())
    assert outcomes.get("finished", 0) == 0
    assert sum(outcomes.values()) == CYCLES
    assert started.exists() and len(started.read_text().splitlines()) > 10, (
        "cancellations never hit go install"
    )
    assert kit.descendants() == []
    for pid in started.read_text().split():
        assert kit.gone(int(pid), timeout=0.0)
    cache = ServerCache(world.cache, "fakego")
    assert cache.leftovers() == []
    assert cache.version_names() == [cache.current_name()]
    current = cache.current_receipt()
    assert current is not None and current.version == "v0.1.0"
    assert open_fds() == before
