"""A third-party language plugin, packaged and installed for real, found through its entry point.

The package below is what a plugin author would publish: its own distribution declaring an entry point
in the ``kandev_lsp`` group. It adds C/C++ through clangd (installed from Debian by .ci/run) and is
installed with pip into a private site folder; kandev-lsp then loads it exactly as the built-ins.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kandev_lsp.host import PluginHost
from kandev_lsp.resolver import Resolver
from kandev_lsp.taskenv import Task, TaskEnvironment

PLUGIN_SOURCE = '''
"""C and C++ through clangd: a third-party kandev-lsp plugin."""
from kandev_lsp import LanguageSpec, ManualInstall, hookimpl

LANGUAGE = LanguageSpec(
    id="c",
    display_name="C/C++",
    command="clangd",
    args=("--log=error",),
    file_extensions=(".c", ".h", ".cc", ".cpp", ".hpp"),
    language_ids=("c", "cpp"),
    root_markers=("compile_commands.json", ".clangd"),
    install=ManualInstall("apt-get install clangd"),
)


@hookimpl
def kandev_lsp_languages():
    return [LANGUAGE]


@hookimpl
def kandev_lsp_initialization_options(language, settings):
    if language.id == "c":
        return {"clangdFileStatus": True, "fallbackFlags": settings.get("fallbackFlags", [])}
    return None
'''

PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "kandev-lsp-clangd"
version = "0.3.0"
dependencies = []

[project.entry-points.kandev_lsp]
clangd = "kandev_lsp_clangd"

[tool.setuptools]
py-modules = ["kandev_lsp_clangd"]
"""


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("kandev-lsp-clangd")
    (source / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    (source / "kandev_lsp_clangd.py").write_text(PLUGIN_SOURCE)
    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    assert list(site.glob("kandev_lsp_clangd-0.3.0.dist-info"))
    return site


@pytest.fixture
def clangd() -> str:
    path = shutil.which("clangd")
    assert path, "clangd is not installed: .ci/run installs it (apt-get install clangd)"
    return os.path.realpath(path)


def cli(site: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(site), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "kandev_lsp.cli", *args],
        capture_output=True,
        text=True,
        env=environ,
        check=False,
    )


def test_installed_plugin_resolves_a_real_clangd(plugin_site: Path, clangd: str, tmp_path: Path) -> None:
    result = cli(plugin_site, "resolve", "c", "--json", "--workspace", str(tmp_path))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["status"] == "found"
    assert os.path.realpath(data["executable"]) == clangd
    assert data["argv"][1:] == ["--log=error"]
    version = subprocess.run([data["argv"][0], "--version"], capture_output=True, text=True, check=True)
    assert "clangd version" in version.stdout


def test_installed_plugin_is_listed_with_its_version_and_hooks(plugin_site: Path) -> None:
    data = json.loads(cli(plugin_site, "plugins", "--json").stdout)
    clangd_plugin = next(p for p in data["plugins"] if p["name"] == "clangd")
    assert clangd_plugin["version"] == "0.3.0"
    assert clangd_plugin["languages"] == ["c"]
    assert clangd_plugin["hooks"] == ["kandev_lsp_initialization_options", "kandev_lsp_languages"]
    assert {p["name"] for p in data["plugins"]} >= {"typescript", "python", "go", "rust", "kotlin"}


def test_installed_plugin_contributes_initialization_options(
    plugin_site: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(plugin_site))
    host = PluginHost.load(environ={})
    spec = host.language("c")
    assert host.initialization_options(spec, {"fallbackFlags": ["-std=c11"]}) == {
        "clangdFileStatus": True,
        "fallbackFlags": ["-std=c11"],
    }
    settings_file = tmp_path / "settings.json"
    settings_file.write_text(json.dumps({"lsp_server_configs": {"c": {"fallbackFlags": ["-Wall"]}}}))
    shown = json.loads(cli(plugin_site, "config", "c", "--json", "--settings", str(settings_file)).stdout)
    assert shown["initializationOptions"] == {"clangdFileStatus": True, "fallbackFlags": ["-Wall"]}


def test_a_plugin_can_be_disabled_by_name(plugin_site: Path, tmp_path: Path) -> None:
    result = cli(plugin_site, "resolve", "c", "--json", env={"KANDEV_LSP_DISABLE_PLUGINS": "clangd"})
    assert result.returncode == 13
    assert json.loads(result.stdout)["reason"] == "unsupported_language"


def test_in_process_resolution_with_the_installed_plugin(
    plugin_site: Path, clangd: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(plugin_site))
    host = PluginHost.load(environ={})
    task = Task(str(tmp_path), TaskEnvironment.from_agent({"HOME": str(tmp_path)}))
    resolution = Resolver(host).resolve("c", task)
    assert resolution.found and os.path.realpath(resolution.executable or "") == clangd
