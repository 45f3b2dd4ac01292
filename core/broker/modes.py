"""What the route needs from a mode: the one small interface between ``BrokerServer`` and the two ways
it carries clients (issue 18, the house).

With browser continuity off the route is a plain authenticated proxy
(:class:`~kandev_lsp.broker.proxy_mode.ProxyMode`); with it on, clients are attached to leases
(:class:`~kandev_lsp.broker.lease_mode.LeaseMode`). The route checks a request, resolves its execution
and hands the client over; everything after that, and the reclaim integration (K13), is the mode's. The
route imports this module and the modes; the modes never import the route.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from kandev_lsp.broker.contract import BrokerQuery
from kandev_lsp.broker.directory import Execution
from kandev_lsp.broker.leases import LeaseCounts, ReclaimTicket, ReleaseReason
from websockets.asyncio.server import ServerConnection

__all__ = ["BrokerMode"]


class BrokerMode(Protocol):
    """Carries the clients of one broker, and answers for their executions (K13)."""

    #: Whether executions replaced in or removed from the directory end this mode's work (K12.6): the
    #: route then watches the directory and calls :meth:`executions_gone`.
    follows_directory: bool

    def counts(self) -> LeaseCounts:
        """What ``/metrics`` shows (K19.3)."""
        ...

    async def serve_client(
        self, websocket: ServerConnection, execution: Execution, query: BrokerQuery, owner: str
    ) -> None:
        """Carry one authorized client of ``execution`` until it leaves or its server ends."""
        ...

    def is_pinned(self, execution: str) -> bool:
        """Whether a reclaim of ``execution`` would cut a client or a lease off (K13.1)."""
        ...

    def begin_reclaim(self, execution: str) -> ReclaimTicket | None:
        """Fence ``execution`` (``None`` while it is pinned); admission onto it is then refused (K13.3)."""
        ...

    def confirm_reclaim(self, ticket: ReclaimTicket) -> bool:
        """The recheck just before cleanup."""
        ...

    def end_reclaim(self, ticket: ReclaimTicket) -> None:
        """Drop the fence; a stale ticket does nothing."""
        ...

    async def close_execution(self, execution: str, reason: ReleaseReason) -> int:
        """Explicit task stop (K13.4): close everything of ``execution``; how many were closed."""
        ...

    def executions_gone(self, executions: Iterable[str]) -> None:
        """These executions were replaced in or removed from the directory (K12.6)."""
        ...

    async def aclose(self) -> None:
        """The broker is stopping: end everything (``backend_stop``, K12.21)."""
        ...
