"""The broker's side of a task host's stream: the URL it asks for and the connection it opens (K11.4).

Both modes connect the same way (a lease's upstream, or a proxied client's): to the execution's stream
URL with the execution's token, asking only for the client's language and install choice (the lease
hint and a page ticket never leave the broker). A connection that cannot be made is logged with the
exception's type only: its text may hold the URL.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from urllib.parse import urlencode

from kandev_lsp.broker.contract import BrokerQuery
from kandev_lsp.broker.directory import Execution
from kandev_lsp.session import log_event
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidHandshake, InvalidURI

__all__ = ["UpstreamOptions", "connect_upstream", "upstream_url"]

log = logging.getLogger("kandev_lsp.broker")


@dataclass(frozen=True, slots=True)
class UpstreamOptions:
    """How an upstream connection is opened and kept."""

    #: Connecting to the execution's serve, the WebSocket handshake included.
    connect_timeout: float = 10.0
    max_message: int = 16 * 1024 * 1024
    ping_interval: float | None = 20.0
    close_timeout: float = 5.0
    #: Messages websockets buffers before it stops reading the socket (16 is the library's default).
    max_queue: int = 16


def upstream_url(execution: Execution, query: BrokerQuery) -> str:
    """serve's stream URL for this client: its language and install choice, nothing else."""
    separator = "&" if "?" in execution.stream_url else "?"
    params = {"language": query.language, "autoInstall": "1" if query.auto_install else "0"}
    return f"{execution.stream_url}{separator}{urlencode(params)}"


async def connect_upstream(
    execution: Execution, query: BrokerQuery, options: UpstreamOptions
) -> ClientConnection | None:
    """The upstream connection, or ``None`` (logged ``upstream_unavailable``) when it cannot be made."""
    try:
        async with asyncio.timeout(options.connect_timeout):
            return await connect(
                upstream_url(execution, query),
                additional_headers={"Authorization": f"Bearer {execution.token}"},
                max_size=options.max_message,
                compression=None,
                ping_interval=options.ping_interval,
                close_timeout=options.close_timeout,
                open_timeout=None,
                max_queue=options.max_queue,
            )
    except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
        log_event(log, "upstream_unavailable", logging.WARNING, error=type(exc).__name__)
        return None
