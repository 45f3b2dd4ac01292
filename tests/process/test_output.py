"""Captured output: bounded, never blocking the child, head and tail kept, streamed to a callback."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import pytest
from kandev_lsp.process import DEFAULT_OUTPUT_LIMIT, run, spawn
from kandev_lsp.process._output import OutputCapture

if TYPE_CHECKING:
    from conftest import Kit

MIB = 1 << 20

FLOOD_STDERR = """
    sys.stderr.buffer.write(b"HEAD-MARK\\n" + b"x" * (5 * 1024 * 1024) + b"\\nTAIL-MARK\\n")
    sys.stderr.flush()
"""


def test_five_mib_on_stderr_neither_blocks_nor_is_kept_whole(kit: Kit) -> None:
    started = time.monotonic()
    result = asyncio.run(run(kit.script(FLOOD_STDERR), env=kit.env, cwd=kit.cwd, timeout=30))
    elapsed = time.monotonic() - started

    assert result.returncode == 0
    assert elapsed < 10
    assert result.truncated
    assert len(result.output.encode()) <= DEFAULT_OUTPUT_LIMIT == MIB
    assert result.output.startswith("HEAD-MARK\nxxx")
    assert result.output.endswith("xxx\nTAIL-MARK\n")
    assert "bytes of output left out" in result.output
    assert len(result.output) > MIB - 100  # the cap is used, not wasted


def test_a_child_flooding_stderr_while_the_caller_reads_stdout_is_not_blocked(kit: Kit) -> None:
    script = kit.script(
        """
        for _ in range(80):
            sys.stderr.buffer.write(b"e" * 65536)
        sys.stderr.flush()
        print("done", flush=True)
        """
    )

    async def main() -> tuple[bytes, bool, int]:
        process = await spawn(script, env=kit.env, cwd=kit.cwd, stdout="pipe", output_limit=4096)
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 20)
        await process.stop()
        return line, process.output_truncated, len(process.captured_output())

    line, truncated, kept = asyncio.run(main())
    assert line == b"done\n"
    assert truncated and kept <= 4096


def test_stdout_and_stderr_interleave_in_the_order_written(kit: Kit) -> None:
    script = kit.script(
        """
        for i in range(5):
            print(f"out {i}", flush=True)
            print(f"err {i}", file=sys.stderr, flush=True)
        """
    )
    result = asyncio.run(run(script, env=kit.env, cwd=kit.cwd, timeout=30))
    expected = "".join(f"out {i}\nerr {i}\n" for i in range(5))
    assert result.output == expected and not result.truncated


def test_on_output_sees_every_byte_as_text_in_order(kit: Kit) -> None:
    script = kit.script(
        """
        for i in range(2000):
            sys.stdout.write(f"line {i} é\\n")
        """
    )
    chunks: list[str] = []
    result = asyncio.run(
        run(script, env=kit.env, cwd=kit.cwd, timeout=30, output_limit=1000, on_output=chunks.append)
    )
    assert "".join(chunks) == "".join(f"line {i} é\n" for i in range(2000))
    assert result.truncated and len(result.output.encode()) <= 1000


def test_a_failing_on_output_stops_the_run_and_raises(kit: Kit) -> None:
    pidfile = kit.pidfile("talker")
    script = kit.script(
        """
        publish(sys.argv[1], os.getpid())
        while True:
            print("tick", flush=True)
            time.sleep(0.01)
        """
    )

    def explode(text: str) -> None:
        raise RuntimeError("progress display broke")

    with pytest.raises(RuntimeError, match="progress display broke"):
        asyncio.run(run([*script, pidfile], env=kit.env, cwd=kit.cwd, timeout=30, on_output=explode))
    assert kit.alive() == []


# OutputCapture on its own -------------------------------------------------------------------------


def test_output_within_the_limit_is_kept_whole() -> None:
    capture = OutputCapture(100)
    for piece in (b"a" * 40, b"b" * 40, b"c" * 20):
        capture.feed(piece)
    assert not capture.truncated
    assert capture.text() == "a" * 40 + "b" * 40 + "c" * 20


def test_over_the_limit_keeps_head_quarter_and_tail_with_a_note() -> None:
    capture = OutputCapture(1000)
    data = b"H" * 250 + b"m" * 5000 + b"T" * 750
    for start in range(0, len(data), 333):  # uneven chunks
        capture.feed(data[start : start + 333])
    rendered = capture.text()
    assert capture.truncated and capture.total == len(data)
    kept_tail = 750 - 64  # the room reserved for the note comes out of the tail
    omitted = len(data) - 250 - kept_tail
    assert rendered == "H" * 250 + f"\n[... {omitted} bytes of output left out ...]\n" + "T" * kept_tail
    assert len(rendered.encode()) <= 1000


def test_bytes_that_are_not_utf8_are_replaced_not_fatal() -> None:
    capture = OutputCapture(1000)
    capture.feed(bytes(range(256)) * 40)
    text = capture.text()
    assert "\ufffd" in text and len(text) <= 1000


def test_a_chunk_larger_than_the_tail_keeps_its_end() -> None:
    capture = OutputCapture(400)
    capture.feed(b"a" * 100 + b"b" * 10_000 + b"END")
    text = capture.text()
    assert text.startswith("a" * 100) and text.endswith("bEND") and len(text) <= 400


def test_tiny_limits_hold_without_a_note() -> None:
    capture = OutputCapture(10)
    capture.feed(b"0123456789abcdef")
    assert capture.text() == "01" + "89abcdef"
    zero = OutputCapture(0)
    zero.feed(b"anything")
    assert zero.text() == "" and zero.truncated


def test_a_character_split_across_chunks_reaches_the_callback_whole() -> None:
    seen: list[str] = []
    capture = OutputCapture(100, seen.append)
    encoded = "é€".encode()
    for byte in encoded:
        capture.feed(bytes([byte]))
    capture.finish()
    assert "".join(seen) == "é€"
