"""Feeders shared by the protocol tests: every case runs with its bytes fed whole and byte by byte."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from kandev_lsp.protocol import NEED_DATA, FrameDecoder

Chunker = Callable[[bytes], Iterator[bytes]]


def whole(data: bytes) -> Iterator[bytes]:
    yield data


def bytewise(data: bytes) -> Iterator[bytes]:
    for index in range(len(data)):
        yield data[index : index + 1]


class Feeder:
    """Feeds bytes to a decoder chunk by chunk, draining after each chunk as a bridge's read loop does.

    Frames land in ``frames`` as they come, so a test still sees the frames that preceded an error.
    After every drain it checks the decoder's promise that what it keeps stays within its limits.
    """

    def __init__(self, chunker: Chunker) -> None:
        self.chunker = chunker
        self.frames: list[bytes] = []

    def __call__(self, decoder: FrameDecoder, data: bytes, *, eof: bool = False) -> list[bytes]:
        limits = decoder.limits
        for chunk in self.chunker(data):
            decoder.receive_data(chunk)
            self._drain(decoder)
            assert decoder.buffered < limits.headers_total + limits.body
        if eof:
            decoder.receive_eof()
            self._drain(decoder)
        return self.frames

    def _drain(self, decoder: FrameDecoder) -> None:
        while (frame := decoder.next_frame()) is not NEED_DATA:
            self.frames.append(frame)


@pytest.fixture(params=[whole, bytewise], ids=["whole", "bytewise"])
def feed(request: pytest.FixtureRequest) -> Feeder:
    chunker: Chunker = request.param
    return Feeder(chunker)
