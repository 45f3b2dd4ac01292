"""LSP base-protocol framing for the stand-in language servers the tests start (not a test module).

The stand-ins (``broker/recorder_lsp.py``, ``stream/fake_lsp.py``, ``lsp/fake_server.py``) run as
processes of their own, some under ``python -IS`` (no site, no ``PYTHONPATH``, no script folder on
``sys.path``), so they cannot reach the test packages through conftest: each one puts this folder on its
``sys.path`` itself and imports this module. The framing is written apart from kandev_lsp's own on
purpose: a stand-in sharing the code under test could not catch that code's framing mistakes.

Two stand-ins also run as copies written to another folder (an executable in a test's temporary folder,
a release asset downloaded and installed): :func:`copied_source` gives the source for such a copy.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, BinaryIO

#: The expression each stand-in finds this folder with; :func:`copied_source` replaces it in copies.
FOLDER_EXPRESSION = "Path(__file__).resolve().parent.parent"


def write_raw(data: bytes) -> None:
    """Write ``data`` to stdout as it is, framed or not (a fault test may send bytes that are no frame)."""
    out = sys.stdout.buffer  # looked up here, not at import: the test process imports this module too
    out.write(data)
    out.flush()


def write_body(body: bytes) -> None:
    """Send ``body`` as one frame, as it is (a fault test may send a body that is not JSON)."""
    write_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)


def send(message: dict[str, Any]) -> None:
    """Send one JSON-RPC message."""
    write_body(json.dumps(message).encode())


def read_frame(stream: BinaryIO) -> bytes | None:
    """The body of the next frame on ``stream``, or None at the end of the input."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line == b"\r\n":
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    assert length is not None
    return stream.read(length)


def copied_source(script: Path) -> str:
    """``script``'s source for a copy that runs from another folder: there, the script's own folder is not
    next to this module, so the copy names this folder by its absolute path instead."""
    source = script.read_text(encoding="utf-8")
    assert FOLDER_EXPRESSION in source, f"{script} does not import standin_framing the usual way"
    return source.replace(FOLDER_EXPRESSION, repr(str(Path(__file__).resolve().parent)), 1)
