"""Position encodings: negotiation and line/character <-> offset conversion, table-tested and as properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kandev_lsp.lsp.positions import (
    LineIndex,
    PositionEncoding,
    choose_encoding,
    negotiated_encoding,
    offset_at,
    position_at,
)

U8, U16, U32 = PositionEncoding.UTF8, PositionEncoding.UTF16, PositionEncoding.UTF32


@pytest.mark.parametrize(
    ("offered", "chosen", "expected"),
    [
        (None, None, U16),  # nothing said: the default
        (["utf-8", "utf-16"], "utf-8", U8),  # both sides offer UTF-8
        (["utf-32"], "utf-32", U32),
        (["utf-16"], "utf-8", U16),  # the server chose what the client never offered
        (None, "utf-8", U16),
        (["utf-8"], "utf-7", U16),  # unknown
        (["utf-8"], 8, U16),  # not a string
        ([], "utf-16", U16),  # UTF-16 needs no offer
    ],
)
def test_negotiated_encoding(offered: list[str] | None, chosen: object, expected: PositionEncoding) -> None:
    assert negotiated_encoding(offered, chosen) is expected


def test_choose_encoding_prefers_the_servers_order_among_offered() -> None:
    assert choose_encoding(["utf-16", "utf-8"], [U8, U16]) is U8
    assert choose_encoding(["utf-16"], [U8, U32]) is U16
    assert choose_encoding(None, [U8]) is U16


# "a😀b" : 😀 is one code point, two UTF-16 units, four UTF-8 bytes. "é" is two UTF-8 bytes.
TEXT = "a😀b\r\nxé\ny\rlast"


@pytest.mark.parametrize(
    ("line", "character", "encoding", "offset"),
    [
        (0, 0, U16, 0),
        (0, 1, U16, 1),
        (0, 3, U16, 2),  # after the emoji: 1 + 2 units
        (0, 2, U16, 1),  # inside the surrogate pair: the emoji's start
        (0, 2, U32, 2),
        (0, 5, U8, 2),  # 1 + 4 bytes
        (0, 3, U8, 1),  # inside the emoji's bytes
        (0, 99, U16, 3),  # past the line: its end, before "\r\n"
        (1, 0, U16, 5),
        (1, 2, U16, 7),
        (1, 2, U8, 6),  # inside é's bytes: é's start
        (1, 3, U8, 7),
        (2, 1, U16, 9),
        (3, 0, U16, 10),  # after a lone "\r"
        (3, 4, U16, 14),
        (9, 0, U16, 14),  # past the last line: the end of the text
        (-1, 5, U16, 0),
    ],
)
def test_offset(line: int, character: int, encoding: PositionEncoding, offset: int) -> None:
    assert offset_at(TEXT, line, character, encoding) == offset


@pytest.mark.parametrize(
    ("offset", "encoding", "position"),
    [
        (0, U16, (0, 0)),
        (2, U16, (0, 3)),
        (2, U8, (0, 5)),
        (2, U32, (0, 2)),
        (4, U16, (0, 4)),  # between "\r" and "\n": the end of line 0
        (5, U16, (1, 0)),
        (7, U8, (1, 3)),
        (10, U16, (3, 0)),
        (11, U16, (3, 1)),
        (99, U16, (3, 4)),
    ],
)
def test_position(offset: int, encoding: PositionEncoding, position: tuple[int, int]) -> None:
    assert position_at(TEXT, offset, encoding) == position


def test_line_index_lines() -> None:
    index = LineIndex(TEXT)
    assert index.line_count == 4
    assert [index.line_text(n) for n in range(5)] == ["a😀b", "xé", "y", "last", ""]
    assert LineIndex("x\n").line_count == 2  # a final line break starts an empty last line


texts = st.text(alphabet=st.sampled_from(["a", "é", "😀", "\n", "\r", "中", " "]), max_size=40)


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(list(PositionEncoding)), st.data())
def test_position_and_offset_round_trip(text: str, encoding: PositionEncoding, data: st.DataObject) -> None:
    index = LineIndex(text)
    offset = data.draw(st.integers(0, len(text)))
    line, character = index.position(offset, encoding)
    back = index.offset(line, character, encoding)
    if offset > 0 and text[offset - 1] == "\r" and offset < len(text) and text[offset] == "\n":
        assert back == offset - 1  # inside a "\r\n" break: its line's end
    else:
        assert back == offset


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(list(PositionEncoding)))
def test_units_agree_with_the_encoders(text: str, encoding: PositionEncoding) -> None:
    index = LineIndex(text)
    for line in range(index.line_count):
        content = index.line_text(line)
        codec = {U8: "utf-8", U16: "utf-16-le", U32: "utf-32-le"}[encoding]
        width = {U8: 1, U16: 2, U32: 4}[encoding]
        end = index.offset(line, 10**6, encoding)
        assert index.position(end, encoding) == (line, len(content.encode(codec)) // width)
