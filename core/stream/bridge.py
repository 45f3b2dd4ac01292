"""One client connected to one :class:`~kandev_lsp.session.ServerSession`, until either side ends.

The bridge is transport-neutral: a :class:`ClientChannel` hands it the client's message bodies and
sends the server's. The WebSocket stream and the stdio ``run`` command each provide a channel and map
the :class:`BridgeEnd` to a close code or an exit status. Three tasks run side by side:

* server -> client: every message the session yields is sent with a ``client_write_timeout`` deadline,
  so a client that stops reading never wedges the server's stdout reader for longer than that;
* client -> server: every client message goes to :meth:`ServerSession.send` (stdin cut-off included);
* exit watch: when the server process exits, its remaining output is forwarded for up to
  ``exit_drain_timeout``, then the bridge ends even if a grandchild still holds the pipe open.

The first task to finish decides the outcome; the others are cancelled. The session is not closed
here: the caller does that (it may want the outcome first, e.g. to pick a close code).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from kandev_lsp.protocol.errors import FrameTooLarge, ProtocolError
from kandev_lsp.session import ServerGone, ServerSession, StdinStalled


class ClientGone(Exception):
    """The client disconnected; raised by a channel's ``send``."""


class ClientChannel(Protocol):
    """The client side of a bridge."""

    def messages(self) -> AsyncGenerator[bytes, None]:
        """The client's message bodies, until it disconnects.

        Raises :class:`~kandev_lsp.protocol.FrameTooLarge` for a message over the limit and
        :class:`~kandev_lsp.protocol.RemoteProtocolError` for malformed input.
        """
        ...

    async def send(self, body: bytes) -> None:
        """Send one of the server's message bodies; raise :class:`ClientGone` when disconnected, and
        :class:`~kandev_lsp.protocol.ProtocolError` when the body cannot be carried (e.g. not UTF-8)."""
        ...


class BridgeEnd(StrEnum):
    """Why a bridge ended."""

    CLIENT_CLOSED = "client_closed"
    CLIENT_TOO_LARGE = "client_message_too_large"
    CLIENT_MALFORMED = "client_input_malformed"
    CLIENT_STALLED = "client_stalled"
    SERVER_EXITED = "server_exited"
    SERVER_TOO_LARGE = "server_message_too_large"
    SERVER_MALFORMED = "server_output_malformed"
    SERVER_STALLED = "server_stdin_stalled"


@dataclass(frozen=True, slots=True)
class BridgeResult:
    """How a bridge ended: the outcome, a one-line detail for logs, and message counts."""

    end: BridgeEnd
    detail: str = ""
    to_server: int = 0
    to_client: int = 0


class _Counts:
    __slots__ = ("to_client", "to_server")

    def __init__(self) -> None:
        self.to_server = 0
        self.to_client = 0


async def _server_to_client(
    session: ServerSession, client: ClientChannel, counts: _Counts
) -> tuple[BridgeEnd, str]:
    deadline = session.limits.client_write_timeout
    messages = session.messages()
    try:
        async with contextlib.aclosing(messages):
            async for body in messages:
                try:
                    async with asyncio.timeout(deadline):
                        await client.send(body)
                except TimeoutError:
                    return (
                        BridgeEnd.CLIENT_STALLED,
                        f"a write to the client missed its {deadline:g} s deadline",
                    )
                counts.to_client += 1
    except ClientGone:
        return BridgeEnd.CLIENT_CLOSED, "the client disconnected"
    except FrameTooLarge as exc:
        return BridgeEnd.SERVER_TOO_LARGE, _first_line(exc)
    except ProtocolError as exc:
        return BridgeEnd.SERVER_MALFORMED, _first_line(exc)
    return BridgeEnd.SERVER_EXITED, "the server closed its output"


async def _client_to_server(
    session: ServerSession, client: ClientChannel, counts: _Counts
) -> tuple[BridgeEnd, str]:
    messages = client.messages()
    try:
        async with contextlib.aclosing(messages):
            async for body in messages:
                await session.send(body)
                counts.to_server += 1
    except FrameTooLarge as exc:
        return BridgeEnd.CLIENT_TOO_LARGE, _first_line(exc)
    except ProtocolError as exc:
        return BridgeEnd.CLIENT_MALFORMED, _first_line(exc)
    except StdinStalled as exc:
        return BridgeEnd.SERVER_STALLED, str(exc)
    except ServerGone as exc:
        return BridgeEnd.SERVER_EXITED, str(exc)
    return BridgeEnd.CLIENT_CLOSED, "the client closed the connection"


async def _exit_watch(
    session: ServerSession, output: asyncio.Task[tuple[BridgeEnd, str]]
) -> tuple[BridgeEnd, str]:
    status = await session.wait()
    # Let the server's last messages through (a final response, a log message) before ending.
    done, _ = await asyncio.wait({output}, timeout=session.limits.exit_drain_timeout)
    if done and output.result()[0] is not BridgeEnd.SERVER_EXITED:
        return output.result()
    return BridgeEnd.SERVER_EXITED, f"the server exited with status {status}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


async def bridge(session: ServerSession, client: ClientChannel) -> BridgeResult:
    """Carry messages both ways until the client or the server ends; return why it ended.

    The session stays open; close it with :meth:`ServerSession.aclose`.
    """
    counts = _Counts()
    output = asyncio.ensure_future(_server_to_client(session, client, counts))
    tasks = {
        output,
        asyncio.ensure_future(_client_to_server(session, client, counts)),
        asyncio.ensure_future(_exit_watch(session, output)),
    }
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        first = next(iter(done))
        if output in done:
            first = output  # when several end together, the server's side explains it best
        end, detail = first.result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return BridgeResult(end, detail, counts.to_server, counts.to_client)
