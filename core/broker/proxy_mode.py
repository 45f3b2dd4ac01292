"""Proxy mode (browser continuity off, K11.6, K18.2): a plain authenticated proxy, one upstream per client.

Frames are relayed both ways unchanged (text stays text, binary stays binary), the upstream's close code
is forwarded except codes no close frame may carry (4009, K16.5), and the client's departure closes the
upstream (which makes serve stop the server). Capacity is a count of open proxied connections (4005 when
full); each open connection pins its execution for the reclaim integration (K13.1), with the same fence
rule as lease mode (:class:`~kandev_lsp.broker.leases.ReclaimFences`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from kandev_lsp.broker.closecodes import CLOSE_REASONS, BrokerCloseCode, proxy_close_for_upstream
from kandev_lsp.broker.contract import BrokerQuery
from kandev_lsp.broker.directory import Execution
from kandev_lsp.broker.leases import LeaseCounts, ReclaimFences, ReclaimTicket, ReleaseReason
from kandev_lsp.broker.upstream import UpstreamOptions, connect_upstream
from kandev_lsp.session import log_event
from kandev_lsp.stream.websocket import close_within
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

__all__ = ["ProxyConfig", "ProxyMode"]

log = logging.getLogger("kandev_lsp.broker")


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    capacity: int
    #: Each write to a client or to the upstream; a peer that stops reading is cut off after it.
    write_timeout: float = 5.0
    close_timeout: float = 5.0
    upstream: UpstreamOptions = field(default_factory=UpstreamOptions)


class ProxyMode:
    """The open proxied connections of one broker (a :class:`~kandev_lsp.broker.modes.BrokerMode`)."""

    #: A proxied connection is the client's own: the directory changing under it is serve's business.
    follows_directory = False

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self._open = 0
        #: The open proxied clients by execution (each pins it, K13.1) and when each is done.
        self._proxies: dict[str, set[ServerConnection]] = {}
        self._done: dict[ServerConnection, asyncio.Event] = {}
        self._fences = ReclaimFences()

    def counts(self) -> LeaseCounts:
        # No leases: each proxied connection holds a slot while it is open.
        return LeaseCounts(self._open, 0, self.config.capacity, 0, dict.fromkeys(ReleaseReason, 0))

    # --- reclaim integration (K13) -----------------------------------------------------------------

    def is_pinned(self, execution: str) -> bool:
        return bool(self._proxies.get(execution))

    def begin_reclaim(self, execution: str) -> ReclaimTicket | None:
        return self._fences.begin(execution, pinned=self.is_pinned(execution))

    def confirm_reclaim(self, ticket: ReclaimTicket) -> bool:
        return self._fences.confirm(ticket, pinned=self.is_pinned(ticket.execution))

    def end_reclaim(self, ticket: ReclaimTicket) -> None:
        self._fences.end(ticket)

    async def close_execution(self, execution: str, reason: ReleaseReason) -> int:
        """Close the execution's proxied clients with 4002 and wait until their upstreams are closed
        (serve then stops each server)."""
        clients = list(self._proxies.get(execution, ()))
        done = [self._done[client] for client in clients if client in self._done]
        for client in clients:
            await self._close(client, BrokerCloseCode.SESSION_UNAVAILABLE)
        if done:
            waits = [asyncio.ensure_future(event.wait()) for event in done]
            await asyncio.wait(waits, timeout=self.config.close_timeout + self.config.write_timeout + 2)
            for waiting in waits:
                waiting.cancel()
        log_event(log, "execution_closed", reason=reason.value, connections=len(clients))
        return len(clients)

    def executions_gone(self, executions: Iterable[str]) -> None:
        """Nothing to do: see :attr:`follows_directory`."""

    async def aclose(self) -> None:
        """Nothing of its own to stop: the listener's close (1001) ends every relay, and each upstream
        is then closed."""

    # --- a client ----------------------------------------------------------------------------------

    async def serve_client(
        self, websocket: ServerConnection, execution: Execution, query: BrokerQuery, owner: str = ""
    ) -> None:
        if self._fences.held(execution.id):  # being reclaimed: nothing may start on it (K13.3)
            log_event(
                log, "connection_refused", logging.WARNING, code=int(BrokerCloseCode.SESSION_UNAVAILABLE)
            )
            await self._close(websocket, BrokerCloseCode.SESSION_UNAVAILABLE)
            return
        if self._open >= self.config.capacity:
            log_event(log, "connection_refused", logging.WARNING, code=int(BrokerCloseCode.CAPACITY))
            await self._close(websocket, BrokerCloseCode.CAPACITY)
            return
        self._open += 1
        pins = self._proxies.setdefault(execution.id, set())
        pins.add(websocket)
        self._done[websocket] = done = asyncio.Event()
        try:
            await self._proxy(websocket, execution, query)
        finally:
            self._open -= 1
            pins.discard(websocket)
            if not pins and self._proxies.get(execution.id) is pins:
                del self._proxies[execution.id]
            del self._done[websocket]
            done.set()

    async def _close(self, client: ServerConnection, code: int, reason: str | None = None) -> None:
        text = CLOSE_REASONS.get(code, "") if reason is None else reason
        await close_within(client, code, text, self.config.write_timeout)

    async def _proxy(self, client: ServerConnection, execution: Execution, query: BrokerQuery) -> None:
        upstream = await connect_upstream(execution, query, self.config.upstream)
        if upstream is None:
            await self._close(client, BrokerCloseCode.SESSION_UNAVAILABLE)
            return
        log_event(log, "proxy_open", language=query.language[:32], executor=execution.executor)
        to_upstream = asyncio.create_task(self._relay(client, upstream))
        to_client = asyncio.create_task(self._relay(upstream, client))
        try:
            await asyncio.wait({to_upstream, to_client}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (to_upstream, to_client):
                task.cancel()
            results = await asyncio.gather(to_upstream, to_client, return_exceptions=True)
        stalled = any(result is False for result in results)
        if client.state in (State.CLOSING, State.CLOSED):
            # The client left: closing the upstream makes serve stop the server.
            await close_within(upstream, 1000, "", self.config.write_timeout)
        elif stalled:
            # A peer stopped reading for the write deadline: a transport failure (K16.4).
            await close_within(upstream, 1000, "", self.config.write_timeout)
            await self._close(client, BrokerCloseCode.CONNECTION_FAILED)
        else:
            # The upstream ended: forward its verdict, normalized (K16.5).
            try:
                async with asyncio.timeout(self.config.close_timeout):
                    await upstream.wait_closed()
            except TimeoutError:
                pass
            code = proxy_close_for_upstream(upstream.close_code)
            await self._close(client, code, upstream.close_reason if code == upstream.close_code else None)
        log_event(
            log,
            "proxy_close",
            language=query.language[:32],
            code=client.close_code,
            upstream=upstream.close_code,
            stalled=int(stalled),
        )

    async def _relay(
        self, source: ServerConnection | ClientConnection, sink: ServerConnection | ClientConnection
    ) -> bool:
        """Copy messages until ``source`` closes (True) or a write to ``sink`` misses its deadline (False).
        A closed ``sink`` also ends the relay (True): the other direction reports why."""
        try:
            async for message in source:
                async with asyncio.timeout(self.config.write_timeout):
                    await sink.send(message)
        except TimeoutError:
            return False
        except ConnectionClosed:
            pass
        return True
