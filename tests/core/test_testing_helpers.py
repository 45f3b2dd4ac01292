"""``kandev_lsp.testing`` imports without pytest; its fixtures still reach a plugin author's pytest run.

pytest is only a test extra of kandev-lsp (issue 7 item 22): a plugin author using another runner, or a
production import of the helpers, must not need it. The fixtures live in ``kandev_lsp.pytest_plugin``,
the module of the ``pytest11`` entry point.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def test_helpers_import_with_pytest_blocked() -> None:
    probe = textwrap.dedent(
        """
        import sys
        sys.modules["pytest"] = None  # any `import pytest` now raises ImportError
        from kandev_lsp.testing import HostPlatform, ProbeStatus, TableProbe, make_plugin_host, make_task
        import kandev_lsp_go
        windows = HostPlatform.parse("windows-x86_64")
        probe = TableProbe({"C:\\\\tools\\\\gopls.exe": ProbeStatus.OK}, windows)
        task = make_task("C:\\\\ws", path=["C:\\\\tools"], home="C:\\\\Users\\\\me", host=windows)
        from kandev_lsp.testing import resolve_in
        print(resolve_in(make_plugin_host(kandev_lsp_go), "go", task, probe).executable)
        """
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "C:\\tools\\gopls.exe"


PLUGIN_TEST = """
import kandev_lsp_go
from kandev_lsp import HostPlatform


def test_fixtures_from_the_entry_point(plugin_host_factory, task_factory, tmp_path):
    host = plugin_host_factory(kandev_lsp_go)
    assert list(host.languages()) == ["go"]
    task = task_factory(path=[str(tmp_path)], home=str(tmp_path), host=HostPlatform.current())
    assert task.env["PATH"] == str(tmp_path) and task.workspace.endswith("workspace")
"""


def test_pytest_fixtures_load_through_the_pytest11_entry_point(tmp_path: Path) -> None:
    (tmp_path / "test_author.py").write_text(PLUGIN_TEST, encoding="utf-8")
    # Plugin autoload on, nothing named with -p: the entry point is what provides the fixtures.
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
