"""The house's floors: the process layer and the installers stand on the ground floor (``fileprobe``,
``executables``, ``taskenv``, ``platform``), never on the resolver's rules (issue 8, "The house")."""

from __future__ import annotations

import ast
from pathlib import Path

import kandev_lsp
import pytest

CORE = Path(kandev_lsp.__file__).parent
RESOLVER_RULES = {"kandev_lsp.discovery", "kandev_lsp.resolver"}


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (imports inside functions count too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("package", ["process", "install"])
def test_process_and_install_never_import_the_resolvers_rules(package: str) -> None:
    files = sorted((CORE / package).glob("*.py"))
    assert files
    offenders = {
        str(path.relative_to(CORE)): sorted(imported_modules(path) & RESOLVER_RULES)
        for path in files
        if imported_modules(path) & RESOLVER_RULES
    }
    assert offenders == {}


def test_the_ground_floor_imports_nothing_above_it() -> None:
    for name in ("fileprobe.py", "executables.py"):
        ours = {m.split(".")[1] for m in imported_modules(CORE / name) if m.startswith("kandev_lsp.")}
        assert ours <= {"fileprobe", "platform", "taskenv", "errors", "_values"}, name
