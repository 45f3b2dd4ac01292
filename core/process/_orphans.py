"""Sweeping up the processes of an owner that died: everything that carries a recorded owner token.

An owner that is killed with SIGKILL cannot stop its trees. Its direct children die with it on Linux
(the parent-death signal), but their own children are re-parented and live on: an npm left running by a
killed ``kandev-lsp install`` kept writing into a staging folder after the next install had removed it.
An owner that wants its leftovers found records the owner tokens it passed to :func:`spawn` somewhere
durable (an install writes them beside its staging folder); whoever finds such a record later, and knows
the owner is gone, calls :func:`reap_marked`.

No grace: the owner that wanted the work is gone, so nobody waits for its result.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kandev_lsp._lazy import LazyModule
from kandev_lsp.process._tree import handles, is_alive, scan, select_targets

if TYPE_CHECKING:
    import psutil
else:
    psutil = LazyModule("psutil")  # imported at first use: starting a server never needs it

logger = logging.getLogger("kandev_lsp.process")

#: How long a sweep keeps killing and checking before it reports survivors.
REAP_TIMEOUT = 5.0
_POLL_INTERVAL = 0.02


async def reap_marked(tokens: Iterable[str], *, timeout: float = REAP_TIMEOUT) -> tuple[int, ...]:
    """Kill every live process whose owner marker holds one of ``tokens`` and wait until they are gone.

    Returns the pids that were killed. Processes still alive after ``timeout`` seconds are logged (they
    are not ours to wait for forever). This process is never a target.
    """
    wanted = tuple(dict.fromkeys(token for token in tokens if token))
    if not wanted:
        return ()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    killed: set[int] = set()
    while True:
        snapshot = await asyncio.to_thread(scan)
        pids: set[int] = set()
        for token in wanted:
            pids |= select_targets(snapshot, token=token, exclude={os.getpid()})
        targets = [process for process in handles(pids).values() if is_alive(process)]
        if not targets:
            return tuple(sorted(killed))
        for process in targets:
            try:
                process.kill()
            except psutil.Error:  # gone meanwhile, or not ours: the next scan tells
                continue
            killed.add(process.pid)
        while True:
            survivors = [process.pid for process in targets if is_alive(process)]
            if not survivors:
                break
            if loop.time() >= deadline:
                logger.warning(
                    "processes left by a dead owner still alive %.0f s after being killed: %s",
                    timeout,
                    ", ".join(map(str, survivors)),
                )
                return tuple(sorted(killed))
            await asyncio.sleep(_POLL_INTERVAL)
        if loop.time() >= deadline:  # something keeps starting new ones: do not chase it forever
            logger.warning("processes left by a dead owner kept appearing for %.0f s", timeout)
            return tuple(sorted(killed))
