"""Properties of the framing codec over generated streams and arbitrary chunkings."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st
from kandev_lsp.protocol import (
    NEED_DATA,
    FrameDecoder,
    FrameLimits,
    FrameTooLarge,
    RemoteProtocolError,
    encode_frame,
)

# Small limits so generated streams reach every limit quickly.
LIMITS = FrameLimits(header_line=48, headers_total=128, body=512)
# The decoder's promise: after draining, what it keeps stays below one header block plus one body.
BOUND = LIMITS.headers_total + LIMITS.body

Outcome = tuple[list[bytes], tuple[type[RemoteProtocolError], str] | None]


def decode(chunks: Sequence[bytes]) -> Outcome:
    """Feed chunks as a bridge would and return the frames plus the protocol error, if any.

    Any exception that is not a RemoteProtocolError escapes and fails the test.
    """
    decoder = FrameDecoder(LIMITS, peer="generated")
    frames: list[bytes] = []
    try:
        for chunk in chunks:
            decoder.receive_data(chunk)
            while (frame := decoder.next_frame()) is not NEED_DATA:
                assert len(frame) <= LIMITS.body
                frames.append(frame)
            assert decoder.buffered < BOUND
        decoder.receive_eof()
        while (frame := decoder.next_frame()) is not NEED_DATA:
            frames.append(frame)
    except RemoteProtocolError as error:
        if isinstance(error, FrameTooLarge):
            assert error.size > error.limit
        return frames, (type(error), str(error))
    return frames, None


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(cut % (len(data) + 1) for cut in cuts), len(data)]
    return [data[start:stop] for start, stop in itertools.pairwise(bounds)]


cut_lists = st.lists(st.integers(min_value=0, max_value=10_000), max_size=24)
bodies = st.lists(st.binary(max_size=LIMITS.body), max_size=6)


@settings(max_examples=150, deadline=None)
@given(bodies=bodies, cuts=cut_lists)
def test_encoded_bodies_decode_back_under_any_chunking(bodies, cuts):
    stream = b"".join(encode_frame(body, LIMITS) for body in bodies)
    assert decode(split(stream, cuts)) == (bodies, None)


@settings(max_examples=150, deadline=None)
@given(bodies=bodies)
def test_encoded_bodies_decode_back_byte_by_byte(bodies):
    stream = b"".join(encode_frame(body, LIMITS) for body in bodies)
    assert decode([stream[i : i + 1] for i in range(len(stream))]) == (bodies, None)


header_values = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=16).map(
    lambda text: text.strip().encode("ascii")
)
ows = st.sampled_from([b"", b" ", b"\t", b" \t "])


@st.composite
def hand_written_frames(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A frame as other LSP implementations may write it: any case, padding, extra headers."""
    body = draw(st.binary(max_size=64))
    flips = draw(st.lists(st.booleans(), min_size=14, max_size=14))
    name = "".join(c.upper() if up else c for c, up in zip("content-length", flips, strict=True)).encode()
    zeros = b"0" * draw(st.integers(0, 3))
    length = name + b":" + draw(ows) + zeros + b"%d" % len(body) + draw(ows)
    before = draw(st.lists(header_values.map(lambda v: b"Content-Type: " + v), max_size=1))
    after = draw(st.lists(header_values.map(lambda v: b"X-Extra:" + v), max_size=1))
    headers = [*before, length, *after]
    return b"".join(line + b"\r\n" for line in headers) + b"\r\n" + body, body


@settings(max_examples=150, deadline=None)
@given(frames=st.lists(hand_written_frames(), max_size=5), cuts=cut_lists)
def test_hand_written_frames_decode_under_any_chunking(frames, cuts):
    stream = b"".join(raw for raw, _ in frames)
    assert decode(split(stream, cuts)) == ([body for _, body in frames], None)


# Garbage made of framing's own vocabulary reaches deeper states than uniform random bytes.
TOKENS = [
    b"Content-Length: ",
    b"content-length:",
    b"Content-Type: x",
    b"\r\n",
    b"\r\n\r\n",
    b"\r",
    b"\n",
    b":",
    b" ",
    b"0",
    b"7",
    b"12",
    b"99999",
    b"-1",
    b"x",
    b"{}",
    b"\xff",
    b"\x00",
    b"a" * 50,
]
garbage = st.one_of(
    st.binary(max_size=1500),
    st.lists(st.sampled_from(TOKENS), max_size=120).map(b"".join),
)


@settings(max_examples=300, deadline=None)
@given(prefix=bodies, junk=garbage, cuts=cut_lists)
def test_garbage_ends_in_frames_or_a_protocol_error_within_bounds(prefix, junk, cuts):
    """Frames before the garbage come out intact; the rest ends cleanly, and buffering stays bounded."""
    stream = b"".join(encode_frame(body, LIMITS) for body in prefix) + junk
    frames, _ = decode(split(stream, cuts))
    assert frames[: len(prefix)] == prefix


@st.composite
def mutated_streams(draw: st.DrawFn) -> bytes:
    """A valid stream with a few bytes replaced, inserted or deleted: almost-valid input."""
    data = bytearray(b"".join(encode_frame(body, LIMITS) for body in draw(bodies)))
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(data)))
        byte = draw(st.sampled_from([0x0A, 0x0D, 0x3A, 0x20, 0x30, 0x39, 0x41, 0xFF, 0x00]))
        action = draw(st.sampled_from(["replace", "insert", "delete"]))
        if action == "insert" or index == len(data):
            data.insert(index, byte)
        elif action == "replace":
            data[index] = byte
        else:
            del data[index]
    return bytes(data)


@settings(max_examples=300, deadline=None)
@given(stream=st.one_of(mutated_streams(), garbage), cuts=cut_lists)
def test_chunking_never_changes_the_outcome(stream, cuts):
    """The same bytes give the same frames and the same error, whole, byte by byte or in any chunks."""
    whole = decode([stream])
    assert decode(split(stream, cuts)) == whole
    assert decode([stream[i : i + 1] for i in range(len(stream))]) == whole
