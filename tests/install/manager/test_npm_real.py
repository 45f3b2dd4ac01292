"""Real npm installs of the pinned TypeScript and Python servers into a temporary HOME.

These reach the npm registry the task's npm is configured for, install the real packages, and check that
the resolver then finds each server in the managed cache and that it answers an LSP ``initialize``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from pathlib import Path

import pytest
from kandev_lsp import Task, TaskEnvironment
from kandev_lsp.host import PluginHost
from kandev_lsp.install import InstallManager, InstallProgress
from kandev_lsp.install.cache import ServerCache
from kandev_lsp.install.verify import verify_server
from kandev_lsp.resolver import Resolver

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry]


@pytest.fixture
def task(tmp_path: Path) -> Task:
    home = tmp_path / "home"
    home.mkdir()
    # A stray project in HOME must neither receive the packages nor redirect the install.
    (home / "package.json").write_text(json.dumps({"name": "stray", "dependencies": {}}))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return Task(str(workspace), TaskEnvironment.from_agent({"HOME": str(home)}))


def install(language: str, task: Task) -> tuple[object, list[InstallProgress]]:
    plugins = PluginHost.load()
    reports: list[InstallProgress] = []

    async def run() -> object:
        async with InstallManager(plugins) as manager:
            return await manager.install(language, task, progress=reports.append)

    return asyncio.run(run()), reports


def check_found_and_answers_initialize(language: str, task: Task) -> None:
    plugins = PluginHost.load()
    resolution = Resolver(plugins).resolve(language, task)
    assert resolution.found, resolution.message
    assert resolution.source == "managed cache"
    cache_root = task.env.cache_root()
    assert cache_root and resolution.executable == os.path.join(
        cache_root, language, "current", "node_modules", ".bin", plugins.language(language).command
    )
    # Whatever the plugin's own check is, the resolved server must answer an LSP initialize.
    spec = dataclasses.replace(plugins.language(language), version_args=())
    scratch = Path(task.workspace).parent / "scratch"
    scratch.mkdir(exist_ok=True)
    asyncio.run(verify_server(spec, resolution.command, task, cwd=str(scratch), timeout=60))


def check_home_untouched(task: Task) -> None:
    home = Path(task.env.home())
    assert json.loads((home / "package.json").read_text()) == {"name": "stray", "dependencies": {}}
    assert not (home / "node_modules").exists() and not (home / "package-lock.json").exists()


def test_typescript_language_server_installs_resolves_and_answers_initialize(task: Task) -> None:
    receipt, reports = install("typescript", task)
    assert [r.phase for r in reports] == ["waiting_for_lock", "installing", "verifying", "switching", "done"]
    assert receipt.packages == ("typescript-language-server@5.3.0", "typescript@5.9.3")  # type: ignore[attr-defined]
    assert receipt.recipe == "npm" and set(receipt.toolchain) == {"node", "npm"}  # type: ignore[attr-defined]
    assert receipt.source.startswith("npm registry ")  # type: ignore[attr-defined]
    check_found_and_answers_initialize("typescript", task)  # raises VerificationError if it does not answer
    check_home_untouched(task)
    current = ServerCache(task.env.cache_root() or "", "typescript").current
    assert (current / "node_modules" / "typescript" / "lib" / "tsserver.js").is_file()


def test_pyright_installs_is_verified_by_initialize_and_resolves(task: Task) -> None:
    receipt, reports = install("python", task)
    verifying = [r.message for r in reports if r.phase == "verifying"]
    assert verifying == ["checking that pyright-langserver 1.1.414 runs"]
    assert receipt.packages == ("pyright@1.1.414",)  # type: ignore[attr-defined]
    check_found_and_answers_initialize("python", task)
    check_home_untouched(task)
    [listed] = InstallManager(PluginHost.load()).installed(task)
    assert listed.language == "python" and listed.matches_pin and listed.binary_present
