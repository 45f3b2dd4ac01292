"""``go install`` through the manager with the real Go toolchain and a local file-based module proxy."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.host import PluginHost
from kandev_lsp.install import (
    InstallError,
    InstallManager,
    InstallProgress,
    InstallReceipt,
    ToolchainMissingError,
    VerificationError,
)
from kandev_lsp.install.cache import ServerCache
from kandev_lsp.resolver import Resolver


def install(
    world: Any, host: PluginHost, version: str | None = None, **overrides: str
) -> tuple[InstallReceipt, list[str]]:
    """One install in a fresh manager (as a CLI run would do); returns the receipt and the phases seen."""
    phases: list[str] = []

    async def run() -> InstallReceipt:
        async with InstallManager(host) as manager:
            return await manager.install(
                "fakego", world.task(**overrides), version=version, progress=lambda p: phases.append(p.phase)
            )

    return asyncio.run(run()), phases


def test_go_install_stages_into_the_cache_verifies_and_the_resolver_finds_it(world: Any, kit: Any) -> None:
    host = kit.plugin_host(kit.go_spec())
    assert not Resolver(host).resolve("fakego", world.task()).found
    receipt, phases = install(world, host)
    assert phases == ["waiting_for_lock", "installing", "verifying", "switching", "done"]
    assert (receipt.recipe, receipt.version, receipt.plugin) == ("go", "v0.1.0", "fakes")
    assert receipt.packages == (f"{kit.FAKE_MODULE}@v0.1.0",)
    assert receipt.toolchain["go"].startswith("go1.")
    assert world.proxy.as_uri() in receipt.source
    resolution = Resolver(host).resolve("fakego", world.task())
    assert resolution.found and resolution.source == "managed cache"
    assert resolution.executable == str(world.cache / "fakego" / "current" / "bin" / "fakels")
    assert receipt.executable_path == str(
        world.cache / "fakego" / "versions" / receipt.directory.split("/")[-1] / "bin" / "fakels"
    )
    ran = subprocess.run([resolution.executable, "--version"], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "fakels v0.1.0"
    # GOBIN pointed into the cache: nothing landed in the user's own GOPATH/bin.
    assert not (Path(world.extra["GOPATH"]) / "bin" / "fakels").exists()
    assert ServerCache(world.cache, "fakego").leftovers() == []


def test_an_install_that_is_already_current_is_reused_without_running_go(world: Any, kit: Any) -> None:
    log = world.root / "go-runs"
    world.counting_go(log)
    host = kit.plugin_host(kit.go_spec())
    first, _ = install(world, host)
    second, phases = install(world, host)
    assert phases == ["waiting_for_lock", "done"]
    assert second == first
    assert len(log.read_text().splitlines()) == 1


def test_other_versions_switch_current_and_a_kept_version_comes_back_without_reinstalling(
    world: Any, kit: Any
) -> None:
    log = world.root / "go-runs"
    world.counting_go(log)
    host = kit.plugin_host(kit.go_spec())
    install(world, host)
    newer, _ = install(world, host, "v0.2.0")
    assert newer.version == "v0.2.0"
    executable = Resolver(host).resolve("fakego", world.task()).executable
    assert executable is not None
    ran = subprocess.run([executable, "--version"], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "fakels v0.2.0"
    manager = InstallManager(host)
    [listed] = manager.installed(world.task())
    assert listed.receipt.version == "v0.2.0" and not listed.matches_pin and listed.binary_present
    back, phases = install(world, host)  # the pin again: still kept, so only switched
    assert phases == ["waiting_for_lock", "switching", "done"]
    assert back.version == "v0.1.0"
    assert len(log.read_text().splitlines()) == 2
    [listed] = manager.installed(world.task())
    assert listed.matches_pin


def test_only_the_current_and_the_previous_version_are_kept(world: Any, kit: Any) -> None:
    kit.publish_go_module(world.proxy, kit.FAKE_MODULE, "v0.3.0")
    host = kit.plugin_host(kit.go_spec())
    for version in ("v0.1.0", "v0.2.0", "v0.3.0"):
        install(world, host, version)
    cache = ServerCache(world.cache, "fakego")
    assert [name.split("+")[0] for name in cache.version_names()] == ["v0.2.0", "v0.3.0"]
    current = cache.current_receipt()
    assert current is not None and current.version == "v0.3.0"


def test_a_failing_go_install_quotes_go_and_leaves_the_previous_version_current(world: Any, kit: Any) -> None:
    host = kit.plugin_host(kit.go_spec())
    install(world, host)
    with pytest.raises(InstallError) as failure:
        install(world, host, "v9.9.9")
    message = str(failure.value)
    assert f"go install {kit.FAKE_MODULE}@v9.9.9 failed" in message
    assert "v9.9.9" in failure.value.output and "last lines of output" in message
    assert "GOPROXY" in message  # says what to check
    cache = ServerCache(world.cache, "fakego")
    current = cache.current_receipt()
    assert current is not None and current.version == "v0.1.0"
    assert cache.leftovers() == []


def test_go_missing_from_the_task_path_says_how_to_get_it(world: Any, kit: Any) -> None:
    with pytest.raises(ToolchainMissingError, match=r"go was not found on the task's PATH\. Install Go"):
        install(world, kit.plugin_host(kit.go_spec()), PATH=str(world.tools))
    assert ServerCache(world.cache, "fakego").leftovers() == []


def test_a_server_that_fails_verification_is_not_made_current(world: Any, kit: Any) -> None:
    broken = (
        'package main\n\nimport "os"\n\n'
        'func main() { os.Stderr.WriteString("boom: missing runtime\\n"); os.Exit(3) }\n'
    )
    kit.publish_go_module(world.proxy, "example.com/broken/fakels", "v0.1.0", main_source=broken)
    install(world, kit.plugin_host(kit.go_spec()))
    with pytest.raises(VerificationError, match="exited with status 3") as failure:
        install(world, kit.plugin_host(kit.go_spec(module="example.com/broken/fakels")))
    assert "boom: missing runtime" in failure.value.output
    cache = ServerCache(world.cache, "fakego")
    current = cache.current_receipt()
    assert current is not None and current.identity == f"go {kit.FAKE_MODULE}@v0.1.0"
    assert cache.leftovers() == [] and len(cache.version_names()) == 1


def test_the_task_environment_reaches_go(world: Any, kit: Any) -> None:
    """GOFLAGS comes from the task: an invalid flag there makes go fail (proof it was passed through)."""
    assert os.environ.get("GOFLAGS") != "-bogus-flag"
    with pytest.raises(InstallError, match="bogus-flag"):
        install(world, kit.plugin_host(kit.go_spec()), GOFLAGS="-bogus-flag")


def test_uninstall_removes_every_version_and_the_resolver_stops_finding_it(world: Any, kit: Any) -> None:
    host = kit.plugin_host(kit.go_spec())
    install(world, host)
    install(world, host, "v0.2.0")
    manager = InstallManager(host)
    assert asyncio.run(manager.uninstall("fakego", world.task())) is True
    assert not Resolver(host).resolve("fakego", world.task()).found
    assert manager.installed(world.task()) == []
    assert sorted(p.name for p in (world.cache / "fakego").iterdir()) == [".lock"]
    assert asyncio.run(manager.uninstall("fakego", world.task())) is False
    assert asyncio.run(manager.uninstall("../../etc", world.task())) is False


def test_uninstall_takes_no_lock_through_a_linked_language_folder(
    world: Any, kit: Any, tmp_path: Path
) -> None:
    """The lock file lives in the language's folder: through a link, taking the lock created ``.lock`` in
    the folder it led to before the refusal; now the refusal comes first and that folder is unchanged."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "versions" / "keep").mkdir(parents=True)
    world.cache.mkdir(parents=True, exist_ok=True)
    (world.cache / "fakego").symlink_to(elsewhere)
    with pytest.raises(InstallError, match=r"is a symbolic link .* Remove the link"):
        asyncio.run(InstallManager(kit.plugin_host(kit.go_spec())).uninstall("fakego", world.task()))
    assert sorted(str(p.relative_to(elsewhere)) for p in elsewhere.rglob("*")) == [
        "versions",
        "versions/keep",
    ]


def test_installed_reports_a_missing_binary_and_a_language_no_plugin_declares(world: Any, kit: Any) -> None:
    host = kit.plugin_host(kit.go_spec())
    install(world, host)
    (world.cache / "fakego" / "current" / "bin" / "fakels").unlink()
    [listed] = InstallManager(host).installed(world.task())
    assert not listed.binary_present and listed.matches_pin and listed.plugin_loaded
    [orphan] = InstallManager(kit.plugin_host(kit.go_spec("other"))).installed(world.task())
    assert not orphan.plugin_loaded and not orphan.matches_pin
    assert orphan.to_json()["receipt"]["identity"] == f"go {kit.FAKE_MODULE}@v0.1.0"
    # A missing binary is reinstalled by the next install, not reused.
    receipt, phases = install(world, host)
    assert "installing" in phases and Path(receipt.executable_path).is_file()


def test_progress_reports_carry_the_language_and_what_runs(world: Any, kit: Any) -> None:
    reports: list[InstallProgress] = []

    async def run() -> None:
        async with InstallManager(kit.plugin_host(kit.go_spec())) as manager:
            await manager.install("fakego", world.task(), progress=reports.append)

    asyncio.run(run())
    assert {report.language for report in reports} == {"fakego"}
    assert reports[1].message == f"go install {kit.FAKE_MODULE}@v0.1.0"


def test_a_closed_manager_refuses_new_installs(world: Any, kit: Any) -> None:
    manager = InstallManager(kit.plugin_host(kit.go_spec()))
    asyncio.run(manager.aclose())
    with pytest.raises(InstallError, match="closed"):
        asyncio.run(manager.install("fakego", world.task()))


def test_a_cache_that_cannot_be_written_is_an_install_error_saying_where(world: Any, kit: Any) -> None:
    (world.home / ".kandev").write_text("a file where the cache folder should be")
    with pytest.raises(InstallError, match=r"cannot write the managed cache at .*fakego.*HOME is writable"):
        install(world, kit.plugin_host(kit.go_spec()))


def test_a_plugin_can_refuse_installing_on_this_host(world: Any, kit: Any) -> None:
    from kandev_lsp import hookimpl
    from kandev_lsp.install import NoInstallerError
    from kandev_lsp.testing import make_plugin_host

    class Gate:
        @hookimpl
        def kandev_lsp_languages(self) -> list[Any]:
            return [kit.go_spec()]

        @hookimpl
        def kandev_lsp_installer_available(self, language: Any, host: Any) -> bool:
            return False

    with pytest.raises(NoInstallerError, match="a plugin said so"):
        install(world, make_plugin_host(Gate(), names=["gate"]))
    assert not (world.cache / "fakego").exists()


def test_a_relative_home_disables_the_cache_and_installs_nothing(world: Any, kit: Any) -> None:
    from kandev_lsp.install import NoInstallerError

    with pytest.raises(NoInstallerError, match="HOME is not an absolute path"):
        install(world, kit.plugin_host(kit.go_spec()), HOME="relative/home")
    assert not (world.workspace / "relative").exists()
