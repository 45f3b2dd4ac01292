"""Protocol errors, split h11-style by *who* broke the protocol.

A :class:`RemoteProtocolError` means the bytes we received are not valid LSP framing or JSON-RPC: the
peer is at fault and the stream cannot be trusted any further. A :class:`LocalProtocolError` means we
were about to send something the protocol (or our limits) forbids: our caller is at fault. Oversized
frames get their own branch, :class:`FrameTooLarge`, in both directions, because a bridge answers them
with a dedicated close code instead of a generic protocol failure.

Messages never quote message bodies: they may hold source text or tokens.
"""

from __future__ import annotations

from kandev_lsp.errors import KandevLspError


class ProtocolError(KandevLspError):
    """Base class for LSP framing and JSON-RPC errors."""


class RemoteProtocolError(ProtocolError):
    """The peer sent bytes that break the LSP base protocol; the stream cannot be resynchronised."""


class LocalProtocolError(ProtocolError):
    """We were asked to send something the protocol or the configured limits forbid."""


class FrameTooLarge(ProtocolError):
    """A frame (a header line, the header block or the body) exceeds a configured limit.

    Catch this class to map oversized frames from either direction to one close code; catch the
    direction-specific subclasses when the direction matters.

    :ivar part: which limit was exceeded: ``"header line"``, ``"headers"`` or ``"body"``.
    :ivar limit: the limit in bytes.
    :ivar size: the size in bytes that was announced or already seen (a lower bound when the part is
        still incomplete).
    """

    def __init__(self, message: str, *, part: str, limit: int, size: int) -> None:
        self.part = part
        self.limit = limit
        self.size = size
        super().__init__(message)


class ReceivedFrameTooLarge(FrameTooLarge, RemoteProtocolError):
    """The peer sent or announced a frame larger than our limits; it was rejected before buffering it."""


class FrameTooLargeToSend(FrameTooLarge, LocalProtocolError):
    """We were asked to encode a body larger than the body limit."""


class MalformedHeader(RemoteProtocolError):
    """A header line is not ``Name: value`` ASCII, or ``Content-Length`` is missing or invalid."""


class TruncatedFrame(RemoteProtocolError):
    """The stream ended in the middle of a frame."""


class MalformedMessage(RemoteProtocolError):
    """A frame body is not a JSON-RPC message: invalid UTF-8, invalid JSON, or not a valid object."""
