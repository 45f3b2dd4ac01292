"""A :class:`MutationCoordinator` over a real (server-less) pool, and a producer of a fixed edit: what the
coordinator's tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from kandev_lsp.host import PluginHost
from kandev_lsp.intel.edits.coordinator import MutationCoordinator, ProducedEdit
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.runtime.executor import Deadline
from kandev_lsp.intel.runtime.pool import ServerPool
from kandev_lsp.lifecycle import Lifecycle
from kandev_lsp.taskenv import TaskEnvironment


@asynccontextmanager
async def coordinator_for(folder: Path, **kw: Any) -> AsyncIterator[tuple[Workspace, MutationCoordinator]]:
    """The workspace of ``folder`` and its coordinator (``kw`` to the coordinator), closed afterwards."""
    workspace = Workspace([folder])
    lifecycle = Lifecycle(PluginHost.load())
    pool = ServerPool(workspace, lifecycle, TaskEnvironment.from_agent({}))
    try:
        yield workspace, MutationCoordinator(workspace, pool, **kw)
    finally:
        await pool.aclose()
        await lifecycle.aclose()


def fixed(edit: dict[str, Any], **kw: Any) -> Callable[[Deadline], Awaitable[ProducedEdit]]:
    """A producer that answers ``edit`` (``kw`` to :class:`ProducedEdit`) instead of asking a server."""

    async def produce(deadline: Deadline) -> ProducedEdit:
        return ProducedEdit(edit, **kw)

    return produce
