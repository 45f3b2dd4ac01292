"""pytest fixtures for testing a kandev-lsp plugin on its own.

Loaded by pytest through kandev-lsp's ``pytest11`` entry point, so a plugin author's tests get these
fixtures without configuration. They wrap the runner-independent helpers of :mod:`kandev_lsp.testing`,
which import without pytest; only this module needs it.

``plugin_host_factory``
    ``plugin_host_factory(my_plugin_module)`` -> a :class:`~kandev_lsp.host.PluginHost` holding only the
    core hookspecs, the core defaults and the given plugins (no entry points are read).
``task_factory``
    ``task_factory(path=[folder, ...], home=..., extra={...}, host=HostPlatform(...))`` -> a
    :class:`~kandev_lsp.taskenv.Task` whose environment contains only what you pass, and whose workspace
    is a fresh folder under ``tmp_path``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import pytest
from kandev_lsp.host import PluginHost
from kandev_lsp.platform import HostPlatform
from kandev_lsp.taskenv import Task
from kandev_lsp.testing import make_plugin_host, make_task

__all__ = ["plugin_host_factory", "task_factory"]


@pytest.fixture
def plugin_host_factory() -> Callable[..., PluginHost]:
    return make_plugin_host


@pytest.fixture
def task_factory(tmp_path: Path) -> Callable[..., Task]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)

    def factory(
        *,
        path: Iterable[str] = (),
        home: str | None = None,
        extra: Mapping[str, str] | None = None,
        host: HostPlatform | None = None,
    ) -> Task:
        return make_task(str(workspace), path=path, home=home, extra=extra, host=host)

    return factory
