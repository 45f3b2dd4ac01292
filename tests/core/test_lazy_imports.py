"""What ``kandev-lsp run`` imports before it can spawn the editor's server (issue 7 item 25)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from kandev_lsp._lazy import LazyModule


def test_lazy_module_imports_on_first_attribute_use_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lazy_target_mod.py").write_text("import time\ntime.sleep(0.05)\nLOADS = [1]\nVALUE = 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_target_mod", raising=False)
    module = LazyModule("lazy_target_mod")
    assert "lazy_target_mod" not in sys.modules
    seen: list[int] = []
    threads = [threading.Thread(target=lambda: seen.append(module.VALUE)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [7, 7, 7, 7]
    assert sys.modules["lazy_target_mod"].LOADS == [1]  # executed once, whatever thread came first


def test_the_run_path_does_not_import_psutil() -> None:
    """psutil only stops process trees, secrets (hmac, hashlib, random) was one call to os.urandom:
    importing them before the spawn made every editor wait for them."""
    probe = (
        "import sys\n"
        "import kandev_lsp.cli.run, kandev_lsp.process, kandev_lsp.session, kandev_lsp.settings\n"
        "import kandev_lsp.stream.bridge, kandev_lsp.stream.stdio\n"
        "print(sorted(m for m in ('psutil', 'platformdirs', 'secrets', 'random') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
