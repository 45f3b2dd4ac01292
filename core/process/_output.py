"""Bounded capture of a child's output, for error messages and progress.

Everything the child writes is accepted at once (the pipe is always drained, so a chatty child never
blocks on a full pipe), but at most ``limit`` bytes are kept: the **head** (the first quarter, where a
tool says what it was doing) and the **tail** (the rest, where it says why it failed), joined by a line
that says how many bytes were left out. Bytes are decoded as UTF-8 with replacement only when read.
"""

from __future__ import annotations

import codecs
import logging
from collections.abc import Callable

logger = logging.getLogger("kandev_lsp.process")

OutputCallback = Callable[[str], None]

#: Room kept for the omission line; it is shorter than this for any byte count below 10**30.
_MARKER_ROOM = 64


class OutputCapture:
    """The first and last bytes of a stream, at most ``limit`` bytes in all.

    ``on_output`` (optional) sees every chunk as text, in order, as it arrives, including the parts that
    are not kept. If it raises, it is not called again and the error is kept in :attr:`callback_error`
    for the owner to re-raise.
    """

    def __init__(self, limit: int, on_output: OutputCallback | None = None) -> None:
        if limit < 0:
            raise ValueError("output_limit must be >= 0")
        self.limit = limit
        self._head_cap = limit // 4
        self._tail_cap = limit - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        self._on_output = on_output
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.callback_error: BaseException | None = None

    @property
    def truncated(self) -> bool:
        """Whether some output was left out."""
        return self.total > self.limit

    def feed(self, data: bytes) -> None:
        """Take one chunk as it arrived; never blocks, never holds more than ``2 * limit`` bytes."""
        self.total += len(data)
        self._notify(self._decoder.decode(data))
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data or not self._tail_cap:
            return
        if len(data) >= self._tail_cap:
            self._tail[:] = data[-self._tail_cap :]
        else:
            self._tail += data
            if len(self._tail) > 2 * self._tail_cap:  # trim rarely: amortised O(1) per byte
                del self._tail[: -self._tail_cap]

    def finish(self) -> None:
        """The stream ended: hand a trailing incomplete character to the callback."""
        self._notify(self._decoder.decode(b"", final=True))

    def text(self) -> str:
        """The kept output: all of it when it fit, else head + an omission line + tail (<= limit bytes)."""
        if not self.truncated:
            return (bytes(self._head) + bytes(self._tail)).decode("utf-8", "replace")
        if self._tail_cap > 2 * _MARKER_ROOM:
            tail = bytes(self._tail[-(self._tail_cap - _MARKER_ROOM) :])
            omitted = self.total - len(self._head) - len(tail)
            marker = f"\n[... {omitted} bytes of output left out ...]\n".encode()
        else:  # too small a limit for a note: keep the bytes
            tail = bytes(self._tail[-self._tail_cap :]) if self._tail_cap else b""
            marker = b""
        return (bytes(self._head) + marker + tail).decode("utf-8", "replace")

    def _notify(self, text: str) -> None:
        if not text or self._on_output is None:
            return
        try:
            self._on_output(text)
        except Exception as exc:  # a callback bug must not break draining the pipe
            logger.debug("on_output callback failed; it will not be called again", exc_info=True)
            self.callback_error = exc
            self._on_output = None
