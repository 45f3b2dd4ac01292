"""Spawn benchmark: what the parent-death signal costs each owned process.

Run: ``.venv/bin/python bench/spawn_bench.py`` (a few seconds; ``--rounds N``).

On Linux every child :func:`kandev_lsp.process.spawn` starts gets ``prctl(PR_SET_PDEATHSIG, SIGKILL)``
in a ``preexec_fn`` (so it dies with a SIGKILLed owner, issue 7 items 5 and 8). A ``preexec_fn`` makes
Python ``fork`` instead of ``vfork`` and run Python in the child before ``exec``, which costs copy-on-write
faults in proportion to the parent's memory. Measured here: ``spawn`` of ``/bin/true`` until it is
reaped, with the hook and with it switched off, interleaved in the same run so both see the same machine
load; wall-clock p50 and CPU time (this process and its children) per spawn, and the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import time
from collections.abc import Callable

from kandev_lsp.process import _owned, spawn
from kandev_lsp.process._parentdeath import parent_death_hook
from kandev_lsp.taskenv import TaskEnvironment


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def _one(env: TaskEnvironment) -> float:
    began = time.perf_counter()
    process = await spawn(["/bin/true"], env=env, cwd="/tmp", stdout="discard", stderr="discard")
    await process.wait()
    took = time.perf_counter() - began
    await process.stop()
    return took


async def main(rounds: int) -> None:
    env = TaskEnvironment.from_agent()
    modes: dict[str, Callable[[], Callable[[], None] | None]] = {
        "with parent-death signal": parent_death_hook,
        "without": lambda: None,
    }
    walls: dict[str, list[float]] = {name: [] for name in modes}
    cpus: dict[str, float] = dict.fromkeys(modes, 0.0)
    for _ in range(rounds):
        for name, hook in modes.items():
            _owned.parent_death_hook = hook  # type: ignore[attr-defined]
            before = _cpu()
            walls[name].append(await _one(env))
            cpus[name] += _cpu() - before
    _owned.parent_death_hook = parent_death_hook  # type: ignore[attr-defined]
    with_, without = (statistics.median(walls[name]) * 1000 for name in modes)
    cpu_with, cpu_without = (cpus[name] / rounds * 1000 for name in modes)
    print(f"spawn + exit of /bin/true, {rounds} interleaved rounds")
    print(f"  wall p50: with {with_:.2f} ms, without {without:.2f} ms, ratio {with_ / without:.2f}x")
    print(
        f"  CPU/spawn: with {cpu_with:.2f} ms, without {cpu_without:.2f} ms, added {cpu_with - cpu_without:.2f} ms"
    )


if __name__ == "__main__":
    if not sys.platform.startswith("linux"):
        sys.exit("the parent-death signal exists on Linux only")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    asyncio.run(main(parser.parse_args().rounds))
