"""Fixtures for the install manager's tests: a local Go module proxy, a fake language plugin, tasks.

The Go module proxy is a folder laid out as ``GOPROXY=file://...`` expects, so ``go install`` (the real
toolchain) runs offline. Fakes of ``go`` itself appear only for fault injection: one that counts runs,
one that hangs in ``go install`` until it is stopped.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import shlex
import shutil
import sys
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
from kandev_lsp import (
    GoRecipe,
    HostPlatform,
    LanguageSpec,
    ReleaseAsset,
    ReleaseRecipe,
    Task,
    TaskEnvironment,
    hookimpl,
)
from kandev_lsp.host import PluginHost
from kandev_lsp.testing import make_plugin_host

REAL_GO = shutil.which("go", path="/usr/local/go/bin:/usr/bin:/usr/local/bin") or shutil.which("go")
FAKE_MODULE = "example.com/fakels"

GO_MAIN = """package main

import (
\t"fmt"
\t"os"
)

func main() {
\tif len(os.Args) > 1 && (os.Args[1] == "--version" || os.Args[1] == "version") {
\t\tfmt.Println("%(name)s %(version)s")
\t\treturn
\t}
\tfmt.Fprintln(os.Stderr, "fake server: unsupported arguments", os.Args[1:])
\tos.Exit(2)
}
"""


def _escape(module: str) -> str:
    return "".join(f"!{ch.lower()}" if ch.isupper() else ch for ch in module)


def publish_go_module(proxy: Path, module: str, version: str, main_source: str | None = None) -> None:
    """Add ``module@version`` (a ``package main`` printing its version) to a file-based module proxy."""
    folder = proxy / _escape(module) / "@v"
    folder.mkdir(parents=True, exist_ok=True)
    listing = folder / "list"
    known = listing.read_text().split() if listing.exists() else []
    listing.write_text("\n".join(sorted({*known, version})) + "\n")
    (folder / f"{version}.info").write_text(json.dumps({"Version": version, "Time": "2026-01-01T00:00:00Z"}))
    go_mod = f"module {module}\n\ngo 1.19\n"
    (folder / f"{version}.mod").write_text(go_mod)
    name = module.rsplit("/", 1)[-1]
    source = main_source or GO_MAIN % {"name": name, "version": version}
    with zipfile.ZipFile(folder / f"{version}.zip", "w") as archive:
        archive.writestr(f"{module}@{version}/go.mod", go_mod)
        archive.writestr(f"{module}@{version}/main.go", source)


def write_script(path: Path, body: str) -> Path:
    """An executable Python script (fault injection and fake release assets)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(0o755)
    return path


class _FakePlugin:
    def __init__(self, specs: list[LanguageSpec]) -> None:
        self._specs = specs

    @hookimpl
    def kandev_lsp_languages(self) -> list[LanguageSpec]:
        return list(self._specs)


def plugin_host(*specs: LanguageSpec) -> PluginHost:
    """A host with the core defaults and one plugin declaring ``specs``."""
    return make_plugin_host(_FakePlugin(list(specs)), names=["fakes"])


def go_spec(language: str = "fakego", version: str = "v0.1.0", module: str = FAKE_MODULE) -> LanguageSpec:
    return LanguageSpec(
        id=language,
        display_name="Fake Go server",
        command=module.rsplit("/", 1)[-1],
        install=GoRecipe(package=module, version=version, bin=module.rsplit("/", 1)[-1]),
        version_args=("--version",),
    )


def release_spec(
    base_url: str,
    *,
    language: str = "fakerel",
    version: str = "1.0.0",
    asset: ReleaseAsset | None = None,
    host: HostPlatform | None = None,
    version_args: tuple[str, ...] = ("--version",),
) -> LanguageSpec:
    target = str(host or HostPlatform.current())
    return LanguageSpec(
        id=language,
        display_name="Fake release server",
        command="fakerel",
        install=ReleaseRecipe(
            version=version,
            base_url=base_url,
            assets={target: asset or ReleaseAsset("fakerel.gz")},
            bin="fakerel",
        ),
        version_args=version_args,
    )


def script_asset(text: str = "fakerel 1.0.0", *, exit_code: int = 0) -> tuple[bytes, str]:
    """A gzip'd executable script printing ``text`` for ``--version``; returns (gzip bytes, their sha256)."""
    script = (f"#!{sys.executable}\nimport sys\nprint({text!r})\nsys.exit({exit_code})\n").encode()
    data = gzip.compress(script)
    return data, hashlib.sha256(data).hexdigest()


@dataclass
class World:
    """A task with its own HOME, a Go toolchain set up for the local proxy, and helper folders."""

    root: Path
    proxy: Path
    home: Path
    workspace: Path
    tools: Path
    extra: dict[str, str] = field(default_factory=dict)

    def env(self, **overrides: str) -> TaskEnvironment:
        assert REAL_GO, "go is required (scripts/setup installs golang-go)"
        path = [str(self.tools), os.path.dirname(REAL_GO), "/usr/bin", "/bin"]
        variables = {
            "PATH": os.pathsep.join(path),
            "HOME": str(self.home),
            "GOPROXY": self.proxy.as_uri(),
            "GOSUMDB": "off",
            "GOFLAGS": "-mod=mod",
            "GOTOOLCHAIN": "local",
            **self.extra,
            **overrides,
        }
        return TaskEnvironment(variables, HostPlatform.current())

    def task(self, **overrides: str) -> Task:
        return Task(str(self.workspace), self.env(**overrides))

    @property
    def cache(self) -> Path:
        return self.home / ".kandev" / "lsp-servers"

    def counting_go(self, log: Path) -> Path:
        """A ``go`` on the task's PATH that records each ``go install`` and runs the real one."""
        return write_script(
            self.tools / "go",
            "import os, sys\n"
            "if sys.argv[1:2] == ['install']:\n"
            f"    with open({str(log)!r}, 'a') as f: f.write(str(os.getpid()) + '\\n')\n"
            f"os.execv({REAL_GO!r}, [{REAL_GO!r}, *sys.argv[1:]])\n",
        )

    def gated_go(self, started: Path, gate: Path, log: Path | None = None) -> Path:
        """A ``go`` whose ``install`` writes its pid to ``started``, waits for the file ``gate``, then runs
        the real one (so a test can hold an install in the middle). ``log`` counts installs."""
        count = f"    with open({str(log)!r}, 'a') as f: f.write('run\\n')\n" if log else ""
        return write_script(
            self.tools / "go",
            "import os, sys, time\n"
            "if sys.argv[1:2] == ['install']:\n"
            f"{count}"
            f"    with open({str(started)!r}, 'a') as f: f.write(str(os.getpid()) + '\\n')\n"
            f"    while not os.path.exists({str(gate)!r}): time.sleep(0.01)\n"
            f"os.execv({REAL_GO!r}, [{REAL_GO!r}, *sys.argv[1:]])\n",
        )

    def hanging_go(self, started: Path) -> Path:
        """A ``go`` whose ``install`` appends its pid to ``started`` and then hangs; other commands run the
        real one. A tiny POSIX shell script, so that starting it is quick enough for cycle tests."""
        path = self.tools / "go"
        path.write_text(
            "#!/bin/sh\n"
            f'if [ "$1" = install ]; then echo $$ >> {shlex.quote(str(started))}; exec sleep 600; fi\n'
            f'exec {shlex.quote(REAL_GO or "go")} "$@"\n'
        )
        path.chmod(0o755)
        return path

    def orphaning_go(self, started: Path) -> Path:
        """A ``go`` whose ``install`` starts a background worker that keeps re-creating a folder in its
        working directory (the staging folder), writes ``<go pid> <worker pid>`` to ``started`` and hangs:
        the shape of an npm whose children outlive it. Other commands run the real go."""
        path = self.tools / "go"
        path.write_text(
            "#!/bin/sh\n"
            'if [ "$1" = install ]; then\n'
            '  ( while :; do mkdir -p "$PWD/.still-writing"; sleep 0.05; done ) &\n'
            f"  echo $$ $! >> {shlex.quote(str(started))}\n"
            "  exec sleep 600\n"
            "fi\n"
            f'exec {shlex.quote(REAL_GO or "go")} "$@"\n'
        )
        path.chmod(0o755)
        return path


@pytest.fixture(scope="session")
def go_caches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """GOPATH (module cache) and GOCACHE shared by every test, so each ``go install`` is quick."""
    base = tmp_path_factory.mktemp("go-caches")
    yield {"GOPATH": str(base / "gopath"), "GOCACHE": str(base / "gocache")}
    # The module cache is read-only by design: make it writable so the temporary folder can go.
    for folder, dirs, files in os.walk(base):
        for name in dirs + files:
            with contextlib.suppress(OSError):
                path = os.path.join(folder, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o755)


@pytest.fixture
def world(tmp_path: Path, go_caches: Mapping[str, str]) -> World:
    proxy = tmp_path / "proxy"
    publish_go_module(proxy, FAKE_MODULE, "v0.1.0")
    publish_go_module(proxy, FAKE_MODULE, "v0.2.0")
    for name in ("home", "workspace", "tools"):
        (tmp_path / name).mkdir()
    return World(
        tmp_path, proxy, tmp_path / "home", tmp_path / "workspace", tmp_path / "tools", dict(go_caches)
    )


def wait_for_lines(path: Path, count: int = 1, timeout: float = 20.0) -> list[str]:
    """Poll until ``path`` has ``count`` lines (a fake wrote its pid); the lines."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            lines = path.read_text().splitlines()
            if len(lines) >= count:
                return lines
        time.sleep(0.01)
    raise AssertionError(f"{path} did not get {count} line(s) within {timeout} s")


async def await_lines(path: Path, count: int = 1, timeout: float = 20.0) -> list[str]:
    """:func:`wait_for_lines` for a running event loop."""
    import asyncio

    async with asyncio.timeout(timeout):
        while True:
            if path.exists():
                lines = path.read_text().splitlines()
                if len(lines) >= count:
                    return lines
            await asyncio.sleep(0.01)


def gone(pid: int, timeout: float = 5.0) -> bool:
    """Whether process ``pid`` has exited (a zombie counts as gone), waiting up to ``timeout``."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def descendants() -> list[psutil.Process]:
    """Processes this test process started that are still alive (zombies excluded)."""
    alive = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.status() != psutil.STATUS_ZOMBIE:
                alive.append(child)
    return alive


class Kit:
    """The helpers above, for test modules (conftest is not importable under ``--import-mode=importlib``)."""

    FAKE_MODULE = FAKE_MODULE
    REAL_GO = REAL_GO
    publish_go_module = staticmethod(publish_go_module)
    write_script = staticmethod(write_script)
    plugin_host = staticmethod(plugin_host)
    go_spec = staticmethod(go_spec)
    release_spec = staticmethod(release_spec)
    script_asset = staticmethod(script_asset)
    descendants = staticmethod(descendants)
    wait_for_lines = staticmethod(wait_for_lines)
    await_lines = staticmethod(await_lines)
    gone = staticmethod(gone)


@pytest.fixture
def kit() -> type[Kit]:
    return Kit
