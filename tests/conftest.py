"""Suite-wide checks.

The hookspec meta-check: every hook in kandev_lsp.hookspecs must be called at least once while the whole
suite runs (hook calls are observed through the ``kandev_lsp.hooks`` debug log, the same channel
``KANDEV_LSP_TRACE_HOOKS`` uses). A hook no test exercises fails the run.
"""

from __future__ import annotations

import inspect
import logging

import pytest
from kandev_lsp import hookspecs

_called: set[str] = set()


class _HookRecorder(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno == logging.DEBUG:
            _called.add(record.getMessage().split(" ", 1)[0])


def pytest_configure(config: pytest.Config) -> None:
    log = logging.getLogger("kandev_lsp.hooks")
    log.addHandler(_HookRecorder())
    log.setLevel(logging.DEBUG)


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
