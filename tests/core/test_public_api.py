"""The package's own names: what the README tells users to import works, and nothing is missing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import kandev_lsp


def test_every_name_in_all_imports() -> None:
    for name in kandev_lsp.__all__:
        assert getattr(kandev_lsp, name) is not None, name
    assert set(kandev_lsp.__all__) <= set(dir(kandev_lsp))


def test_a_long_lived_agent_keeps_one_plugin_host_as_the_readme_says(tmp_path: Path) -> None:
    """README: "A long-lived agent keeps one PluginHost.load() and one Resolver(host)" (issue 17 item 12:
    ``from kandev_lsp import PluginHost`` failed)."""
    gopls = shutil.which("gopls")
    assert gopls, "gopls is not installed: scripts/setup installs it"
    program = (
        "from kandev_lsp import PluginHost, Resolver, Task, TaskEnvironment\n"
        "import kandev_lsp.host\n"
        "assert PluginHost is kandev_lsp.host.PluginHost\n"
        "resolver = Resolver(PluginHost.load())\n"
        f"env = TaskEnvironment.from_agent({{'PATH': {str(Path(gopls).parent)!r}, 'HOME': {str(tmp_path)!r}}})\n"
        f"print(resolver.resolve('go', Task({str(tmp_path)!r}, env)).argv)\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str((gopls, "serve"))
