"""One code-intelligence session over a workspace: the pool, the wired tools and the dispatcher together.

The read tools and the six mutating tools share one :class:`~kandev_lsp.intel.reading.tools.LspReadTools` (target
resolution, document sync, the executor); the mutations go through the workspace's one
:class:`~kandev_lsp.intel.edits.coordinator.MutationCoordinator` (B7.1). ``mutations=False`` builds a
read-only session: the mutating tools are then not offered at all (B2.2).

The MCP server keeps one for its whole life (servers stay warm between calls); ``kandev-lsp code`` opens
one for a single call (and pays the cold start); Python callers use it as an async context manager::

    async with IntelService.open(["/work/repo"]) as service:
        result = await service.dispatch("code_navigate", {...})
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kandev_lsp.intel.api import CodeIntel
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.reading.tools import LspReadTools
from kandev_lsp.intel.runtime.pool import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SERVERS, ServerPool
from kandev_lsp.intel.surface.dispatch import Dispatcher, IntelContext

if TYPE_CHECKING:
    from kandev_lsp.host import PluginHost
    from kandev_lsp.intel.edits.mutations import MutatingTools
    from kandev_lsp.lifecycle import Lifecycle
    from kandev_lsp.settings import SettingsFile
    from kandev_lsp.taskenv import TaskEnvironment

__all__ = ["IntelService"]


@dataclass
class IntelService:
    """The wired read tools of one workspace (see the module docstring)."""

    workspace: Workspace
    pool: ServerPool
    dispatcher: Dispatcher
    lifecycle: Lifecycle
    #: The mutating tools (None in a read-only session).
    mutations: MutatingTools | None = None

    @classmethod
    def open(
        cls,
        folders: Iterable[str | os.PathLike[str]],
        *,
        env: TaskEnvironment | None = None,
        plugins: PluginHost | None = None,
        settings: SettingsFile | None = None,
        disabled: Sequence[str] = (),
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        max_servers: int = DEFAULT_MAX_SERVERS,
        install: bool = False,
        root_ids: Sequence[str] | None = None,
        mutations: bool = True,
    ) -> IntelService:
        """Build the service (nothing starts until the first tool call).

        :param mutations: offer the six mutating tools (each change previewed and approved, B3, B7).
        """
        from kandev_lsp.host import PluginHost
        from kandev_lsp.lifecycle import Lifecycle
        from kandev_lsp.taskenv import TaskEnvironment

        workspace = Workspace(folders, ids=root_ids)
        host = plugins or PluginHost.load()
        lifecycle = Lifecycle(host, settings=settings)
        pool = ServerPool(
            workspace,
            lifecycle,
            env or TaskEnvironment.from_agent(),
            idle_timeout=idle_timeout,
            max_servers=max_servers,
            install=install,
        )
        reads = LspReadTools(pool)
        mutating = None
        if mutations:
            from kandev_lsp.intel.edits.coordinator import MutationCoordinator
            from kandev_lsp.intel.edits.mutations import MutatingTools

            mutating = MutatingTools(reads, MutationCoordinator(workspace, pool, reader=reads))
        dispatcher = Dispatcher(reads, mutations=mutating, disabled=disabled)
        return cls(workspace, pool, dispatcher, lifecycle, mutating)

    @property
    def intel(self) -> CodeIntel:
        """Typed helpers over the same dispatch."""
        return CodeIntel(self.dispatcher)

    async def dispatch(self, op: str, payload: Any, ctx: IntelContext | None = None) -> dict[str, Any]:
        return await self.dispatcher.dispatch(op, payload, ctx)

    async def aclose(self) -> None:
        """Stop every server gracefully, then the lifecycle's installs."""
        try:
            await self.pool.aclose()
        finally:
            await self.lifecycle.aclose()

    async def __aenter__(self) -> IntelService:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()
