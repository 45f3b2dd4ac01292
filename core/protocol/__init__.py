"""Sans-io LSP framing: bytes in, message bodies out; bodies in, bytes out.

Nothing here reads or writes a socket or a pipe, so the stdio bridge, the WebSocket bridge and the
tests share one implementation of the base protocol. JSON-RPC helpers live in
:mod:`kandev_lsp.protocol.jsonrpc`.
"""

from __future__ import annotations

from kandev_lsp.protocol.errors import (
    FrameTooLarge,
    FrameTooLargeToSend,
    LocalProtocolError,
    MalformedHeader,
    MalformedMessage,
    ProtocolError,
    ReceivedFrameTooLarge,
    RemoteProtocolError,
    TruncatedFrame,
)
from kandev_lsp.protocol.framing import (
    DEFAULT_LIMITS,
    NEED_DATA,
    FrameDecoder,
    FrameLimits,
    NeedData,
    encode_frame,
    encode_header,
)

__all__ = [
    "DEFAULT_LIMITS",
    "NEED_DATA",
    "FrameDecoder",
    "FrameLimits",
    "FrameTooLarge",
    "FrameTooLargeToSend",
    "LocalProtocolError",
    "MalformedHeader",
    "MalformedMessage",
    "NeedData",
    "ProtocolError",
    "ReceivedFrameTooLarge",
    "RemoteProtocolError",
    "TruncatedFrame",
    "encode_frame",
    "encode_header",
]
