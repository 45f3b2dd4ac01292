"""The MCP server's stdio on the event loop: no worker thread per message (issue 9: a call must be fast).

The SDK's ``stdio_server`` reads each line, and writes and flushes each message, through anyio's worker
threads: three thread hand-offs per tool call. ``bench/mcp_bench.py`` calls two sessions in turn, one per
transport: on the 2-core machines CI runs on, an MCP ``ping`` (the SDK's round trip with nothing behind
it) took 2.22 ms on the event loop against 3.65 ms through the threads (0.61x), and 1.86 against 2.67 ms
(0.70x) in the same run's second project; tool calls save about the same.

:func:`event_loop_stdio` hands ``stdio_server`` a line reader and a writer on asyncio's pipe transports,
after doing what the SDK does when it opens stdio itself: the wire moves to private descriptors, fd 0
then reads the null device and fd 1 writes to stderr, so stray output (a library's ``print``, a child
that inherits fd 1) cannot corrupt the stream; both are put back on exit.

Only for pipes or sockets on POSIX (what an MCP client gives its server: Node's child processes get a
socket per stream). A terminal is left to the SDK's transport: the event loop makes the descriptor
non-blocking, which a terminal shares with the shell. A regular file cannot be watched by the loop at all,
and one socket for both stdin and stdout would look closed to the loop's writer at the client's next
message. These take the SDK's own path, as does ``--stdio sdk``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Final

if sys.platform != "win32":
    import fcntl

__all__ = ["MAX_MESSAGE_BYTES", "WireLines", "WireWriter", "event_loop_stdio", "loop_can_serve"]

log = logging.getLogger("kandev_lsp.mcp")

#: A message from the client longer than this is dropped (with a warning) instead of buffered: the SDK
#: reads lines without a bound. The largest real request is a ``code_replace`` body: far below it.
MAX_MESSAGE_BYTES: Final = 64 * 1024 * 1024


def loop_can_serve(fd: int) -> bool:
    """Whether ``fd`` is a pipe or a socket the event loop can serve (POSIX only)."""
    if sys.platform == "win32":
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _one_socket(first: int, second: int) -> bool:
    """Whether two descriptors are one socket (a client that gave stdin and stdout the same socket). The
    loop's write transport watches its descriptor for reads to notice the peer closing: on a shared
    socket that would be the client's next message, taken for a close."""
    try:
        one, other = os.fstat(first), os.fstat(second)
    except OSError:
        return False
    return stat.S_ISSOCK(one.st_mode) and (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino)


class WireLines:
    """The client's messages, one line each, as ``stdio_server`` reads them (``async for line in ...``).

    A line over ``limit`` bytes (the reader's own limit: :data:`MAX_MESSAGE_BYTES` on the wire) is dropped
    whole, the rest of it skipped as it arrives, and logged; the next line is read as usual. The SDK drops
    a malformed line the same way.
    """

    def __init__(self, reader: asyncio.StreamReader, limit: int) -> None:
        self._reader = reader
        self._limit = limit

    def __aiter__(self) -> WireLines:
        return self

    async def __anext__(self) -> str:
        skipping = False
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as end:  # the client closed stdin
                if end.partial and not skipping:
                    return end.partial.decode("utf-8", errors="replace")
                raise StopAsyncIteration from None
            except asyncio.LimitOverrunError as over:  # drop what is buffered of the line, then its rest
                await self._reader.readexactly(over.consumed)
                skipping = True
                continue
            if not skipping:
                return line.decode("utf-8", errors="replace")
            skipping = False
            log.warning(
                "dropped a message from the MCP client longer than kandev-lsp's bound (%d bytes)", self._limit
            )


class WireWriter:
    """The server's side of the wire as ``stdio_server`` writes it (``write``, then ``flush``)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()  # waits only when the client is not reading


@contextlib.contextmanager
def claimed_stdio() -> Iterator[tuple[int, int]]:
    """The wire's descriptors (stdin's, stdout's), private to the caller while it runs: fd 0 reads the
    null device and fd 1 writes to stderr meanwhile. Both are put back, blocking again, on exit."""
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        os.close(wire_in)
        raise
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        try:
            os.dup2(2, 1)
        except OSError:  # no stderr: stray output goes nowhere
            sink = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(sink, 1)
            finally:
                os.close(sink)
        yield wire_in, wire_out
    finally:
        for private, standard in ((wire_in, 0), (wire_out, 1)):
            with contextlib.suppress(OSError):
                os.set_blocking(private, True)  # the loop made it non-blocking
                os.dup2(private, standard)
            os.close(private)


@contextlib.asynccontextmanager
async def event_loop_stdio() -> AsyncIterator[tuple[WireLines, WireWriter] | None]:
    """Streams for ``stdio_server(stdin, stdout)`` on the event loop's pipe transports, or None when
    stdin or stdout is not a pipe or socket on POSIX (the caller then lets the SDK open stdio itself)."""
    if not (loop_can_serve(0) and loop_can_serve(1)):
        log.info("stdio served by the MCP SDK's transport (stdin or stdout is not a pipe or socket)")
        yield None
        return
    if _one_socket(0, 1):
        log.info("stdio served by the MCP SDK's transport (stdin and stdout are one socket)")
        yield None
        return
    loop = asyncio.get_running_loop()
    with contextlib.ExitStack() as claim:
        try:
            wire_in, wire_out = claim.enter_context(claimed_stdio())
        except OSError as error:  # out of descriptors, say: the SDK's transport still works
            log.warning("stdio served by the MCP SDK's transport (could not claim stdio: %s)", error.strerror)
            yield None
            return
        log.info("stdio served on the event loop")
        reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0, closefd=False)
        )
        write_transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0, closefd=False)
        )
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        try:
            yield WireLines(reader, MAX_MESSAGE_BYTES), WireWriter(writer)
        finally:
            read_transport.close()
            write_transport.close()
