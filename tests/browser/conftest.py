"""The page tests drive web/ in Debian's headless Chromium over the DevTools protocol (``cdp``), against
the shipped ``kandev-lsp serve`` and ``kandev-lsp broker`` with a real pyright (``pagekit``). One Chromium
serves each test module (closed before the next room runs: other rooms assert that the suite
leaves no child process); every test opens its pages in browser contexts of their own, and every process a
language server runs in carries the test's tag: one left running fails the test (``pagekit.reap``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from chromium import CHROMIUM, Chromium


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    if not os.access(CHROMIUM, os.X_OK):  # a failure, not a skip: scripts/setup installs it
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup (as root it installs Debian's chromium)")
    browser = Chromium(tmp_path_factory.mktemp("chromium"))
    try:
        yield browser
    finally:
        browser.close()
