"""A supervisor stops every tree it owns, concurrently, and owns nothing after that."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from kandev_lsp.process import DEFAULT_GRACE, ProcessStartError, ProcessSupervisor, run, spawn

if TYPE_CHECKING:
    from conftest import Kit

#: A child with a grandchild that left the session and does not stop on SIGINT, so each tree needs the full
#: grace; the grandchild writes when it was interrupted to ``<pidfile>.sigint`` (wall clock, one line each).
STUBBORN_TREE = """
    if os.fork() == 0:
        os.setsid()
        def note(signum, frame):
            with open(sys.argv[1] + ".sigint", "a") as handle:
                handle.write(f"{time.time()}\\n")
        signal.signal(signal.SIGINT, note)
        publish(sys.argv[1], os.getpid())
        while True:
            time.sleep(60)
    time.sleep(60)
"""


def test_aclose_reaps_three_live_trees_concurrently(kit: Kit) -> None:
    async def main() -> tuple[list[int], list[int], list[str], int]:
        supervisor = ProcessSupervisor()
        pidfiles = [kit.pidfile(f"tree{i}") for i in range(3)]
        processes = [
            await spawn(
                [*kit.script(STUBBORN_TREE), pidfile], env=kit.env, cwd=kit.cwd, supervisor=supervisor
            )
            for pidfile in pidfiles
        ]
        grandchildren = [await kit.wait_pid(pidfile) for pidfile in pidfiles]
        assert len(kit.alive()) == 6
        assert supervisor.live() == processes
        await supervisor.aclose()
        return [p.pid for p in processes], grandchildren, pidfiles, len(supervisor.live())

    children, grandchildren, pidfiles, left = asyncio.run(main())
    assert left == 0
    assert all(kit.gone(pid) for pid in children + grandchildren)
    assert kit.alive() == []
    # One grace for all three, not three in a row: every tree was interrupted before the first tree's
    # grace ran out (in a row, they would be a grace apart: 2 s and 4 s). It was a bound on the whole
    # aclose, 3.5 s for a 2 s grace, which a loaded machine's kills and confirms alone can cross.
    interrupted = [float(Path(f"{pidfile}.sigint").read_text().split()[0]) for pidfile in pidfiles]
    assert max(interrupted) - min(interrupted) < DEFAULT_GRACE


def test_a_closed_supervisor_starts_nothing(kit: Kit) -> None:
    marker = kit.root / "ran"
    script = kit.script(f"open({str(marker)!r}, 'w').close()")

    async def main() -> None:
        async with ProcessSupervisor() as supervisor:
            pass
        assert supervisor.closed
        with pytest.raises(ProcessStartError, match="supervisor is closed"):
            await spawn(script, env=kit.env, cwd=kit.cwd, supervisor=supervisor)

    asyncio.run(main())
    assert not marker.exists()


def test_stopped_and_finished_processes_leave_the_supervisor(kit: Kit) -> None:
    async def main() -> None:
        supervisor = ProcessSupervisor()
        result = await run(kit.script("print('ok')"), env=kit.env, cwd=kit.cwd, supervisor=supervisor)
        assert result.returncode == 0
        assert supervisor.live() == []
        process = await spawn(kit.script("time.sleep(60)"), env=kit.env, cwd=kit.cwd, supervisor=supervisor)
        assert supervisor.live() == [process]
        await process.stop()
        assert supervisor.live() == []
        await supervisor.aclose()

    asyncio.run(main())


def test_cancelling_aclose_still_finishes_the_stops(kit: Kit) -> None:
    async def main() -> int:
        supervisor = ProcessSupervisor()
        pidfile = kit.pidfile("tree")
        await spawn([*kit.script(STUBBORN_TREE), pidfile], env=kit.env, cwd=kit.cwd, supervisor=supervisor)
        grandchild = await kit.wait_pid(pidfile)
        closing = asyncio.create_task(supervisor.aclose())
        await asyncio.sleep(0.1)
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        return grandchild

    grandchild = asyncio.run(main())
    assert kit.gone(grandchild)
