"""The editor's stdin/stdout as a :class:`~kandev_lsp.stream.bridge.ClientChannel`, for ``kandev-lsp run``.

Frames from the editor are decoded with the same pump and limits as the server's output
(:func:`~kandev_lsp.session.read_frames`), so malformed or oversized input is caught here instead of
being passed on; each body is re-framed for the server, and the server's bodies are re-framed for the
editor. Nothing but LSP frames is ever written to stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncGenerator, Callable
from typing import BinaryIO

from kandev_lsp.errors import KandevLspError
from kandev_lsp.protocol import encode_header
from kandev_lsp.session import BridgeLimits, read_frames
from kandev_lsp.stream.bridge import ClientGone

#: Pieces are joined into one write up to this many bytes; a larger body is written as it is.
_JOIN_BELOW = 64 * 1024


class StdioChannel:
    """The editor side of ``kandev-lsp run``: frames on ``reader`` in, frames on ``writer`` out."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        limits: BridgeLimits,
        input_closed: asyncio.Event | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._limits = limits
        #: Set as soon as the editor's input ends (even with unread messages still buffered): ``run``
        #: watches it while it installs, before any frame is read.
        self.input_closed = input_closed if input_closed is not None else asyncio.Event()
        self._held: list[bytes] = []

    def messages(self) -> AsyncGenerator[bytes, None]:
        return read_frames(
            self._reader, self._limits.frame, peer="editor stdin", chunk=self._limits.read_chunk
        )

    async def send(self, body: bytes) -> None:
        self.flush_now()
        self._frame(body)
        self.flush_now()
        try:
            await self._writer.drain()
        except (ConnectionError, RuntimeError):
            raise ClientGone from None

    def send_now(self, body: bytes) -> bool:
        """Frame ``body`` for the editor if that needs no waiting: only while nothing is left unwritten
        from before (the editor keeps up); False otherwise (:meth:`send` then writes it and waits). The
        frame is written by the next :meth:`flush_now` (the session's reader calls it once the messages
        of one read are all framed: several messages, one write)."""
        if self._writer.transport.get_write_buffer_size():
            return False
        self._frame(body)
        return True

    def flush_now(self) -> None:
        """Write the framed pieces: joined while small (one system call), one write each otherwise."""
        held = self._held
        if not held:
            return
        self._held = []
        if len(held) > 1 and sum(map(len, held)) <= _JOIN_BELOW:
            self._writer.write(b"".join(held))
        else:
            for piece in held:
                self._writer.write(piece)

    def _frame(self, body: bytes) -> None:
        if self._writer.is_closing():
            raise ClientGone
        header = encode_header(len(body), self._limits.frame)
        if len(body) < _JOIN_BELOW:
            self._held.append(header + body)
        else:  # no copy of a large body
            self._held.append(header)
            self._held.append(body)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.flush_now()
            self._writer.close()


class StdioUnavailable(KandevLspError):
    """stdin or stdout is not a pipe, socket or terminal (e.g. redirected to a regular file)."""


def _not_a_pipe(name: str, what: str = "a regular file") -> StdioUnavailable:
    through_cat = (
        "`cat FILE | kandev-lsp run ...`" if name == "stdin" else "`kandev-lsp run ... | cat > FILE`"
    )
    return StdioUnavailable(
        f"kandev-lsp run needs its {name} to be a pipe (as editors start language servers); it is "
        f"{what} here. Start it from an editor, or put `cat` in between: {through_cat}."
    )


def _watchable(fd: int) -> bool:
    """Whether the event loop can watch ``fd`` for input. epoll refuses regular files and some devices
    (``/dev/null``) with EPERM, and asyncio's read transport would only report that later, from a callback
    (a traceback, and a reader that never ends: issue 17 item 3); so it is asked here first."""
    import selectors

    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, selectors.EVENT_READ)
        except (OSError, ValueError):
            return False
    return True


def _is_null_device(fd: int) -> bool:
    import os
    import stat

    try:
        info, null = os.fstat(fd), os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(info.st_mode) and info.st_rdev == null.st_rdev


def _ended_input() -> tuple[asyncio.StreamReader, asyncio.Event]:
    """An input that has already ended: what ``< /dev/null`` means (no message, then end of input)."""
    reader = asyncio.StreamReader()
    reader.feed_eof()
    closed = asyncio.Event()
    closed.set()
    return reader, closed


class _WatchedReaderProtocol(asyncio.StreamReaderProtocol):
    """A stream reader's protocol that also reports the end of its input (EOF or a broken pipe) at
    once, whatever is still buffered, without consuming anything."""

    def __init__(self, reader: asyncio.StreamReader, closed: asyncio.Event) -> None:
        super().__init__(reader)
        self._input_closed = closed

    def eof_received(self) -> bool:
        self._input_closed.set()
        return bool(super().eof_received())

    def connection_lost(self, exc: Exception | None) -> None:
        self._input_closed.set()
        super().connection_lost(exc)


_Input = tuple[asyncio.StreamReader, asyncio.Event, asyncio.BaseTransport | None]


async def _connect_reader(stream: BinaryIO) -> _Input:
    """The editor's input: its reader, the event set when it ends, and its transport (``None`` for the
    null device, which has ended already)."""
    fd = stream.fileno()
    if not _watchable(fd):
        if _is_null_device(fd):  # `run LANG < /dev/null`: end of input at once, as a closed pipe
            return (*_ended_input(), None)
        import os
        import stat

        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        raise _not_a_pipe("stdin", "a regular file" if regular else "a file the event loop cannot watch")
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**20)
    closed = asyncio.Event()
    try:
        transport, _ = await loop.connect_read_pipe(lambda: _WatchedReaderProtocol(reader, closed), stream)
    except ValueError:  # epoll refuses regular files
        raise _not_a_pipe("stdin") from None
    return reader, closed, transport


class _WatchedWriterProtocol(asyncio.streams.FlowControlMixin):
    """stdout's protocol, which calls ``on_lost`` when the pipe is gone.

    asyncio's write pipe transport watches a pipe for its reader closing (the editor quit, or read all it
    wanted: ``| head -c 10``) and reports it here at once, with or without a write pending. Without this
    hook nobody heard it until the server's next message failed to go out: a server that had nothing
    more to say kept ``run`` and itself running for as long as the editor's stdin stayed open."""

    def __init__(self, on_lost: Callable[[], None]) -> None:
        super().__init__()
        self._on_lost = on_lost

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._on_lost()


async def _connect_writer(stream: BinaryIO, on_lost: Callable[[], None]) -> asyncio.StreamWriter:
    loop = asyncio.get_running_loop()
    try:
        transport, protocol = await loop.connect_write_pipe(lambda: _WatchedWriterProtocol(on_lost), stream)
    except ValueError:
        raise _not_a_pipe("stdout") from None
    return asyncio.StreamWriter(transport, protocol, None, loop)


async def open_stdio(
    limits: BridgeLimits, *, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> StdioChannel:
    """The process's own stdin and stdout (or the given pipes) as a channel (stdout must carry nothing
    else from now on).

    The editor closing its end of stdout is the editor leaving, as closing stdin is: the input is closed
    with it, so the bridge ends as ``client_closed`` (and an install in progress is cancelled) whether or
    not the server writes again (docs/stream-contract.md, ``run``'s exit status)."""
    reader, closed, input_transport = await _connect_reader(stdin if stdin is not None else sys.stdin.buffer)

    def output_lost() -> None:
        if input_transport is not None:
            input_transport.close()  # the reader gets what is buffered, then its end (feed_eof)

    writer = await _connect_writer(stdout if stdout is not None else sys.stdout.buffer, output_lost)
    return StdioChannel(reader, writer, limits, closed)
