"""install/verify.py speaks LSP through the shared endpoint: a server whose only output is JSON-RPC garbage
is reported as not LSP when it never answers initialize."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from kandev_lsp import LanguageSpec, Task, TaskEnvironment
from kandev_lsp.install.errors import VerificationError
from kandev_lsp.install.verify import verify_server

GARBLED = """
import sys, time
body = b"{not json"
sys.stdout.buffer.write(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
sys.stdout.buffer.flush()
time.sleep(30)
"""


def test_garbage_then_silence_is_reported_as_not_lsp(tmp_path: Path, tag: str) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "ws").mkdir()
    (tmp_path / "scratch").mkdir()
    server = tmp_path / "bin" / "garbled-lsp"
    server.write_text(f"#!{sys.executable}\n{GARBLED}")
    server.chmod(0o755)
    spec = LanguageSpec(id="garbled", display_name="Garbled", command="garbled-lsp", version_args=())
    task = Task(
        str(tmp_path / "ws"), TaskEnvironment.from_agent({"PATH": "/usr/bin:/bin", "KANDEV_TEST_TAG": tag})
    )
    with pytest.raises(
        VerificationError, match=r"within 1 s \(it wrote 1 message\(s\) that are not JSON-RPC"
    ):
        asyncio.run(verify_server(spec, str(server), task, cwd=str(tmp_path / "scratch"), timeout=1.0))
