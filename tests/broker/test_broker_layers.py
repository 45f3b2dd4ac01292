"""The broker's rooms (issue 18, "The house"): no import circle among them (the route knows its two modes
through one small interface, ``modes.BrokerMode``, and no mode imports the route), and the sans-io core
imports no I/O: no asyncio, no sockets, no websockets."""

from __future__ import annotations

import sys
from pathlib import Path

import kandev_lsp.broker

sys.path.insert(0, str(Path(__file__).parents[1] / "core"))  # the house's other floors: one import reader
from test_layers import import_cycles, imported_modules

BROKER = Path(kandev_lsp.broker.__file__).parent
PACKAGE = "kandev_lsp.broker"
#: The pure decisions: plain values in, plain values out, time from an injected clock.
SANS_IO = ("leases", "peer", "requests", "contract", "closecodes", "tickets", "config")
IO_MODULES = ("asyncio", "socket", "selectors", "websockets", "h11", "httpx")


def broker_graph() -> dict[str, set[str]]:
    """Which broker modules each broker module imports (at any depth of the file)."""
    modules = {path.stem: path for path in BROKER.glob("*.py") if path.stem != "__init__"}
    graph = {}
    for name, path in modules.items():
        imported = imported_modules(path)
        graph[name] = {other for other in modules if other != name and f"{PACKAGE}.{other}" in imported}
    return graph


def test_no_import_circle_among_the_broker_rooms() -> None:
    graph = broker_graph()
    assert "route" not in {other for name, deps in graph.items() if name != "route" for other in deps}
    assert import_cycles("broker") == []


def test_the_route_reaches_its_modes_through_one_interface() -> None:
    graph = broker_graph()
    assert {"lease_mode", "proxy_mode"} <= graph["route"]
    assert "modes" in graph["route"]
    assert "route" not in graph["lease_mode"] | graph["proxy_mode"]
    assert "lease_mode" not in graph["proxy_mode"] and "proxy_mode" not in graph["lease_mode"]


def test_the_sans_io_core_imports_no_io() -> None:
    offenders = {
        name: sorted(i for i in imported_modules(BROKER / f"{name}.py") if i.split(".")[0] in IO_MODULES)
        for name in SANS_IO
    }
    assert {name: found for name, found in offenders.items() if found} == {}
