"""The framing codec, case by case. Every decoding case runs fed whole and fed byte by byte."""

from __future__ import annotations

import dataclasses
import tracemalloc

import pytest
from kandev_lsp.errors import KandevLspError
from kandev_lsp.protocol import (
    DEFAULT_LIMITS,
    NEED_DATA,
    FrameDecoder,
    FrameLimits,
    FrameTooLarge,
    FrameTooLargeToSend,
    LocalProtocolError,
    MalformedHeader,
    ReceivedFrameTooLarge,
    RemoteProtocolError,
    TruncatedFrame,
    encode_frame,
    encode_header,
)

# Small limits keep byte-by-byte feeding of limit cases fast.
SMALL = FrameLimits(header_line=40, headers_total=100, body=300)


def frame(body: bytes, *headers: bytes) -> bytes:
    """A frame written out by hand, independently of the encoder under test."""
    return b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body


# -- decoding valid input ---------------------------------------------------------------------------


def test_one_frame(feed):
    decoder = FrameDecoder()
    assert feed(decoder, b'Content-Length: 17\r\n\r\n{"jsonrpc":"2.0"}') == [b'{"jsonrpc":"2.0"}']
    assert decoder.buffered == 0
    assert not decoder.frame_pending
    assert decoder.next_frame() is NEED_DATA


def test_several_frames_in_one_chunk_come_out_in_order(feed):
    data = (
        frame(b"[1]", b"Content-Length: 3")
        + frame(b"{}", b"Content-Length: 2")
        + frame(b"", b"Content-Length: 0")
    )
    assert feed(FrameDecoder(), data) == [b"[1]", b"{}", b""]


@pytest.mark.parametrize("name", [b"Content-Length", b"content-length", b"CONTENT-LENGTH", b"cOnTeNt-LeNgTh"])
def test_header_names_are_case_insensitive(feed, name):
    assert feed(FrameDecoder(), frame(b"abc", name + b": 3")) == [b"abc"]


def test_other_headers_are_accepted_and_ignored(feed):
    data = frame(
        b"xy",
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8",
        b"Content-Length: 2",
        b"X-Anything: !#$%&'*+-.^_`|~ \t tabs and spaces",
    )
    assert feed(FrameDecoder(), data) == [b"xy"]


@pytest.mark.parametrize(
    "header",
    [b"Content-Length:4", b"Content-Length: \t 4 \t ", b"Content-Length: 0004", b"Content-Length:\t4"],
)
def test_content_length_spelling_variants(feed, header):
    assert feed(FrameDecoder(), frame(b"abcd", header)) == [b"abcd"]


def test_repeated_content_length_with_the_same_value_is_accepted(feed):
    assert feed(FrameDecoder(), frame(b"ab", b"Content-Length: 2", b"Content-Length: 02")) == [b"ab"]


def test_body_bytes_that_look_like_headers_stay_in_the_body(feed):
    body = b"\r\n\r\nContent-Length: 99\r\n\r\n\xff\x00"
    data = frame(body, b"Content-Length: %d" % len(body)) + frame(b"ok", b"Content-Length: 2")
    assert feed(FrameDecoder(), data) == [body, b"ok"]


def test_split_at_every_position():
    data = frame(b'{"a":1}', b"Content-Type: x", b"content-length: 7") + frame(b"\r\n", b"Content-Length: 2")
    for cut in range(len(data) + 1):
        decoder = FrameDecoder()
        decoder.receive_data(data[:cut])
        frames = []
        while (body := decoder.next_frame()) is not NEED_DATA:
            frames.append(body)
        decoder.receive_data(data[cut:])
        while (body := decoder.next_frame()) is not NEED_DATA:
            frames.append(body)
        decoder.receive_eof()
        assert frames == [b'{"a":1}', b"\r\n"], cut


def test_split_at_every_pair_of_positions():
    data = frame(b"abc", b"Content-Length: 3") + frame(b"de", b"Content-Length: 2")
    for first in range(len(data) + 1):
        for second in range(first, len(data) + 1):
            decoder = FrameDecoder()
            frames = []
            for chunk in (data[:first], data[first:second], data[second:]):
                decoder.receive_data(chunk)
                while (body := decoder.next_frame()) is not NEED_DATA:
                    frames.append(body)
            assert frames == [b"abc", b"de"], (first, second)
            assert decoder.buffered == 0


def test_a_large_body_in_pipe_sized_chunks():
    body = bytes(range(256)) * 4096  # 1 MiB
    data = frame(body, b"Content-Length: %d" % len(body))
    decoder = FrameDecoder()
    frames = []
    for start in range(0, len(data), 65536):
        decoder.receive_data(data[start : start + 65536])
        while (got := decoder.next_frame()) is not NEED_DATA:
            frames.append(got)
    assert frames == [body]
    assert decoder.buffered == 0


def test_a_buffer_the_caller_reuses_is_not_kept(feed):
    body = bytes(range(256)) * 40  # 10 KiB, large enough to be kept by reference if it were bytes
    decoder = FrameDecoder()
    decoder.receive_data(b"Content-Length: %d\r\n\r\n" % len(body))
    assert decoder.next_frame() is NEED_DATA
    reused = bytearray(body[:6000])
    decoder.receive_data(reused)
    reused[:] = b"\x00" * len(reused)  # e.g. the next readinto() of the caller's read buffer
    reused = bytearray(body[6000:])
    decoder.receive_data(reused)
    reused[:] = b"\x00" * len(reused)
    assert decoder.next_frame() == body


def test_a_peer_trickling_a_body_does_not_cost_an_object_per_chunk():
    body = b"t" * 256 * 1024
    decoder = FrameDecoder()
    decoder.receive_data(b"Content-Length: %d\r\n\r\n" % len(body))
    assert decoder.next_frame() is NEED_DATA
    tracemalloc.start()
    try:
        for start in range(0, len(body), 16):
            decoder.receive_data(body[start : start + 16])  # a fresh object per read, as from a pipe
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * len(body)  # keeping each 16-byte chunk as an object would take over 3 times
    assert decoder.next_frame() == body


def test_buffered_counts_what_the_decoder_holds():
    decoder = FrameDecoder()
    decoder.receive_data(b"Content-Len")
    assert decoder.next_frame() is NEED_DATA
    assert decoder.buffered == len(b"Content-Len")
    decoder.receive_data(b"gth: 5\r\n\r\nab")
    assert decoder.next_frame() is NEED_DATA
    assert decoder.buffered == 2  # parsed headers are not kept, the body bytes are
    assert decoder.frame_pending
    decoder.receive_data(b"cdeContent-Le")
    assert decoder.next_frame() == b"abcde"
    assert decoder.buffered == len(b"Content-Le")


def test_empty_data_is_a_no_op():
    decoder = FrameDecoder()
    decoder.receive_data(b"")
    assert decoder.next_frame() is NEED_DATA
    decoder.receive_eof()


# -- malformed input ----------------------------------------------------------------------------------

MALFORMED = [
    pytest.param(frame(b"{}"), "has no Content-Length header", id="no-headers-at-all"),
    pytest.param(frame(b"{}", b"Content-Type: x"), "has no Content-Length header", id="missing-length"),
    pytest.param(frame(b"{}", b"Content-Length: two"), "'two' that is not a non-negative", id="non-numeric"),
    pytest.param(frame(b"{}", b"Content-Length: -2"), "'-2' that is not", id="negative"),
    pytest.param(frame(b"{}", b"Content-Length: +2"), "'+2' that is not", id="plus-sign"),
    pytest.param(frame(b"{}", b"Content-Length: 2.0"), "'2.0' that is not", id="decimal-point"),
    pytest.param(frame(b"{}", b"Content-Length: 0x2"), "'0x2' that is not", id="hex"),
    pytest.param(frame(b"{}", b"Content-Length: 1_0"), "'1_0' that is not", id="underscore"),
    pytest.param(frame(b"{}", b"Content-Length: 2 2"), "'2 2' that is not", id="two-numbers"),
    pytest.param(frame(b"{}", b"Content-Length:"), "'' that is not", id="empty-value"),
    pytest.param(
        frame(b"{}", b"Content-Length: 2", b"Content-Length: 3"),
        "repeats Content-Length with a different value (2 then 3)",
        id="conflicting-duplicate",
    ),
    pytest.param(frame(b"{}", b"Content-Length 2"), "has no ':'", id="no-colon"),
    pytest.param(frame(b"{}", b"Content-Length: 2", b"garbage"), "header line 2", id="no-colon-line-2"),
    pytest.param(frame(b"{}", b": 2"), "invalid header name", id="empty-name"),
    pytest.param(frame(b"{}", b"Content-Length : 2"), "invalid header name", id="space-before-colon"),
    pytest.param(frame(b"{}", b" Content-Length: 2"), "invalid header name", id="leading-space"),
    pytest.param(frame(b"{}", b"Content\x00Length: 2"), "byte 0x00 at column 8", id="nul"),
    pytest.param(frame(b"{}", b"Content-Length: \xd9\xa2"), "byte 0xd9 at column 17", id="unicode-digit"),
    pytest.param(frame(b"{}", b"X: caf\xc3\xa9", b"Content-Length: 2"), "byte 0xc3", id="utf8-value"),
    pytest.param(b"\xff\xfe" + frame(b"{}", b"Content-Length: 2"), "byte 0xff at column 1", id="bom"),
    pytest.param(frame(b"{}", b"X: a\rb", b"Content-Length: 2"), "byte 0x0d at column 5", id="lone-cr"),
    pytest.param(frame(b"{}", b"X: \x1b[31m"), "byte 0x1b", id="escape"),
    pytest.param(b"Content-Length: 2\n\n{}", "bare LF instead of CRLF", id="bare-lf"),
    pytest.param(
        b"Content-Length: 2\r\n\n{}", "header line 2 (stream offset 19) ends with a bare LF", id="bare-lf-2"
    ),
    pytest.param(b"Starting server...\n", "bare LF", id="log-line-on-stdout"),
    pytest.param(b'{"jsonrpc":"2.0","id":1}\r\n', "invalid header name", id="json-without-headers"),
]


@pytest.mark.parametrize(("data", "message"), MALFORMED)
def test_malformed_headers_are_rejected_with_a_clear_error(feed, data, message):
    decoder = FrameDecoder(peer="the test server")
    with pytest.raises(MalformedHeader) as caught:
        feed(decoder, data)
    assert message in str(caught.value)
    assert str(caught.value).startswith("the test server: frame 1")
    assert "LSP base protocol" in str(caught.value)  # tells the reader what the peer should send
    assert not isinstance(caught.value, FrameTooLarge)
    assert feed.frames == []


def test_an_error_after_good_frames_names_the_frame_and_offset(feed):
    data = frame(b"{}", b"Content-Length: 2") + b"Content-Length: 1\r\nnonsense\r\n\r\nx"
    with pytest.raises(MalformedHeader, match=r"frame 2, header line 2 \(stream offset 42\) has no ':'"):
        feed(FrameDecoder(), data)
    assert feed.frames == [b"{}"]


def test_errors_never_quote_bodies_or_unknown_header_lines(feed):
    data = frame(b'{"token":"s3cr3t-body"}', b"Content-Length: 23") + b"password=hunter2 leaked\r\n"
    with pytest.raises(MalformedHeader) as caught:
        feed(FrameDecoder(), data)
    assert "s3cr3t" not in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_failed_decoder_stays_failed_and_stops_buffering():
    decoder = FrameDecoder()
    decoder.receive_data(b"nonsense\r\n")
    with pytest.raises(MalformedHeader) as first:
        decoder.next_frame()
    decoder.receive_data(frame(b"{}", b"Content-Length: 2"))
    assert decoder.buffered == 0
    with pytest.raises(MalformedHeader) as second:
        decoder.next_frame()
    assert second.value is first.value
    with pytest.raises(MalformedHeader):
        decoder.receive_eof()


def test_the_same_bytes_give_the_same_error_however_they_are_split():
    # A bad byte past the point where the line is already too long: the long line is reported in both.
    cases = [
        b"X: " + b"a" * 60 + b"\xff\r\n",
        b"X: " + b"a" * 10 + b"\xff" + b"a" * 60,
        b"X: a\r" + b"a" * 60,
        b"a" * 41 + b"\n",
        b"X: abc\r\n" * 12 + b"\xff",
    ]
    for data in cases:
        messages = set()
        for chunk_size in (1, 2, 3, 7, len(data)):
            decoder = FrameDecoder(SMALL)
            with pytest.raises(RemoteProtocolError) as caught:
                for start in range(0, len(data), chunk_size):
                    decoder.receive_data(data[start : start + chunk_size])
                    assert decoder.next_frame() is NEED_DATA
            messages.add((type(caught.value), str(caught.value)))
        assert len(messages) == 1, messages


# -- limits ---------------------------------------------------------------------------------------------


def padded_line(length: int) -> bytes:
    """A valid, ignored header line of exactly ``length`` bytes (CRLF excluded)."""
    return b"X-Pad: " + b"p" * (length - 7)


def test_a_header_line_at_the_limit_is_accepted(feed):
    line = padded_line(SMALL.header_line)
    assert feed(FrameDecoder(SMALL), frame(b"ok", line, b"Content-Length: 2")) == [b"ok"]


def test_a_header_line_one_over_the_limit_is_rejected(feed):
    line = padded_line(SMALL.header_line + 1)
    with pytest.raises(ReceivedFrameTooLarge) as caught:
        feed(FrameDecoder(SMALL), frame(b"ok", line, b"Content-Length: 2"))
    assert (caught.value.part, caught.value.limit) == ("header line", SMALL.header_line)
    assert "longer than 40 bytes (FrameLimits.header_line)" in str(caught.value)


def test_an_unterminated_header_line_is_rejected_as_soon_as_it_is_too_long():
    decoder = FrameDecoder(SMALL)
    for _ in range(SMALL.header_line):
        decoder.receive_data(b"a")
        assert decoder.next_frame() is NEED_DATA
    decoder.receive_data(b"\r")  # may still be the end of a line of exactly the limit
    assert decoder.next_frame() is NEED_DATA
    decoder.receive_data(b"a")
    with pytest.raises(RemoteProtocolError):
        decoder.next_frame()


def test_a_header_line_without_line_end_is_rejected_before_buffering_past_8_kib():
    decoder = FrameDecoder()
    fed = 0
    with pytest.raises(ReceivedFrameTooLarge) as caught:
        while fed < 1024 * 1024:
            decoder.receive_data(b"a" * 1024)
            fed += 1024
            assert decoder.next_frame() is NEED_DATA
    assert fed == 9 * 1024  # 8 KiB may still be a line of exactly the limit; the next KiB is not
    assert decoder.buffered == 0  # and the failed stream's bytes are released
    assert (caught.value.part, caught.value.limit) == ("header line", 8192)


def test_an_unterminated_header_line_one_byte_over_is_rejected_at_that_byte():
    decoder = FrameDecoder(SMALL)
    decoder.receive_data(b"a" * SMALL.header_line)
    assert decoder.next_frame() is NEED_DATA
    decoder.receive_data(b"a")
    with pytest.raises(ReceivedFrameTooLarge):
        decoder.next_frame()


CONTENT_LENGTH_2 = b"Content-Length: 2"  # 17 bytes + CRLF; with the blank line the block uses 21


def test_headers_at_the_total_limit_are_accepted(feed):
    data = frame(b"ok", CONTENT_LENGTH_2, padded_line(38), padded_line(37))
    assert data.index(b"\r\n\r\n") + 4 == SMALL.headers_total
    assert feed(FrameDecoder(SMALL), data) == [b"ok"]


def test_headers_one_over_the_total_limit_are_rejected(feed):
    data = frame(b"ok", CONTENT_LENGTH_2, padded_line(38), padded_line(38))
    assert data.index(b"\r\n\r\n") + 4 == SMALL.headers_total + 1
    with pytest.raises(ReceivedFrameTooLarge) as caught:
        feed(FrameDecoder(SMALL), data)
    assert (caught.value.part, caught.value.limit) == ("headers", SMALL.headers_total)
    assert "longer than 100 bytes (FrameLimits.headers_total)" in str(caught.value)


def test_many_short_header_lines_hit_the_total_limit(feed):
    data = b"X: 1\r\n" * 100
    with pytest.raises(ReceivedFrameTooLarge) as caught:
        feed(FrameDecoder(SMALL), data)
    assert caught.value.part == "headers"


def test_a_body_at_the_limit_is_accepted(feed):
    body = b"b" * SMALL.body
    assert feed(FrameDecoder(SMALL), frame(body, b"Content-Length: %d" % SMALL.body)) == [body]


def test_a_body_one_over_the_limit_is_rejected_from_its_header_alone(feed):
    header = frame(b"", b"Content-Length: %d" % (SMALL.body + 1))
    with pytest.raises(ReceivedFrameTooLarge) as caught:
        feed(FrameDecoder(SMALL), header)  # no body byte was sent
    assert (caught.value.part, caught.value.limit, caught.value.size) == ("body", 300, 301)
    assert "announces a 301-byte body; the limit is 300 bytes" in str(caught.value)


def test_a_body_of_exactly_16_mib_is_accepted_by_default():
    body = b"\x00" * DEFAULT_LIMITS.body
    decoder = FrameDecoder()
    decoder.receive_data(b"Content-Length: 16777216\r\n\r\n")
    decoder.receive_data(body)
    assert decoder.next_frame() == body


def test_an_announced_2_gib_body_is_rejected_as_soon_as_the_header_line_ends():
    decoder = FrameDecoder()
    decoder.receive_data(b"Content-Length: 2147483648\r\n")  # the blank line has not even arrived
    with pytest.raises(ReceivedFrameTooLarge) as caught:
        decoder.next_frame()
    assert caught.value.size == 2**31
    assert caught.value.limit == 16 * 1024 * 1024


def test_a_content_length_with_thousands_of_digits_is_too_large_not_a_crash(feed):
    data = frame(b"", b"Content-Length: " + b"9" * 5000)
    with pytest.raises(ReceivedFrameTooLarge, match="a 5000-digit body length"):
        feed(FrameDecoder(FrameLimits(header_line=6000, headers_total=7000)), data)


def test_leading_zeros_count_towards_the_header_line_limit(feed):
    tight = FrameLimits(header_line=17, headers_total=64, body=9)  # fits "Content-Length: 9"
    assert feed(FrameDecoder(tight), frame(b"x", b"Content-Length: 1")) == [b"x"]
    with pytest.raises(ReceivedFrameTooLarge) as caught:
        feed(FrameDecoder(tight), frame(b"x", b"Content-Length: 01"))
    assert caught.value.part == "header line"


def test_leading_zeros_count_towards_the_header_block_limit(feed):
    tight = FrameLimits(header_line=30, headers_total=21, body=9)  # fits "Content-Length: 9\r\n\r\n"
    assert feed(FrameDecoder(tight), frame(b"x", b"Content-Length: 1")) == [b"x"]
    with pytest.raises(ReceivedFrameTooLarge) as caught:
        feed(FrameDecoder(tight), frame(b"x", b"Content-Length: 01"))
    assert caught.value.part == "headers"


def test_leading_zeros_do_not_count_as_size(feed):
    data = frame(b"x", b"Content-Length: " + b"0" * 30 + b"1")
    assert feed(FrameDecoder(), data) == [b"x"]


# -- end of stream --------------------------------------------------------------------------------------


def test_eof_between_frames_is_clean(feed):
    assert feed(FrameDecoder(), frame(b"{}", b"Content-Length: 2"), eof=True) == [b"{}"]


def test_eof_on_an_empty_stream_is_clean():
    FrameDecoder().receive_eof()


def test_eof_inside_the_headers_is_a_truncated_frame(feed):
    with pytest.raises(TruncatedFrame, match=r"ended inside frame 1 \(9 bytes into its headers\)"):
        feed(FrameDecoder(), b"Content-L", eof=True)


def test_eof_inside_the_body_is_a_truncated_frame(feed):
    data = frame(b"{}", b"Content-Length: 2") + b"Content-Length: 10\r\n\r\n12345"
    with pytest.raises(TruncatedFrame, match=r"inside frame 2 \(5 of 10 body bytes\)"):
        feed(FrameDecoder(), data, eof=True)
    assert feed.frames == [b"{}"]


def test_complete_frames_buffered_at_eof_are_still_returned():
    decoder = FrameDecoder()
    decoder.receive_data(frame(b"a", b"Content-Length: 1") + frame(b"b", b"Content-Length: 1"))
    decoder.receive_eof()  # nothing was drained yet
    assert [decoder.next_frame(), decoder.next_frame(), decoder.next_frame()] == [b"a", b"b", NEED_DATA]


def test_frames_before_a_truncated_one_survive_eof():
    decoder = FrameDecoder()
    decoder.receive_data(frame(b"a", b"Content-Length: 1") + b"Content-Length: 3\r\n\r\nb")
    with pytest.raises(TruncatedFrame):
        decoder.receive_eof()
    assert decoder.next_frame() == b"a"
    with pytest.raises(TruncatedFrame):
        decoder.next_frame()


def test_malformed_bytes_before_eof_raise_the_framing_error():
    decoder = FrameDecoder()
    decoder.receive_data(b"nonsense\r\n")
    with pytest.raises(MalformedHeader):
        decoder.receive_eof()


def test_receive_data_after_eof_is_a_local_error():
    decoder = FrameDecoder()
    decoder.receive_eof()
    with pytest.raises(LocalProtocolError, match="after receive_eof"):
        decoder.receive_data(b"x")


# -- encoding -------------------------------------------------------------------------------------------


def test_encode_frame():
    assert encode_frame(b'{"id":1}') == b'Content-Length: 8\r\n\r\n{"id":1}'
    assert encode_frame(b"") == b"Content-Length: 0\r\n\r\n"


def test_encode_frame_counts_bytes_not_characters():
    assert encode_frame("é".encode()) == b"Content-Length: 2\r\n\r\n\xc3\xa9"


def test_encode_header_lets_a_writer_skip_copying_the_body():
    assert encode_header(1048576) == b"Content-Length: 1048576\r\n\r\n"


def test_encoding_a_body_over_the_limit_is_a_local_frame_too_large():
    with pytest.raises(FrameTooLargeToSend) as caught:
        encode_frame(b"x" * (SMALL.body + 1), SMALL)
    assert isinstance(caught.value, LocalProtocolError)
    assert isinstance(caught.value, FrameTooLarge)
    assert not isinstance(caught.value, RemoteProtocolError)
    assert (caught.value.part, caught.value.limit, caught.value.size) == ("body", 300, 301)
    assert "refusing to send a 301-byte message: the limit is 300 bytes" in str(caught.value)
    assert encode_frame(b"x" * SMALL.body, SMALL).endswith(b"x" * SMALL.body)


def test_encode_header_rejects_a_negative_length():
    with pytest.raises(LocalProtocolError):
        encode_header(-1)


def test_what_the_encoder_writes_the_decoder_reads(feed):
    bodies = [b"", b"{}", "ünïcödé".encode(), b"\r\n\r\n", b"x" * SMALL.body]
    data = b"".join(encode_frame(body, SMALL) for body in bodies)
    assert feed(FrameDecoder(SMALL), data, eof=True) == bodies


# -- limits and error classes ---------------------------------------------------------------------------


def test_default_limits():
    assert FrameLimits() == DEFAULT_LIMITS
    assert (DEFAULT_LIMITS.header_line, DEFAULT_LIMITS.headers_total, DEFAULT_LIMITS.body) == (
        8 * 1024,
        32 * 1024,
        16 * 1024 * 1024,
    )


def test_limits_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_LIMITS.body = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    "kwargs",
    [{"body": -1}, {"header_line": -5}, {"headers_total": 1.5}, {"body": True}],
)
def test_limits_must_be_non_negative_ints(kwargs):
    with pytest.raises(ValueError, match="must be a non-negative int"):
        FrameLimits(**kwargs)


def test_limits_must_leave_room_for_the_content_length_header():
    with pytest.raises(ValueError, match="needs header_line >= 24"):
        FrameLimits(header_line=23)
    with pytest.raises(ValueError, match="headers_total >= 28"):
        FrameLimits(headers_total=27)
    FrameLimits(header_line=24, headers_total=28)


def test_error_classes_follow_direction_and_share_the_project_base():
    for remote in (MalformedHeader, TruncatedFrame, ReceivedFrameTooLarge):
        assert issubclass(remote, RemoteProtocolError)
        assert not issubclass(remote, LocalProtocolError)
    assert issubclass(ReceivedFrameTooLarge, FrameTooLarge)
    assert issubclass(FrameTooLargeToSend, FrameTooLarge)
    assert not issubclass(MalformedHeader, FrameTooLarge)
    assert issubclass(FrameTooLarge, KandevLspError)
