"""Suite-wide checks.

One session-scoped fixture shared by the stream, endpoint, intel and daemon tests: ``real_servers``,
pyright and typescript-language-server installed once per run (real npm) by kandev-lsp's own installer
into a HOME of their own. Tests only read that HOME (through ``RealServers.overrides()``), so one install
serves all. And ``tag``: a unique value for the environment of every process a test starts (the
``KANDEV_TEST_TAG`` variable; descendants inherit it, however they detach), after which any live one
fails the test and is killed.

The hookspec meta-check: every hook in kandev_lsp.hookspecs must be called at least once while the whole
suite runs (hook calls are observed through the ``kandev_lsp.hooks`` debug log, the same channel
``KANDEV_LSP_TRACE_HOOKS`` uses). A hook no test exercises fails the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from kandev_lsp import hookspecs
from kandev_lsp.testing import processes_tagged

if TYPE_CHECKING:
    from stream_testkit import RealServers

_called: set[str] = set()


class _HookRecorder(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno == logging.DEBUG:
            _called.add(record.getMessage().split(" ", 1)[0])


def pytest_configure(config: pytest.Config) -> None:
    log = logging.getLogger("kandev_lsp.hooks")
    log.addHandler(_HookRecorder())
    log.setLevel(logging.DEBUG)


@pytest.fixture(scope="session", autouse=True)
def private_runtime_folder() -> Iterator[None]:
    """The warm ``kandev-lsp code`` daemons of the whole run live in a runtime folder of the run's own
    (``KANDEV_LSP_RUNTIME_DIR``, inherited by every command a test starts with this environment), never
    in the machine's ``$XDG_RUNTIME_DIR`` or ``/tmp/kandev-lsp-<uid>``, where they would outlive the run
    and serve later ones. Removing the folder at the end stops any daemon a test left: a daemon whose
    socket is gone stops by itself, and its servers with it. (tests/codedaemon gives each test a folder
    of its own and checks its daemons gone.)"""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="kdrun")  # short: a socket path may have at most 107 bytes
    previous = os.environ.get("KANDEV_LSP_RUNTIME_DIR")
    os.environ["KANDEV_LSP_RUNTIME_DIR"] = folder
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("KANDEV_LSP_RUNTIME_DIR", None)
        else:
            os.environ["KANDEV_LSP_RUNTIME_DIR"] = previous
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def real_servers(tmp_path_factory: pytest.TempPathFactory) -> RealServers:
    """pyright and typescript-language-server in the managed cache of a HOME of their own (real npm)."""
    sys.path.insert(0, str(Path(__file__).parent / "stream"))
    from stream_testkit import RealServers

    home = tmp_path_factory.mktemp("real-home")
    servers = RealServers(home, tmp_path_factory.mktemp("npm-cache"))
    asyncio.run(servers.install(["python", "typescript"], tmp_path_factory.mktemp("install-cwd")))
    return servers


@pytest.fixture
def tag() -> Iterator[str]:
    """A unique tag for the environment of every process the test starts; leaks fail the test."""
    kit = str(Path(__file__).parent / "stream")
    if kit not in sys.path:
        sys.path.insert(0, kit)
    from stream_testkit import TAG_VARIABLE

    value = uuid.uuid4().hex
    yield value
    leaked = processes_tagged(TAG_VARIABLE, value)
    for pid in leaked:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not leaked, f"processes left running after the test: {leaked}"


def _spec_names() -> set[str]:
    return {
        name
        for name, obj in inspect.getmembers(hookspecs, inspect.isfunction)
        if name.startswith("kandev_lsp_")
    }


def _whole_suite(session: pytest.Session) -> bool:
    option = session.config.option
    return (
        not option.collectonly
        and not option.keyword
        and not option.markexpr
        and not session.config.args[1:]
        and (not session.config.args or session.config.args[0].rstrip("/").endswith("tests"))
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if exitstatus != 0 or not _whole_suite(session):
        return
    missing = sorted(_spec_names() - _called)
    if missing:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"hookspecs no test exercised: {', '.join(missing)}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
