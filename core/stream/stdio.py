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
from collections.abc import AsyncGenerator
from typing import BinaryIO

from kandev_lsp.errors import KandevLspError
from kandev_lsp.protocol import encode_header
from kandev_lsp.session import BridgeLimits, read_frames
from kandev_lsp.stream.bridge import ClientGone


class StdioChannel:
    """The editor side of ``kandev-lsp run``: frames on ``reader`` in, frames on ``writer`` out."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, limits: BridgeLimits
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._limits = limits

    def messages(self) -> AsyncGenerator[bytes, None]:
        return read_frames(
            self._reader, self._limits.frame, peer="editor stdin", chunk=self._limits.read_chunk
        )

    async def send(self, body: bytes) -> None:
        if self._writer.is_closing():
            raise ClientGone
        header = encode_header(len(body), self._limits.frame)
        if len(body) < 64 * 1024:
            self._writer.write(header + body)
        else:
            self._writer.write(header)
            self._writer.write(body)
        try:
            await self._writer.drain()
        except (ConnectionError, RuntimeError):
            raise ClientGone from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.close()


class StdioUnavailable(KandevLspError):
    """stdin or stdout is not a pipe, socket or terminal (e.g. redirected to a regular file)."""


def _not_a_pipe(name: str) -> StdioUnavailable:
    return StdioUnavailable(
        f"kandev-lsp run needs its {name} to be a pipe (as editors start language servers); it is a "
        "regular file here. Start it from an editor, or pipe the input through `cat`."
    )


async def _connect_reader(stream: BinaryIO) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**20)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stream)
    except ValueError:  # epoll refuses regular files
        raise _not_a_pipe("stdin") from None
    return reader


async def _connect_writer(stream: BinaryIO) -> asyncio.StreamWriter:
    loop = asyncio.get_running_loop()
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stream)
    except ValueError:
        raise _not_a_pipe("stdout") from None
    return asyncio.StreamWriter(transport, protocol, None, loop)


async def open_stdio(limits: BridgeLimits) -> StdioChannel:
    """The process's own stdin and stdout as a channel (stdout must carry nothing else from now on)."""
    reader = await _connect_reader(sys.stdin.buffer)
    writer = await _connect_writer(sys.stdout.buffer)
    return StdioChannel(reader, writer, limits)
