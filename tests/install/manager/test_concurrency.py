"""Concurrent callers in one process: shared installs, callers that leave, cancellation, aclose."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.cancel import CancelToken
from kandev_lsp.install import InstallCancelled, InstallManager, InstallProgress
from kandev_lsp.install.cache import ServerCache


def test_two_callers_of_the_same_install_share_one_run(world: Any, kit: Any) -> None:
    started, gate = world.root / "started", world.root / "gate"
    world.gated_go(started, gate)
    seen: dict[str, list[str]] = {"a": [], "b": []}

    async def run() -> tuple[Any, Any]:
        async with InstallManager(kit.plugin_host(kit.go_spec())) as manager:
            first = asyncio.ensure_future(
                manager.install("fakego", world.task(), progress=lambda p: seen["a"].append(p.phase))
            )
            await kit.await_lines(started)
            second = asyncio.ensure_future(
                manager.install("fakego", world.task(), progress=lambda p: seen["b"].append(p.phase))
            )
            await asyncio.sleep(0.1)
            gate.touch()
            return await asyncio.gather(first, second)

    a, b = asyncio.run(run())
    assert a == b
    assert len(started.read_text().splitlines()) == 1
    # The late caller is told it waits, then joins at the phase the install is in.
    assert seen["b"][:2] == ["waiting_for_lock", "installing"] and seen["b"][-1] == "done"
    assert seen["a"] == ["waiting_for_lock", "installing", "verifying", "switching", "done"]


@pytest.mark.parametrize("how", ["token", "task"])
def test_a_caller_that_leaves_does_not_cancel_the_install_for_the_others(
    world: Any, kit: Any, how: str
) -> None:
    started, gate = world.root / "started", world.root / "gate"
    world.gated_go(started, gate)

    async def run() -> Any:
        async with InstallManager(kit.plugin_host(kit.go_spec())) as manager:
            staying = asyncio.ensure_future(manager.install("fakego", world.task()))
            token = CancelToken()
            leaving = asyncio.ensure_future(manager.install("fakego", world.task(), cancel=token))
            await kit.await_lines(started)
            if how == "token":
                token.set()
                with pytest.raises(InstallCancelled):
                    await leaving
            else:
                leaving.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await leaving
            gate.touch()
            return await staying

    receipt = asyncio.run(run())
    assert receipt.version == "v0.1.0"
    current = ServerCache(world.cache, "fakego").current_receipt()
    assert current is not None and current.identity == receipt.identity


def test_when_the_last_caller_leaves_the_install_stops_and_the_previous_version_stays(
    world: Any, kit: Any
) -> None:
    host = kit.plugin_host(kit.go_spec())
    asyncio.run(InstallManager(host).install("fakego", world.task()))  # v0.1.0, with the real go
    started = world.root / "started"
    world.hanging_go(started)
    token = CancelToken()

    async def run() -> None:
        async with InstallManager(host) as manager:
            install = asyncio.ensure_future(
                manager.install("fakego", world.task(), version="v0.2.0", cancel=token)
            )
            await kit.await_lines(started)
            token.set()
            with pytest.raises(InstallCancelled, match="nothing was changed"):
                await install
            # Leaving returns at once; the install itself unwinds (stops go, removes staging) right after.
            await asyncio.sleep(0)

    asyncio.run(run())
    [pid] = started.read_text().split()
    assert kit.gone(int(pid)), "the hanging go install must have been stopped"
    cache = ServerCache(world.cache, "fakego")
    current = cache.current_receipt()
    assert current is not None and current.version == "v0.1.0"
    assert cache.leftovers() == []
    assert kit.descendants() == []


def test_a_caller_cancelled_before_it_starts_never_installs(world: Any, kit: Any) -> None:
    log = world.root / "go-runs"
    world.counting_go(log)
    token = CancelToken()
    token.set()
    seen: list[InstallProgress] = []
    with pytest.raises(InstallCancelled):
        asyncio.run(
            InstallManager(kit.plugin_host(kit.go_spec())).install(
                "fakego", world.task(), cancel=token, progress=seen.append
            )
        )
    assert seen == [] and not log.exists()
    assert not (world.cache / "fakego").exists()


def test_a_progress_listener_that_cannot_take_waiting_for_lock_stops_the_install(
    world: Any, kit: Any
) -> None:
    """The stream's rule: if the "installing" status cannot be written, nothing is installed."""
    log = world.root / "go-runs"
    world.counting_go(log)

    def closed_socket(report: InstallProgress) -> None:
        raise ConnectionResetError("the client went away")

    with pytest.raises(ConnectionResetError):
        asyncio.run(
            InstallManager(kit.plugin_host(kit.go_spec())).install(
                "fakego", world.task(), progress=closed_socket
            )
        )
    assert not log.exists() and not (world.cache / "fakego").exists()


def test_a_different_version_requested_meanwhile_waits_its_turn(world: Any, kit: Any) -> None:
    started, gate = world.root / "started", world.root / "gate"
    world.gated_go(started, gate)

    async def run() -> tuple[Any, Any]:
        async with InstallManager(kit.plugin_host(kit.go_spec())) as manager:
            first = asyncio.ensure_future(manager.install("fakego", world.task()))
            await kit.await_lines(started)
            second = asyncio.ensure_future(manager.install("fakego", world.task(), version="v0.2.0"))
            await asyncio.sleep(0.2)
            assert len(started.read_text().splitlines()) == 1  # not run beside the first
            gate.touch()
            return await asyncio.gather(first, second)

    first, second = asyncio.run(run())
    assert (first.version, second.version) == ("v0.1.0", "v0.2.0")
    assert len(started.read_text().splitlines()) == 2
    current = ServerCache(world.cache, "fakego").current_receipt()
    assert current is not None and current.version == "v0.2.0"


def test_aclose_cancels_running_installs_and_reaps_their_processes(world: Any, kit: Any) -> None:
    started = world.root / "started"
    world.hanging_go(started)

    async def run() -> None:
        manager = InstallManager(kit.plugin_host(kit.go_spec()))
        install = asyncio.ensure_future(manager.install("fakego", world.task()))
        await kit.await_lines(started)
        await manager.aclose()
        [pid] = started.read_text().split()
        assert kit.gone(int(pid), timeout=0.0), "aclose returned before the installer was gone"
        assert ServerCache(world.cache, "fakego").leftovers() == []
        with pytest.raises(InstallCancelled):
            await install

    asyncio.run(run())
    assert kit.descendants() == []


def test_installs_of_different_languages_run_side_by_side(world: Any, kit: Any) -> None:
    started, gate = world.root / "started", world.root / "gate"
    world.gated_go(started, gate)
    host = kit.plugin_host(kit.go_spec("fakego"), kit.go_spec("othergo"))

    async def run() -> list[Any]:
        async with InstallManager(host) as manager:
            installs = [
                asyncio.ensure_future(manager.install(lang, world.task())) for lang in ("fakego", "othergo")
            ]
            await kit.await_lines(started, 2)  # both are inside go install at once
            gate.touch()
            return list(await asyncio.gather(*installs))

    receipts = asyncio.run(run())
    assert [r.language for r in receipts] == ["fakego", "othergo"]
    assert all(Path(r.executable_path).is_file() for r in receipts)
