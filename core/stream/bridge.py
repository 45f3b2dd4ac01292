"""One client connected to one :class:`~kandev_lsp.session.ServerSession`, until either side ends.

The bridge is transport-neutral: a :class:`ClientChannel` hands it the client's message bodies and
sends the server's. The WebSocket stream and the stdio ``run`` command each provide a channel and map
the :class:`BridgeEnd` to a close code or an exit status. Four tasks run side by side:

* server -> client: the bridge's attachment to the session. While the client keeps up, the session's
  reader writes each message to the client itself (the channel's non-waiting ``send_now``: no task
  switch per message); what cannot be written at once is queued (bounded) and sent by this task, and a
  write that waits longer than ``client_write_timeout`` ends the bridge (a watch task checks it). The
  session's reader never waits for the client either way (K15.11);
* client -> server: every client message goes to :meth:`ServerSession.send` (stdin cut-off included);
* exit watch: when the server process exits, its remaining output is forwarded for up to
  ``exit_drain_timeout``, then the bridge ends even if a grandchild still holds the pipe open;
* write watch: the client write deadline above.

The first task to finish decides the outcome; the others are cancelled. The session is not closed
here: the caller does that (it may want the outcome first, e.g. to pick a close code).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable
from enum import StrEnum
from typing import Protocol

from kandev_lsp._values import dataclass
from kandev_lsp.protocol.errors import FrameTooLarge, ProtocolError
from kandev_lsp.session import ClientTooSlow, ServerGone, ServerSession, StdinStalled


class ClientGone(Exception):
    """The client disconnected; raised by a channel's ``send``."""


class StopRequested(Exception):
    """The client asked for the server to be stopped (the stream's ``{"control":"stop"}`` frame); raised
    by a channel's ``messages()``. The bridge ends with :attr:`BridgeEnd.STOP_REQUESTED`; the caller
    stops the server gracefully and reaps its tree before it answers."""


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

    # Optional: ``send_now(body) -> bool``, the same send without waiting: True when written (or held
    # for ``flush_now()``), False when it would have to wait (the body is then sent with ``send``); raises
    # as ``send`` does. A channel that has it lets the session's reader write the server's messages
    # itself while the client keeps up (:meth:`kandev_lsp.session.Attachment.write_directly`): no task
    # switch per message; ``flush_now()`` (optional too) writes what is held, once per read.


class BridgeEnd(StrEnum):
    """Why a bridge ended."""

    CLIENT_CLOSED = "client_closed"
    STOP_REQUESTED = "stop_requested"
    CLIENT_TOO_LARGE = "client_message_too_large"
    CLIENT_MALFORMED = "client_input_malformed"
    CLIENT_STALLED = "client_stalled"
    SERVER_EXITED = "server_exited"
    SERVER_TOO_LARGE = "server_message_too_large"
    SERVER_MALFORMED = "server_output_malformed"
    SERVER_STALLED = "server_stdin_stalled"


_Outcome = tuple[BridgeEnd, str]


@dataclass(frozen=True, slots=True)
class BridgeResult:
    """How a bridge ended: the outcome, a one-line detail for logs, and message counts."""

    end: BridgeEnd
    detail: str = ""
    to_server: int = 0
    to_client: int = 0


class _Progress:
    """Message counts, and since when a write to the client has been waiting (None: no write pending).

    A per-message ``asyncio.timeout`` costs a timer-heap insertion and removal for every message; the
    write deadline is instead checked by :func:`_write_watch`, which wakes a few times per deadline.
    """

    __slots__ = ("sending_since", "to_client", "to_server")

    def __init__(self) -> None:
        self.to_server = 0
        self.to_client = 0
        self.sending_since: float | None = None


async def _server_to_client(session: ServerSession, client: ClientChannel, progress: _Progress) -> _Outcome:
    clock = asyncio.get_running_loop().time
    attachment = session.attach()
    send_now: Callable[[bytes], bool] | None = getattr(client, "send_now", None)
    if send_now is not None:

        def write(body: bytes) -> bool:
            if send_now(body):
                progress.to_client += 1
                return True
            return False

        # While this task waits with nothing queued, the session's reader writes each message itself:
        # no task switch per message. Whatever cannot be written at once is queued and sent below.
        attachment.write_directly(write, getattr(client, "flush_now", None))
    messages = attachment.messages()
    try:
        async with contextlib.aclosing(messages):
            async for body in messages:
                progress.sending_since = clock()
                await client.send(body)
                progress.sending_since = None
                progress.to_client += 1
    except ClientGone:
        return BridgeEnd.CLIENT_CLOSED, "the client disconnected"
    except ClientTooSlow as exc:  # the reader never waits for a client (K15.11); this one fell behind
        return BridgeEnd.CLIENT_STALLED, str(exc)
    except FrameTooLarge as exc:
        return BridgeEnd.SERVER_TOO_LARGE, _first_line(exc)
    except ProtocolError as exc:
        return BridgeEnd.SERVER_MALFORMED, _first_line(exc)
    return BridgeEnd.SERVER_EXITED, "the server closed its output"


async def _write_watch(deadline: float, progress: _Progress) -> _Outcome:
    """End the bridge when a write to the client has waited longer than ``deadline`` seconds."""
    clock = asyncio.get_running_loop().time
    interval = deadline / 5
    while True:
        await asyncio.sleep(interval)
        since = progress.sending_since
        if since is not None and clock() - since >= deadline:
            return BridgeEnd.CLIENT_STALLED, f"a write to the client missed its {deadline:g} s deadline"


async def _client_to_server(session: ServerSession, client: ClientChannel, progress: _Progress) -> _Outcome:
    messages = client.messages()
    try:
        async with contextlib.aclosing(messages):
            async for body in messages:
                await session.send(body)
                progress.to_server += 1
    except FrameTooLarge as exc:
        return BridgeEnd.CLIENT_TOO_LARGE, _first_line(exc)
    except ProtocolError as exc:
        return BridgeEnd.CLIENT_MALFORMED, _first_line(exc)
    except StopRequested:
        return BridgeEnd.STOP_REQUESTED, "the client asked to stop the server"
    except StdinStalled as exc:
        return BridgeEnd.SERVER_STALLED, str(exc)
    except ServerGone as exc:
        return BridgeEnd.SERVER_EXITED, str(exc)
    return BridgeEnd.CLIENT_CLOSED, "the client closed the connection"


async def _exit_watch(session: ServerSession, output: asyncio.Task[_Outcome]) -> _Outcome:
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
    progress = _Progress()
    output = asyncio.ensure_future(_server_to_client(session, client, progress))
    tasks = {
        output,
        asyncio.ensure_future(_client_to_server(session, client, progress)),
        asyncio.ensure_future(_exit_watch(session, output)),
        asyncio.ensure_future(_write_watch(session.limits.client_write_timeout, progress)),
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
    return BridgeResult(end, detail, progress.to_server, progress.to_client)
