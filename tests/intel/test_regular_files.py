"""A FIFO (or a device) in the workspace is refused at once, never waited on (security finding 5).

Before, every read site opened files with a plain ``open()``: a FIFO's open waits for a writer forever, so
``code_symbols`` on ``testdata/fifo.go`` never answered, its thread stayed behind, and the server's
document lock it held stalled every later call. Each test here reads a real FIFO in a daemon thread and
fails when the read has not returned within a few seconds (then it unblocks the thread by opening the
FIFO's writing end, so a regression fails instead of hanging the run)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kandev_lsp.intel.edits.commit import DiskFileSystem, disk_text
from kandev_lsp.intel.edits.coordinator import _digest
from kandev_lsp.intel.errors import EditRejected
from kandev_lsp.intel.files.regular import NOT_REGULAR, NotRegularFile, read_regular
from kandev_lsp.intel.files.text import StampedTexts, TextCache
from kandev_lsp.intel.files.workspace import Workspace
from kandev_lsp.intel.runtime.pool import _read as sync_read

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")

#: Seconds a read may take before it counts as hanging.
PATIENCE = 5.0


def _unblock(fifo: Path) -> None:
    """Open the FIFO's writing end and close it: a reader blocked in ``open`` (or ``read``) gets EOF."""
    with contextlib.suppress(OSError):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def _within(fifo: Path, read: Callable[[], Any]) -> Any:
    """``read()``'s result (or the exception it raised), failing when it blocks past :data:`PATIENCE`."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = read()
        except BaseException as error:  # handed to the test
            box["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(PATIENCE)
    if thread.is_alive():
        _unblock(fifo)
        thread.join(PATIENCE)
        pytest.fail(f"reading a FIFO blocked for more than {PATIENCE} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    (tmp_path / "main.go").write_text("package main\n")
    (tmp_path / "testdata").mkdir()
    os.mkfifo(tmp_path / "testdata" / "fifo.go")
    return Workspace([tmp_path])


def test_the_shared_reader_refuses_a_fifo_and_reads_a_file(workspace: Workspace) -> None:
    root = Path(workspace.roots[0].path)
    fifo = root / "testdata" / "fifo.go"
    with pytest.raises(NotRegularFile) as refused:
        _within(fifo, lambda: read_regular(str(fifo)))
    assert refused.value.strerror == NOT_REGULAR
    read = read_regular(str(root / "main.go"))
    assert read.data == b"package main\n" and read.stamp[1] == len(read.data)
    assert read_regular(str(root / "main.go"), max_bytes=4).data is None  # too large: not read
    assert read_regular(str(root / "main.go"), limit=7).data == b"package"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_a_device_is_refused_too() -> None:
    """/dev/zero never ends: reading it whole would never return (a link to it from inside a workspace is
    refused earlier, as a path leading out; the reader refuses it on its own as well)."""
    with pytest.raises(NotRegularFile):
        read_regular("/dev/zero")


def test_the_document_sync_read_refuses_a_fifo(workspace: Workspace) -> None:
    fifo = Path(workspace.roots[0].path) / "testdata" / "fifo.go"
    with pytest.raises(NotRegularFile):
        _within(fifo, lambda: sync_read(str(fifo)))


def test_snippets_of_a_fifo_are_left_out(workspace: Workspace) -> None:
    """A server answer pointing into a FIFO: no text, so the snippet or body is omitted."""
    file = workspace.resolve("testdata/fifo.go")
    fifo = Path(file.absolute)
    assert _within(fifo, lambda: TextCache().document(file)) is None
    assert _within(fifo, lambda: TextCache(disk=StampedTexts()).document(file)) is None
    assert TextCache().document(workspace.resolve("main.go")) is not None


def test_the_applier_refuses_a_fifo(workspace: Workspace) -> None:
    file = workspace.resolve("testdata/fifo.go")
    fifo = Path(file.absolute)
    with pytest.raises(EditRejected) as rejected:
        _within(fifo, lambda: disk_text(file))
    assert rejected.value.message == f"cannot read testdata/fifo.go: {NOT_REGULAR}"
    assert _within(fifo, lambda: DiskFileSystem().read_bytes(str(fifo))) is None
    assert _within(fifo, lambda: _digest(str(fifo))) is None  # a conflict at revalidation, never a hang


# --- the tool call, on real gopls --------------------------------------------------------------------


GOPLS = "/usr/bin/gopls"


async def _symbols_beside_a_fifo(root: Path, tag: str) -> dict[str, Any]:
    from kandev_lsp import TaskEnvironment
    from kandev_lsp.intel.service import IntelService
    from kandev_lsp.intel.surface.dispatch import IntelContext
    from stream_testkit import TAG_VARIABLE

    home = root.parent / "home"
    home.mkdir()
    env = TaskEnvironment.from_agent({"HOME": str(home), "PATH": "/usr/bin:/bin", TAG_VARIABLE: tag})
    out: dict[str, Any] = {}
    async with IntelService.open([root], env=env) as service:
        warm = await service.dispatch("code_symbols", {"path": "main.go"}, IntelContext(deadline=90))
        assert warm["ok"], warm
        started = time.monotonic()
        fifo, main = await asyncio.wait_for(
            asyncio.gather(
                service.dispatch("code_symbols", {"path": "testdata/fifo.go"}, IntelContext(deadline=9)),
                service.dispatch("code_symbols", {"path": "main.go"}, IntelContext(deadline=9)),
            ),
            30,
        )
        out.update(fifo=fifo, main=main, seconds=time.monotonic() - started)
    return out


@pytest.mark.real_server
@pytest.mark.skipif(not os.path.exists(GOPLS), reason="Debian's gopls is not installed")
@pytest.mark.timeout(120)
def test_code_symbols_on_a_fifo_answers_at_once(tmp_path: Path, tag: str) -> None:
    root = tmp_path / "ws"
    (root / "testdata").mkdir(parents=True)
    (root / "go.mod").write_text("module example.com/demo\n\ngo 1.19\n")
    (root / "main.go").write_text("package main\n\nfunc main() {}\n\nfunc helper() int { return 1 }\n")
    fifo = root / "testdata" / "fifo.go"
    os.mkfifo(fifo)
    # A regression blocks a thread in open(): the calls' 30 s wait_for fails the test, and this watchdog
    # then releases the thread so the service can shut down (instead of the run hanging).
    watchdog = threading.Timer(35, _unblock, [fifo])
    watchdog.start()
    try:
        out = asyncio.run(_symbols_beside_a_fifo(root, tag))
    finally:
        watchdog.cancel()
        _unblock(fifo)
    assert not out["fifo"]["ok"] and out["fifo"]["error"] == f"testdata/fifo.go is {NOT_REGULAR}", out
    assert out["main"]["ok"] and {"main", "helper"} <= {s["name"] for s in out["main"]["symbols"]}, out
    assert out["seconds"] < 9, out  # neither call waited on the FIFO
