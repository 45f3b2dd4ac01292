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


def import_cycles(package: str) -> list[list[str]]:
    """The circles among ``package``'s own modules (strongly connected groups of two or more), where an
    import at any depth counts, ``TYPE_CHECKING`` ones included: a circle there is still a circle to read."""
    files = {f"kandev_lsp.{package}.{path.stem}": path for path in (CORE / package).glob("*.py")}
    files.pop(f"kandev_lsp.{package}.__init__")
    graph = {name: sorted((imported_modules(path) & files.keys()) - {name}) for name, path in files.items()}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(name: str) -> None:  # Tarjan's strongly connected components
        order[name] = low[name] = len(order)
        stack.append(name)
        for other in graph[name]:
            if other not in order:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in stack:
                low[name] = min(low[name], order[other])
        if low[name] == order[name]:
            group = [stack.pop()]
            while group[-1] != name:
                group.append(stack.pop())
            if len(group) > 1:
                cycles.append(sorted(group))

    for name in sorted(graph):
        if name not in order:
            visit(name)
    return cycles


@pytest.mark.parametrize("package", ["install", "process"])
def test_the_install_and_process_packages_import_in_one_direction(package: str) -> None:
    # install/: the registry imports the kinds, the kinds implement install/kinds.py and never import the
    # registry; process/: _owned hands children to the supervisor, which knows them only as Stoppable.
    assert import_cycles(package) == []
