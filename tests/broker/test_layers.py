"""The broker's rooms (issue 18, "The house"): no import circle among them (the route knows its two modes
through one small interface, ``modes.BrokerMode``, and no mode imports the route), and the sans-io core
imports no I/O: no asyncio, no sockets, no websockets."""

from __future__ import annotations

import ast
from pathlib import Path

import kandev_lsp.broker

BROKER = Path(kandev_lsp.broker.__file__).parent
PACKAGE = "kandev_lsp.broker"
#: The pure decisions: plain values in, plain values out, time from an injected clock.
SANS_IO = ("leases", "peer", "requests", "contract", "closecodes", "tickets", "config")
IO_MODULES = ("asyncio", "socket", "selectors", "websockets", "h11", "httpx")


def imports_of(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions count too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def broker_graph() -> dict[str, set[str]]:
    modules = {path.stem: path for path in BROKER.glob("*.py") if path.stem != "__init__"}
    return {
        name: {
            other
            for other in modules
            if other != name and any(i == f"{PACKAGE}.{other}" for i in imports_of(path))
        }
        for name, path in modules.items()
    }


def test_no_import_circle_among_the_broker_rooms() -> None:
    graph = broker_graph()
    assert "route" not in {other for name, deps in graph.items() if name != "route" for other in deps}
    circles: list[list[str]] = []

    def visit(name: str, trail: list[str]) -> None:
        for other in sorted(graph[name]):
            if other in trail:
                circles.append([*trail[trail.index(other) :], other])
            else:
                visit(other, [*trail, other])

    for name in sorted(graph):
        visit(name, [name])
    assert circles == []


def test_the_route_reaches_its_modes_through_one_interface() -> None:
    graph = broker_graph()
    assert {"lease_mode", "proxy_mode"} <= graph["route"]
    assert "modes" in graph["route"]
    assert "route" not in graph["lease_mode"] | graph["proxy_mode"]
    assert "lease_mode" not in graph["proxy_mode"] and "proxy_mode" not in graph["lease_mode"]


def test_the_sans_io_core_imports_no_io() -> None:
    offenders = {
        name: sorted(i for i in imports_of(BROKER / f"{name}.py") if i.split(".")[0] in IO_MODULES)
        for name in SANS_IO
    }
    assert {name: found for name, found in offenders.items() if found} == {}
