"""Debian's headless Chromium for the page tests (not a test module): launched with a fresh profile in a
process group of its own, reached over the DevTools port it writes to ``DevToolsActivePort``, and always
reaped: the whole group is killed, then any process still carrying the launch's tag.

The flags keep it off the network: this machine's closed network refuses Chromium's background
connections (component updates, sync, QUIC, ...), and waiting on them slows every start. The process
lives as long as its test module; each test connects its own :class:`cdp.Cdp` (on its own event loop)
and opens its pages in browser contexts of their own, so no two tests share cookies or storage."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

from kandev_lsp.testing import processes_tagged

CHROMIUM = "/usr/bin/chromium"
BROWSER_TAG = "KANDEV_TEST_BROWSER_TAG"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--mute-audio",
    "--remote-debugging-port=0",
)
START_DEADLINE_S = 90  # a fresh machine's first start builds its font cache (~9 s measured)


class Chromium:
    """A running headless Chromium: :attr:`devtools_url`, and :meth:`close` to reap it."""

    def __init__(self, workdir: Path) -> None:
        self.profile = workdir / f"chromium-profile-{uuid.uuid4().hex[:8]}"
        self.profile.mkdir(parents=True)
        self.log = workdir / "chromium.log"
        self.tag = uuid.uuid4().hex
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(
                [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=sink,
                env={**os.environ, BROWSER_TAG: self.tag},
                start_new_session=True,
            )
        try:
            self.devtools_url = self._devtools_url()
        except BaseException:
            self.close()
            raise

    def _devtools_url(self) -> str:
        active = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.process.returncode}: {self._log_tail()}")
            with contextlib.suppress(FileNotFoundError):
                lines = active.read_text().split("\n")
                if len(lines) >= 2 and lines[0].isdigit() and lines[1].startswith("/devtools/"):
                    return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            time.sleep(0.05)
        raise RuntimeError(
            f"chromium wrote no DevToolsActivePort in {START_DEADLINE_S} s: {self._log_tail()}"
        )

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]

    def close(self) -> None:
        """Kill the process group, wait for it, then anything still tagged; remove the profile."""
        for signum in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signum)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
                break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # helpers of the group outliving the browser
        self.process.wait()
        deadline = time.monotonic() + 10
        while (left := processes_tagged(BROWSER_TAG, self.tag)) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        shutil.rmtree(self.profile, ignore_errors=True)
        assert not processes_tagged(BROWSER_TAG, self.tag), "a chromium process outlived the tests"
