"""Document text for the tools: lines, 1-based columns for the model, LSP positions for servers.

Two coordinate systems meet here. The model reads and writes *1-based lines and columns counted in
characters* (code points: what it sees in the file). Servers speak LSP positions, whose ``character``
counts code units of the negotiated encoding (UTF-16 unless agreed otherwise). Every conversion goes
through the shared helpers of :mod:`kandev_lsp.lsp.positions` (one rule for line breaks and clamping,
written once for the endpoint, the diagnostics store and these tools).

:class:`TextCache` reads files from disk once per operation (B8.12: bodies and snippets of one
navigation share one read per file), bounded in size so a minified bundle cannot blow a result budget.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from kandev_lsp.intel.files.regular import read_regular
from kandev_lsp.intel.files.workspace import WorkspaceFile
from kandev_lsp.lsp.positions import LineIndex, PositionEncoding

__all__ = ["Document", "PositionEncoding", "StampedTexts", "TextCache", "TextSource"]

#: Files larger than this are not read for snippets or bodies (their locations are still listed).
MAX_TEXT_BYTES: Final = 8 * 1024 * 1024


@dataclass(slots=True)
class Document:
    """One file's text as of ``version`` (the server-facing version when the document is open).

    Lines are split once, at C speed: LSP ends lines at ``\\n``, ``\\r\\n`` and ``\\r``, so folding the two
    others into ``\\n`` and splitting on it gives exactly LSP's lines (``str.splitlines`` would also split at
    form feeds and U+2028, and disagree with the server's line numbers). Only lines that are looked at are
    converted, through a one-line :class:`~kandev_lsp.lsp.positions.LineIndex`, so the encoding rules stay
    written once; ASCII lines (nearly all code) need no conversion at all.
    """

    file: WorkspaceFile
    text: str
    version: int | None = None
    #: Whether the whole text is ASCII: then every LSP ``character`` is a column, in any encoding, and a
    #: caller converting many positions of this file needs no per-line check.
    all_ascii: bool = field(init=False, repr=False)
    _lines: list[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        text = self.text
        self.all_ascii = text.isascii()
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        self._lines = text.split("\n")

    @property
    def line_count(self) -> int:
        """Number of lines (a final line break starts one more, empty, line, as LSP counts them)."""
        return len(self._lines)

    @property
    def shown_line_count(self) -> int:
        """Number of lines as a person counts them (an editor's last line number; ``wc -l`` of a file
        that ends in a line break): a final line break ends the last line, it starts no empty one. What
        a message about the file's length says (issue 17 item 12: "14 lines" for a 13-line file)."""
        lines = self._lines
        return len(lines) - 1 if not lines[-1] else len(lines)

    @property
    def lines(self) -> Sequence[str]:
        """All lines, without their line breaks (for a caller converting many positions of one file at
        once; :meth:`line` is the one-line way)."""
        return self._lines

    def line(self, line: int) -> str:
        """Line ``line`` (0-based) without its line break; ``""`` past the end."""
        return self._lines[line] if 0 <= line < len(self._lines) else ""

    def lsp_position(self, line: int, index: int, encoding: PositionEncoding) -> dict[str, int]:
        """The LSP position of code point ``index`` of 0-based ``line`` (clamped to the line)."""
        text = self.line(line)
        index = max(0, min(index, len(text)))
        if text.isascii():
            return {"line": line, "character": index}
        return {"line": line, "character": LineIndex(text).position(index, encoding)[1]}

    def column_index(self, line: int, character: int, encoding: PositionEncoding) -> int:
        """The code-point index in its line of an LSP ``character`` (clamped to the line)."""
        text = self.line(line)
        if text.isascii():
            return max(0, min(character, len(text)))
        return LineIndex(text).offset(0, character, encoding)

    def model_position(self, position: Any, encoding: PositionEncoding) -> tuple[int, int]:
        """An LSP ``Position`` as the model's 1-based ``(line, column)``; malformed values give ``(1, 1)``."""
        if type(position) is dict:  # one call per position of an answer: the common case inline
            line, character = position.get("line"), position.get("character")
            if (
                type(line) is int
                and type(character) is int
                and 0 <= line < len(self._lines)
                and character >= 0
            ):
                text = self._lines[line]
                if text.isascii():  # code units are characters: no conversion
                    return line + 1, (character if character < len(text) else len(text)) + 1
        line, character = _position_values(position)
        return line + 1, self.column_index(line, character, encoding) + 1

    def model_ranges(
        self, spans: Sequence[Any], encoding: PositionEncoding
    ) -> list[tuple[int, int, int, int] | None]:
        """Each LSP ``Range`` of ``spans`` as the model's 1-based ``(line, column, end line, end column)``,
        in order: None for an entry without a ``start`` object, and an ``end`` that is not an object
        counts as the start. Each position converts as :meth:`model_position` converts it (malformed
        numbers count as 0).

        One call for all the ranges of one file (a popular function's call sites come by the hundred),
        with the common case (well-formed positions on ASCII lines) converted inline.
        """
        lines = self._lines
        count = len(lines)
        all_ascii = self.all_ascii
        out: list[tuple[int, int, int, int] | None] = []
        append = out.append
        for span in spans:
            try:  # the common case: well-formed positions on ASCII lines, converted inline
                start, end = span["start"], span["end"]
                line, character = start["line"], start["character"]
                end_line, end_character = end["line"], end["character"]
                if (
                    type(line) is int
                    and type(character) is int
                    and type(end_line) is int
                    and type(end_character) is int
                    and 0 <= line < count
                    and 0 <= end_line < count
                    and character >= 0
                    and end_character >= 0
                ):
                    text = lines[line]
                    if end_line == line:
                        ascii_ = all_ascii or text.isascii()
                        size = end_size = len(text)
                    else:
                        end_text = lines[end_line]
                        ascii_ = all_ascii or (text.isascii() and end_text.isascii())
                        size, end_size = len(text), len(end_text)
                    if ascii_:  # code units are characters: no conversion
                        append(
                            (
                                line + 1,
                                (character if character < size else size) + 1,
                                end_line + 1,
                                (end_character if end_character < end_size else end_size) + 1,
                            )
                        )
                        continue
            except (KeyError, TypeError):  # not objects, or missing keys: the general rule below
                pass
            append(self._model_range(span, encoding))
        return out

    def _model_range(self, span: Any, encoding: PositionEncoding) -> tuple[int, int, int, int] | None:
        start = span.get("start") if isinstance(span, dict) else None
        if not isinstance(start, dict):
            return None
        end = span.get("end")
        if not isinstance(end, dict):
            end = start
        return (*self.model_position(start, encoding), *self.model_position(end, encoding))


def _position_values(position: Any) -> tuple[int, int]:
    if type(position) is dict:  # the common, well-formed case first (once per location of an answer)
        line, character = position.get("line"), position.get("character")
        if type(line) is int and type(character) is int and line >= 0 and character >= 0:
            return line, character
    if not isinstance(position, dict):
        return 0, 0
    line, character = position.get("line"), position.get("character")
    line = line if isinstance(line, int) and not isinstance(line, bool) and line >= 0 else 0
    character = (
        character if isinstance(character, int) and not isinstance(character, bool) and character >= 0 else 0
    )
    return line, character


class TextSource(Protocol):
    """Where the tools get file text: the document store for open documents, the disk otherwise."""

    def document(self, file: WorkspaceFile) -> Document | None:
        """The file's current text, or None when it cannot be read (too large, gone, not text)."""
        ...


class TextCache:
    """A :class:`TextSource` reading from disk, each file once for the life of the cache.

    Create one per tool call: a file edited on disk between two calls is read afresh by the next one.
    ``overlay`` documents (open in a server, possibly newer than the disk) win over the disk.
    """

    def __init__(
        self,
        overlay: dict[str, Document] | None = None,
        *,
        max_bytes: int = MAX_TEXT_BYTES,
        disk: StampedTexts | None = None,
        stamps: dict[str, tuple[int, int]] | None = None,
    ) -> None:
        self._cache: dict[str, Document | None] = dict(overlay or {})
        self._max_bytes = max_bytes
        self._disk = disk
        #: Disk stamps this tool call already took (the server's re-sync check), by absolute path.
        self._stamps = stamps or {}

    def document(self, file: WorkspaceFile) -> Document | None:
        """The file's text (decoded as UTF-8, undecodable bytes replaced), or None."""
        if file.absolute not in self._cache:
            self._cache[file.absolute] = (
                self._disk.document(file, self._stamps.get(file.absolute))
                if self._disk is not None
                else _read(file, self._max_bytes)
            )
        return self._cache[file.absolute]


def _read(file: WorkspaceFile, max_bytes: int) -> Document | None:
    """The file's text, or None: missing, unreadable, too large, binary, or not a regular file (a FIFO
    is refused at once, never waited on: the snippet or body is simply left out)."""
    try:
        data = read_regular(file.absolute, max_bytes=max_bytes, limit=max_bytes + 1).data
    except OSError:  # NotRegularFile included
        return None
    if data is None:
        return None
    if b"\x00" in data[:8192]:
        return None  # a binary file: no lines to show
    return Document(file, data.decode("utf-8", errors="replace"))


class StampedTexts:
    """Files' texts kept across tool calls, each checked against its disk stamp (mtime in ns, size) on
    every use: one ``stat`` instead of a read, decode and split per file per call, and a file edited on
    disk is read afresh. Bounded: the least recently used texts go first."""

    def __init__(self, *, max_files: int = 2000, max_bytes: int = MAX_TEXT_BYTES) -> None:
        self._entries: dict[str, tuple[tuple[int, int], Document | None]] = {}
        self._max_files = max_files
        self._max_bytes = max_bytes

    def document(self, file: WorkspaceFile, stamp: tuple[int, int] | None = None) -> Document | None:
        """The file's text; ``stamp`` is the file's disk stamp when the caller has just taken it (the
        tool call's re-sync check), which saves the ``stat``."""
        if stamp is None:
            try:
                info = os.stat(file.absolute)
            except OSError:
                self._entries.pop(file.absolute, None)
                return None
            stamp = (info.st_mtime_ns, info.st_size)
        entry = self._entries.pop(file.absolute, None)
        if (
            entry is not None
            and entry[0] == stamp
            and (entry[1] is None or entry[1].file is file or entry[1].file == file)  # `is`: the usual case
        ):
            self._entries[file.absolute] = entry  # most recently used last
            return entry[1]
        document = _read(file, self._max_bytes)
        self._entries[file.absolute] = (stamp, document)
        while len(self._entries) > self._max_files:
            del self._entries[next(iter(self._entries))]
        return document
