"""The one server lifecycle (resolve -> install per policy -> resolve -> start) that serve, run, the
broker and the agent tools share: its policy, its observer order, its failures as categories, and its
cancellation, against a real release server on 127.0.0.1 and the fake server as a real process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kandev_lsp.install import InstallProgress, InstallReceipt
from kandev_lsp.lifecycle import InstallPolicy, LaunchError, LaunchFailure, Lifecycle, QuietObserver
from kandev_lsp.settings import UserSettings
from stream_testkit import FAST_PYTHON, StreamKit, fake_server_source
from test_stream_install import _leftovers


class Recorder(QuietObserver):
    def __init__(self, refuse: bool = False) -> None:
        self.events: list[str] = []
        self.refuse = refuse

    async def installing(self, language: str) -> None:
        self.events.append(f"installing {language}")
        if self.refuse:
            raise ConnectionError("the status frame could not be written")

    def progress(self, report: InstallProgress) -> None:
        if not self.events or not self.events[-1].startswith("progress"):
            self.events.append("progress")

    async def installed(self, language: str, receipt: InstallReceipt) -> None:
        self.events.append(f"installed {language} {receipt.version}")

    async def install_failed(self, language: str, message: str) -> None:
        self.events.append(f"install_failed {language}")


def _installed(home: Path, language: str) -> bool:
    return (home / ".kandev" / "lsp-servers" / language / "current").exists()


def test_policy_installs_only_when_asked_or_listed() -> None:
    assert not InstallPolicy().allows("python")
    assert InstallPolicy(requested=True).allows("python")
    listed = InstallPolicy.from_settings(UserSettings(auto_install_languages=("python",)))
    assert listed.allows("python") and not listed.allows("go")
    assert not InstallPolicy.from_settings(None).allows("python")


def test_found_server_starts_without_installing(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await lifecycle.launch("fake-echo", kit.task(), InstallPolicy())
            try:
                assert session.returncode is None
            finally:
                await session.aclose()
        assert kit.release is not None and kit.release.requests == []

    asyncio.run(scenario())


def test_missing_and_not_allowed_installs_nothing(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            with pytest.raises(LaunchError) as caught:
                await lifecycle.ensure("fake-release", kit.task(), InstallPolicy(), Recorder())
        assert caught.value.failure is LaunchFailure.INSTALLABLE_NOT_REQUESTED
        assert caught.value.resolution is not None and not caught.value.resolution.found
        assert kit.release is not None and kit.release.requests == []

    asyncio.run(scenario())


def test_listed_language_installs_then_resolves_in_observer_order(kit: StreamKit) -> None:
    async def scenario() -> None:
        observer = Recorder()
        policy = InstallPolicy(auto_languages=frozenset({"fake-release"}))
        async with Lifecycle(kit.plugins()) as lifecycle:
            resolution = await lifecycle.ensure("fake-release", kit.task(), policy, observer)
        assert resolution.found and resolution.source is not None
        assert observer.events == ["installing fake-release", "progress", "installed fake-release 1.0.0"]
        assert _installed(kit.home, "fake-release")

    asyncio.run(scenario())


def test_observer_refusing_installing_installs_nothing(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            with pytest.raises(ConnectionError):
                await lifecycle.ensure(
                    "fake-release", kit.task(), InstallPolicy(requested=True), Recorder(refuse=True)
                )
        assert kit.release is not None and kit.release.requests == []
        assert not _installed(kit.home, "fake-release")

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("language", "failure"),
    [
        ("fake-broken", LaunchFailure.INSTALL_FAILED),  # 404 at the origin
        ("fake-manual", LaunchFailure.NO_INSTALLER),
        ("no-such-language", LaunchFailure.UNSUPPORTED_LANGUAGE),
    ],
)
def test_failures_come_back_as_categories(kit: StreamKit, language: str, failure: LaunchFailure) -> None:
    async def scenario() -> LaunchError:
        async with Lifecycle(kit.plugins()) as lifecycle:
            with pytest.raises(LaunchError) as caught:
                await lifecycle.ensure(language, kit.task(), InstallPolicy(requested=True), Recorder())
        return caught.value

    error = asyncio.run(scenario())
    assert error.failure is failure
    assert error.first_line


def test_start_failure_is_start_failed(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            with pytest.raises(LaunchError) as caught:
                await lifecycle.launch("fake-badexec", kit.task(), InstallPolicy())
        assert caught.value.failure is LaunchFailure.START_FAILED

    asyncio.run(scenario())


def test_mirror_comes_from_the_settings_file(kit: StreamKit) -> None:
    """fake-broken's origin has no 9.9.9; the user's mirror does: the lifecycle reads it from settings."""
    release = kit.release
    assert release is not None
    body = f"#!{FAST_PYTHON}\n".encode() + fake_server_source().encode()
    release.assets["/mirror/9.9.9/fake-ls"] = body

    async def scenario() -> None:
        plugins = kit.plugins()
        mirror = {"fake-broken": f"{release.base_url}/mirror"}
        settings = kit.settings(plugins, {"lsp_release_base_urls": mirror})
        async with Lifecycle(plugins, settings=settings) as lifecycle:
            resolution = await lifecycle.ensure("fake-broken", kit.task(), InstallPolicy(requested=True))
        assert resolution.found

    asyncio.run(scenario())
    assert "/mirror/9.9.9/fake-ls" in release.requests


def test_cancelling_the_caller_cancels_and_cleans_the_install(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            ensure = asyncio.ensure_future(
                lifecycle.ensure("fake-slow", kit.task(), InstallPolicy(requested=True))
            )
            async with asyncio.timeout(20):
                while not _leftovers(kit.home, "fake-slow"):
                    await asyncio.sleep(0.02)
            ensure.cancel()
            with pytest.raises((asyncio.CancelledError, LaunchError)):
                await ensure
        assert _leftovers(kit.home, "fake-slow") == []
        assert not _installed(kit.home, "fake-slow")

    asyncio.run(scenario())


def test_the_manager_refuses_a_cache_the_resolver_would_refuse(kit: StreamKit) -> None:
    """The workspace holds the cache but not HOME: the resolver would never run what lands there, so the
    install manager refuses it up front (NoInstallerError with the cache's reason) and downloads nothing.
    Asked directly, not through the lifecycle: the lifecycle's first resolve already says so."""
    from kandev_lsp.install import InstallManager, NoInstallerError
    from kandev_lsp.taskenv import Task, TaskEnvironment

    cache_parent = kit.home / ".kandev"
    cache_parent.mkdir()
    env = TaskEnvironment.from_agent({"HOME": str(kit.home)})

    async def scenario() -> None:
        async with InstallManager(kit.plugins()) as manager:
            with pytest.raises(NoInstallerError, match="inside the task workspace"):
                await manager.install("fake-release", Task(str(cache_parent), env))

    asyncio.run(scenario())
    assert kit.release is not None and kit.release.requests == []
    assert not _installed(kit.home, "fake-release")
