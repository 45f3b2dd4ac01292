"""LSP base-protocol framing without I/O: bytes in, frame bodies out; bodies in, bytes out.

A frame is a block of ASCII header lines, each ended by CRLF, an empty line, then exactly
``Content-Length`` bytes of body. The decoder never reads or writes anything itself: the caller feeds
whatever its transport produced (:meth:`FrameDecoder.receive_data`) and drains bodies
(:meth:`FrameDecoder.next_frame`) until :data:`NEED_DATA`. The same code then serves the stdio bridge,
the WebSocket bridge and the tests, which feed every case whole and byte by byte.

Limits are enforced before anything beyond them is buffered: an announced ``Content-Length`` over the
body limit is rejected as soon as its header block is complete, and a header line or block that can no
longer fit its limit is rejected as soon as the bytes seen prove it. Provided the caller drains the
decoder after each chunk, the bytes it keeps stay below ``headers_total + body`` plus one chunk.
"""

from __future__ import annotations

import re
from collections import deque
from enum import Enum
from typing import Final

from kandev_lsp._values import dataclass
from kandev_lsp.protocol.errors import (
    FrameTooLargeToSend,
    LocalProtocolError,
    MalformedHeader,
    ReceivedFrameTooLarge,
    RemoteProtocolError,
    TruncatedFrame,
)

__all__ = [
    "DEFAULT_LIMITS",
    "NEED_DATA",
    "FrameDecoder",
    "FrameLimits",
    "NeedData",
    "encode_frame",
    "encode_header",
]


class NeedData(Enum):
    """Type of the :data:`NEED_DATA` sentinel (an enum, so ``is NEED_DATA`` narrows for type checkers)."""

    NEED_DATA = "NEED_DATA"

    def __repr__(self) -> str:
        return "NEED_DATA"

    __str__ = __repr__


#: Returned by :meth:`FrameDecoder.next_frame` when no complete frame is buffered.
NEED_DATA: Final = NeedData.NEED_DATA


@dataclass(frozen=True, slots=True)
class FrameLimits:
    """Size limits of one frame, in bytes.

    :param header_line: longest header line, CRLF excluded.
    :param headers_total: longest header block, every CRLF and the blank line included.
    :param body: largest body (``Content-Length``).
    """

    header_line: int = 8 * 1024
    headers_total: int = 32 * 1024
    body: int = 16 * 1024 * 1024

    def __post_init__(self) -> None:
        for name in ("header_line", "headers_total", "body"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"FrameLimits.{name} must be a non-negative int, got {value!r}")
        # Refuse limits under which our own encoder's output would be rejected by our own decoder.
        longest_line = len(b"Content-Length: %d" % self.body)
        if self.header_line < longest_line or self.headers_total < longest_line + 4:
            raise ValueError(
                f"FrameLimits too small for bodies of {self.body} bytes: the header "
                f"'Content-Length: {self.body}' needs header_line >= {longest_line} and "
                f"headers_total >= {longest_line + 4}"
            )


DEFAULT_LIMITS: Final = FrameLimits()

# Body chunks at least this large are kept by reference; smaller ones are merged into bytearrays of up to
# _COALESCED_PART bytes, which bounds the per-chunk overhead when a peer trickles bytes.
_SMALL_PART: Final = 4096
_COALESCED_PART: Final = 65536
_CR: Final = 0x0D
# A header line may hold only visible ASCII, space and tab (RFC 9110 field syntax, no obs-text).
_INVALID_HEADER_BYTE: Final = re.compile(rb"[^\t\x20-\x7e]")
_CANONICAL_HEADERS: Final = re.compile(rb"Content-Length: ([0-9]{1,10})\r\n\r\n")
_TOKEN: Final = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTENT_LENGTH: Final = b"content-length"
_HINT: Final = (
    "The peer is not speaking the LSP base protocol ('Content-Length: N' headers, a blank line, then N "
    "bytes of JSON); a language server that prints logs to stdout, or a stream that lost bytes, causes "
    "this. The stream cannot be resynchronised: close it and restart the peer."
)


def encode_header(body_length: int, limits: FrameLimits = DEFAULT_LIMITS) -> bytes:
    """Return the header block for a body of ``body_length`` bytes.

    Separate from :func:`encode_frame` so a writer holding a large body can write the header and the
    body one after the other instead of copying the body into a new buffer.

    :raises FrameTooLargeToSend: the body is larger than ``limits.body``.
    """
    if body_length > limits.body:
        raise FrameTooLargeToSend(
            f"refusing to send a {body_length}-byte message: the limit is {limits.body} bytes "
            "(FrameLimits.body); the peer would reject it. Send a smaller message or raise the limit "
            "on both sides.",
            part="body",
            limit=limits.body,
            size=body_length,
        )
    if body_length < 0:
        raise LocalProtocolError(f"a body length cannot be negative, got {body_length}")
    return b"Content-Length: %d\r\n\r\n" % body_length


def encode_frame(body: bytes, limits: FrameLimits = DEFAULT_LIMITS) -> bytes:
    """Frame one message body (the JSON bytes) for the wire.

    :raises FrameTooLargeToSend: the body is larger than ``limits.body``.
    """
    return encode_header(len(body), limits) + body


class FrameDecoder:
    """Incremental decoder of one direction of an LSP stream.

    Feed bytes with :meth:`receive_data`, then call :meth:`next_frame` until it returns
    :data:`NEED_DATA`; at the end of the stream call :meth:`receive_eof`. Every framing error is a
    :class:`~kandev_lsp.protocol.errors.RemoteProtocolError`; after one, the decoder stays failed and
    raises the same error again, since the rest of the stream cannot be trusted.

    :param limits: the size limits of one frame.
    :param peer: who sends these bytes, for error messages (e.g. ``"language server stdout"``).
    """

    __slots__ = (
        "_buf",
        "_content_length",
        "_eof",
        "_failure",
        "_frame_number",
        "_have",
        "_limits",
        "_line_number",
        "_line_start",
        "_offset",
        "_parts",
        "_peer",
        "_pos",
        "_ready",
        "_scan",
    )

    def __init__(self, limits: FrameLimits = DEFAULT_LIMITS, *, peer: str = "peer") -> None:
        self._limits = limits
        self._peer = peer
        # The bytes being parsed: the last chunk received, as is, or a bytearray when a frame's headers
        # straddle chunks. Offsets into it: _pos, the start of the current frame (what lies before is
        # consumed); _line_start, the start of the header line being read; _scan, where the search for
        # the next LF resumes, so that bytes are scanned once however they arrive.
        self._buf: bytes | bytearray = b""
        self._pos = 0
        self._line_start = 0
        self._scan = 0
        self._content_length: int | None = None
        # A body that spans chunks is collected in _parts rather than appended to a bytearray: CPython
        # reallocates a bytearray to the exact new size on each append, which copied a 1 MiB body about
        # eight times when it arrived in pipe-sized chunks. _have counts the body bytes collected.
        self._parts: list[bytes | bytearray | memoryview] | None = None
        self._have = 0
        self._line_number = 1
        self._frame_number = 1
        self._offset = 0  # stream offset of _buf[0], for error messages
        self._eof = False
        self._failure: RemoteProtocolError | None = None
        self._ready: deque[bytes] = deque()  # frames completed before EOF, see receive_eof

    @property
    def limits(self) -> FrameLimits:
        """The limits this decoder enforces."""
        return self._limits

    @property
    def buffered(self) -> int:
        """Bytes the decoder holds: those not parsed yet and the body bytes of the frame in progress.

        Headers already parsed are not held. After :meth:`next_frame` returned :data:`NEED_DATA`, this
        stays below ``limits.headers_total + limits.body``.
        """
        return len(self._buf) - self._pos + self._have

    @property
    def frame_pending(self) -> bool:
        """True when part of a frame has been received but not the whole frame."""
        return self.buffered > 0

    def receive_data(self, data: bytes) -> None:
        """Add bytes received from the peer. An empty ``data`` is a no-op (use :meth:`receive_eof`).

        ``bytes`` are kept by reference, not copied, until the frames they hold are returned; other
        buffer types (a ``bytearray`` the caller may reuse) are copied first.

        :raises LocalProtocolError: called after :meth:`receive_eof`.
        """
        if self._eof:
            raise LocalProtocolError("receive_data() called after receive_eof()")
        if self._failure is not None or not data:
            return  # a failed stream is never read again; do not keep its bytes
        if type(data) is not bytes:
            data = bytes(data)
        if self._parts is not None:
            assert self._content_length is not None
            need = self._content_length - self._have
            if need > 0:
                if len(data) <= need:
                    self._collect(data)
                    return
                view = memoryview(data)
                self._collect(view[:need])
                self._append(view[need:])
                return
        self._append(data)

    def _append(self, data: bytes | memoryview) -> None:
        buf = self._buf
        pos = self._pos
        if pos == len(buf):
            # Nothing pending, the usual case: parse the chunk where it is instead of copying it.
            self._buf = data if type(data) is bytes else bytes(data)
        else:
            # A frame's headers straddle chunks: gather the pending bytes and the chunk in a bytearray.
            # Dropping a bytearray's head only moves its logical start in CPython, so this is cheap.
            if type(buf) is bytearray:
                del buf[:pos]
            else:
                buf = bytearray(memoryview(buf)[pos:])
            buf += data
            self._buf = buf
        self._offset += pos
        self._pos = 0
        self._line_start -= pos
        self._scan -= pos

    def receive_eof(self) -> None:
        """Mark the end of the stream.

        Complete frames still buffered stay available from :meth:`next_frame`.

        :raises TruncatedFrame: the stream ended inside a frame.
        :raises RemoteProtocolError: a frame buffered before the end is malformed.
        """
        if self._failure is not None:
            self._eof = True
            raise self._failure
        if self._eof:
            return
        self._eof = True
        while (frame := self._parse()) is not NEED_DATA:
            self._ready.append(frame)
        if self.frame_pending:
            where = (
                f"{self._have} of {self._content_length} body bytes"
                if self._parts is not None
                else f"{len(self._buf) - self._pos} bytes into its headers"
            )
            raise self._fail(
                TruncatedFrame(
                    f"{self._peer}: the stream ended inside frame {self._frame_number} ({where}); the "
                    "peer closed or crashed while writing a message."
                )
            )

    def next_frame(self) -> bytes | NeedData:
        """Return the body of the next complete frame, or :data:`NEED_DATA`.

        :raises RemoteProtocolError: the buffered bytes are not valid framing (a
            :class:`~kandev_lsp.protocol.errors.ReceivedFrameTooLarge` when a limit is exceeded).
        """
        if self._ready:
            return self._ready.popleft()
        if self._failure is not None:
            raise self._failure
        return self._parse()

    # -- parsing -------------------------------------------------------------------------------------

    def _parse(self) -> bytes | NeedData:
        if self._parts is not None:
            return self._collected_body()
        buf = self._buf
        pos = self._pos
        if pos == len(buf):
            return NEED_DATA
        if self._scan == pos:
            # Nothing of this frame parsed yet: try the header block nearly every peer writes. Anything
            # else, or anything near a limit, takes the general path, which reports errors precisely.
            match = _CANONICAL_HEADERS.match(buf, pos)
            if match is not None:
                length = int(match[1])
                limits = self._limits
                if (
                    length <= limits.body
                    and match.end(1) - pos <= limits.header_line
                    and match.end() - pos <= limits.headers_total
                ):
                    self._content_length = length
                    return self._take_body(match.end())
        try:
            body_start = self._parse_headers()
        except RemoteProtocolError as error:
            raise self._fail(error) from None
        if body_start < 0:
            return NEED_DATA
        return self._take_body(body_start)

    def _fail(self, error: RemoteProtocolError) -> RemoteProtocolError:
        self._failure = error
        self._buf = b""  # release the memory; nothing more will be decoded
        self._pos = self._line_start = self._scan = 0
        self._parts = None
        self._have = 0
        return error

    def _take_body(self, start: int) -> bytes | NeedData:
        """Return the body starting at ``buf[start]`` if it is all there, else start collecting it."""
        assert self._content_length is not None
        buf = self._buf
        stop = start + self._content_length
        if len(buf) < stop:
            self._parts = []
            self._offset += start
            if len(buf) > start:
                self._collect(memoryview(buf)[start:])
            self._buf = b""
            self._pos = self._line_start = self._scan = 0
            return NEED_DATA
        # One copy, straight from the buffer into the result (slicing a bytearray would copy twice).
        with memoryview(buf) as view:
            body = bytes(view[start:stop])
        if stop == len(buf):
            # One frame per chunk, the usual case: let the chunk go now.
            self._buf = b""
            self._offset += stop
            stop = 0
        self._pos = self._line_start = self._scan = stop
        self._next_frame_starts()
        return body

    def _collect(self, part: bytes | memoryview) -> None:
        """Keep body bytes of a frame whose body spans chunks.

        ``part`` is immutable or a view of a buffer the decoder has let go of, so large parts are kept by
        reference and copied once, by the final join.
        """
        parts = self._parts
        assert parts is not None
        size = len(part)
        self._have += size
        self._offset += size
        if size >= _SMALL_PART:
            parts.append(part)
        elif parts and type(parts[-1]) is bytearray and len(parts[-1]) < _COALESCED_PART:
            parts[-1] += part  # a peer trickling bytes must not cost a Python object per chunk
        else:
            parts.append(bytearray(part))

    def _collected_body(self) -> bytes | NeedData:
        assert self._parts is not None
        if self._have < (self._content_length or 0):
            return NEED_DATA
        # join returns a lone bytes part as is, without copying it.
        body = b"".join(self._parts)
        self._parts = None
        self._have = 0
        self._next_frame_starts()
        return body

    def _next_frame_starts(self) -> None:
        self._content_length = None
        self._line_number = 1
        self._frame_number += 1

    def _parse_headers(self) -> int:
        """Consume complete header lines; return where the body starts once the block is read, else -1.

        Every violation is pinned to the first byte that proves it (a bad byte, the byte that makes a
        line or the block too long, the LF ending a bad line), and the earliest one is reported. So the
        same bytes give the same error however they were split into chunks.
        """
        buf = self._buf
        line_limit = self._limits.header_line
        while True:
            line_start = self._line_start
            # Any byte past these points is already a violation, so never look further.
            end = min(len(buf), line_start + line_limit + 2, self._pos + self._limits.headers_total)
            lf = buf.find(b"\n", self._scan, end)
            if lf < 0:
                self._check_partial_line(end)
                return -1
            has_cr = lf > line_start and buf[lf - 1] == _CR
            content_end = lf - 1 if has_cr else lf
            bad = _INVALID_HEADER_BYTE.search(buf, self._scan, content_end)
            if bad is not None:
                raise self._bad_byte(bad.start())
            if content_end - line_start > line_limit:  # only possible with a bare LF
                raise self._line_too_long()
            if not has_cr:
                raise self._malformed("ends with a bare LF instead of CRLF")
            if content_end == line_start:
                self._end_of_headers()
                self._line_start = self._scan = lf + 1
                return lf + 1
            self._header_line(bytes(buf[line_start:content_end]))
            self._line_start = self._scan = lf + 1
            self._line_number += 1

    def _check_partial_line(self, end: int) -> None:
        """Reject an unterminated line as soon as its bytes can no longer start a valid header block.

        ``buf[self._scan:end]`` holds no LF. Candidates are ranked by the index of the byte proving them;
        on a tie a bad byte wins over a long line, which wins over a long block.
        """
        buf = self._buf
        violations: list[tuple[int, int]] = []  # (index of the proving byte, rank)
        bad = _INVALID_HEADER_BYTE.search(buf, self._scan, end)
        bad_index = -1
        if bad is not None:
            bad_index = bad.start()
            # A CR is fine as long as an LF may still follow it.
            if buf[bad_index] != _CR:
                violations.append((bad_index, 0))
            elif bad_index + 1 < end:
                violations.append((bad_index + 1, 0))
        over = self._line_start + self._limits.header_line  # first byte past the longest line content
        if end > over:
            if buf[over] != _CR:
                violations.append((over, 1))
            elif end > over + 1:
                violations.append((over + 1, 1))
        block_end = self._pos + self._limits.headers_total  # one past the last byte the block may use
        if end >= block_end:
            violations.append((block_end - 1, 2))
        if violations:
            rank = min(violations)[1]
            if rank == 0:
                raise self._bad_byte(bad_index)
            raise self._line_too_long() if rank == 1 else self._headers_too_large()
        # Resume after the bytes checked, except a trailing CR whose LF has not arrived yet.
        self._scan = end - 1 if bad is not None else end

    def _header_line(self, line: bytes) -> None:
        name, colon, value = line.partition(b":")
        if not colon:
            raise self._malformed("has no ':' between a header name and its value")
        if not _TOKEN.fullmatch(name):
            raise self._malformed(
                "has an invalid header name (empty, or with spaces or separators before the ':')"
            )
        if name.lower() != _CONTENT_LENGTH:
            return  # Content-Type and any other header are allowed and carry nothing we need
        value = value.strip(b" \t")
        if not value.isdigit():  # bytes.isdigit is ASCII-only: no sign, space, '_' or Unicode digits
            shown = value[:32].decode("ascii")
            raise self._malformed(f"has a Content-Length {shown!r} that is not a non-negative decimal number")
        digits = value.lstrip(b"0") or b"0"
        if len(digits) > 20:
            # Far beyond any limit; int() of thousands of digits would be slow (or refused).
            raise self._body_too_large(10 ** (len(digits) - 1), f"a {len(digits)}-digit body length")
        length = int(digits)
        if length > self._limits.body:
            raise self._body_too_large(length, f"a {length}-byte body")
        if self._content_length is not None and self._content_length != length:
            raise self._malformed(
                f"repeats Content-Length with a different value ({self._content_length} then {length})"
            )
        self._content_length = length

    def _end_of_headers(self) -> None:
        if self._content_length is None:
            raise MalformedHeader(
                f"{self._peer}: frame {self._frame_number} at stream offset {self._offset + self._pos} "
                f"has no Content-Length header. {_HINT}"
            )

    # -- error construction ----------------------------------------------------------------------------

    def _where(self) -> str:
        return (
            f"{self._peer}: frame {self._frame_number}, header line {self._line_number} "
            f"(stream offset {self._offset + self._line_start})"
        )

    def _malformed(self, what: str) -> MalformedHeader:
        return MalformedHeader(f"{self._where()} {what}. {_HINT}")

    def _bad_byte(self, index: int) -> MalformedHeader:
        byte = self._buf[index]
        return self._malformed(
            f"contains byte 0x{byte:02x} at column {index - self._line_start + 1}; header lines must be "
            "printable ASCII"
        )

    def _body_too_large(self, size: int, announced: str) -> ReceivedFrameTooLarge:
        limit = self._limits.body
        return ReceivedFrameTooLarge(
            f"{self._where()} announces {announced}; the limit is {limit} bytes (FrameLimits.body). "
            "The message was rejected before reading it; raise the limit on both sides if such messages "
            "are expected.",
            part="body",
            limit=limit,
            size=size,
        )

    def _line_too_long(self) -> ReceivedFrameTooLarge:
        limit = self._limits.header_line
        return ReceivedFrameTooLarge(
            f"{self._where()} is longer than {limit} bytes (FrameLimits.header_line). {_HINT}",
            part="header line",
            limit=limit,
            size=limit + 1,
        )

    def _headers_too_large(self) -> ReceivedFrameTooLarge:
        limit = self._limits.headers_total
        return ReceivedFrameTooLarge(
            f"{self._peer}: the header block of frame {self._frame_number} (stream offset "
            f"{self._offset + self._pos}) is longer than {limit} bytes (FrameLimits.headers_total). {_HINT}",
            part="headers",
            limit=limit,
            size=limit + 1,
        )
