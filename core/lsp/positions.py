"""Position encodings: which one a server and its client agreed on, and line/character <-> text offsets.

LSP positions are ``(line, character)`` where ``character`` counts code units of the negotiated encoding:
UTF-16 unless both sides agreed otherwise (LSP 3.17 ``general.positionEncodings`` offered by the client,
``capabilities.positionEncoding`` chosen by the server). Everyone who turns a position into a place in a
file (the agent tools, diagnostics snapshots, an applier of edits) uses these helpers, so the rule is
written once. Offsets here are indexes into a Python ``str`` (code points).

Lines end at ``\\n``, ``\\r\\n`` or ``\\r``, as the specification says. Out-of-range positions are clamped the
way servers and editors clamp them: a character past the end of its line means the end of the line (before
its line break), a line past the last line means the end of the text. A character that falls inside one
code point (half of a surrogate pair, inside a UTF-8 sequence) means that code point's start.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Final

__all__ = [
    "CLIENT_POSITION_ENCODINGS",
    "LineIndex",
    "PositionEncoding",
    "choose_encoding",
    "negotiated_encoding",
    "offset_at",
    "position_at",
]


class PositionEncoding(StrEnum):
    """The three encodings LSP 3.17 defines (``PositionEncodingKind``)."""

    UTF8 = "utf-8"
    UTF16 = "utf-16"
    UTF32 = "utf-32"


#: What kandev-lsp offers a server in ``general.positionEncodings``, most preferred first: UTF-8 is what
#: files are stored in, UTF-16 is the mandatory fallback every server supports.
CLIENT_POSITION_ENCODINGS: Final = (PositionEncoding.UTF8, PositionEncoding.UTF32, PositionEncoding.UTF16)

_KNOWN: Final = {encoding.value: encoding for encoding in PositionEncoding}
_LINE_BREAK: Final = re.compile(r"\r\n|\r|\n")


def negotiated_encoding(client_offered: Iterable[object] | None, server_chosen: object) -> PositionEncoding:
    """The encoding a client must use after ``initialize``: the server's choice when the client offered it.

    A server that chose nothing, chose something unknown, or chose an encoding the client did not offer
    gets UTF-16, the specification's default that every server must support.
    """
    if not isinstance(server_chosen, str) or server_chosen not in _KNOWN:
        return PositionEncoding.UTF16
    offered = {item for item in client_offered or () if isinstance(item, str)}
    if server_chosen != PositionEncoding.UTF16 and server_chosen not in offered:
        return PositionEncoding.UTF16
    return _KNOWN[server_chosen]


def choose_encoding(
    client_offered: Iterable[object] | None, server_supported: Sequence[PositionEncoding]
) -> PositionEncoding:
    """The server side of the negotiation: the first encoding the server supports that the client offered.

    For a component that answers ``initialize`` itself (the broker resuming a lease). UTF-8 wins when both
    sides offer it and the server lists it first; without a common encoding the answer is UTF-16.
    """
    offered = {item for item in client_offered or () if isinstance(item, str)}
    for encoding in server_supported:
        if encoding.value in offered:
            return encoding
    return PositionEncoding.UTF16


def _units(text: str, encoding: PositionEncoding) -> int:
    if encoding is PositionEncoding.UTF32 or text.isascii():
        return len(text)
    if encoding is PositionEncoding.UTF16:
        return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)
    return len(text.encode("utf-8", "surrogatepass"))


def _char_width(char: str, encoding: PositionEncoding) -> int:
    code = ord(char)
    if encoding is PositionEncoding.UTF16:
        return 2 if code > 0xFFFF else 1
    if code < 0x80:
        return 1
    if code < 0x800:
        return 2
    return 3 if code < 0x10000 else 4


class LineIndex:
    """Line starts of one text, for many conversions on the same text (build once, convert many times)."""

    __slots__ = ("_ends", "_starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        ends = []
        if "\r" in text:
            for match in _LINE_BREAK.finditer(text):
                ends.append(match.start())
                starts.append(match.end())
        else:  # only "\n" breaks (nearly every file): str.find runs at C speed, ~3.5x the regex scan
            find = text.find
            index = find("\n")
            while index != -1:
                ends.append(index)
                starts.append(index + 1)
                index = find("\n", index + 1)
        ends.append(len(text))
        self._starts = starts
        self._ends = ends

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line_text(self, line: int) -> str:
        """Line ``line`` without its line break ("" past the end)."""
        if not 0 <= line < len(self._starts):
            return ""
        return self.text[self._starts[line] : self._ends[line]]

    def offset(self, line: int, character: int, encoding: PositionEncoding = PositionEncoding.UTF16) -> int:
        """The ``str`` index of a position (clamped, see the module docstring)."""
        if line < 0:
            return 0
        if line >= len(self._starts):
            return len(self.text)
        start, end = self._starts[line], self._ends[line]
        if character <= 0:
            return start
        segment = self.text[start:end]
        if encoding is PositionEncoding.UTF32 or segment.isascii():
            return start + min(character, len(segment))
        units = 0
        for index, char in enumerate(segment):
            units += _char_width(char, encoding)
            if units > character:
                return start + index
        return end

    def position(self, offset: int, encoding: PositionEncoding = PositionEncoding.UTF16) -> tuple[int, int]:
        """The ``(line, character)`` of a ``str`` index (clamped to the text)."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self._starts, offset) - 1
        start = self._starts[line]
        # An offset between "\r" and "\n" of one line break belongs to the end of its line.
        column_end = min(offset, self._ends[line])
        return line, _units(self.text[start:column_end], encoding)


def offset_at(
    text: str, line: int, character: int, encoding: PositionEncoding = PositionEncoding.UTF16
) -> int:
    """One-off :meth:`LineIndex.offset` (build a :class:`LineIndex` for repeated conversions)."""
    return LineIndex(text).offset(line, character, encoding)


def position_at(
    text: str, offset: int, encoding: PositionEncoding = PositionEncoding.UTF16
) -> tuple[int, int]:
    """One-off :meth:`LineIndex.position`."""
    return LineIndex(text).position(offset, encoding)
