"""Answers that describe what was asked (issue 20 items 4-11), on real pyright and
typescript-language-server: two sessions, a Python project with a nested one and a mixed workspace.

Before the fixes, each assertion marked "before:" failed as it says.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from intel_projects import write
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.dispatch import IntelContext
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]

SLOW = IntelContext(deadline=60)

NESTED = {
    # click's layout: a setup.py at the top (no pyproject.toml), the sources under src/.
    "setup.py": "from setuptools import setup\n\nsetup()\n",
    "src/pkg/__init__.py": "",
    "src/pkg/core.py": (
        "class Base:\n"
        "    def invoke(self) -> str:\n"
        '        return "base"\n\n\n'
        "class Multi(Base):\n"
        "    def run(self) -> str:\n"
        '        return "multi"\n\n\n'
        "class Group(Multi):\n"
        "    def add(self) -> None:\n"
        "        pass\n\n\n"
        "def make_str(value: object) -> str:\n"
        "    return str(value)\n"
    ),
    "src/pkg/use.py": "from pkg.core import make_str\n\nA = make_str(1)\nB = make_str(2)\n",
    # A nested project: its own setup.py inside the top one's tree.
    "examples/demo/setup.py": "from setuptools import setup\n\nsetup()\n",
    "examples/demo/demo.py": (
        "from pkg.core import Group, make_str\n\n\n"
        "def say(x: str) -> str:\n"
        "    return x\n\n\n"
        'print(say("world"))\n'
        "print(make_str(Group()))\n"
    ),
}


def _service(folder: Path, real_servers: RealServers, tag: str) -> IntelService:
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    return IntelService.open([folder], env=env)


async def _python(folder: Path, real_servers: RealServers, tag: str) -> None:
    async with _service(folder, real_servers, tag) as service:

        async def call(tool: str, payload: dict[str, Any]) -> dict[str, Any]:
            return await service.dispatch(tool, payload, SLOW)

        demo = "examples/demo/demo.py"
        # Item 4: the nested project is served by the top project's pyright (before: its own, rooted at
        # examples/demo, where `pkg` does not resolve: "no definitions").
        definition = await call(
            "code_navigate",
            {"target": {"path": demo, "line": 9, "matchText": "make_str"}, "kind": "definition"},
        )
        assert [g["path"] for g in definition["files"]] == ["src/pkg/core.py"], definition
        # An answer that withholds results says so (before: "no definitions").
        builtin = await call(
            "code_navigate", {"target": {"path": demo, "line": 8, "matchText": "print"}, "kind": "definition"}
        )
        assert builtin["ok"] and builtin["totalFound"] == 0, builtin
        assert builtin["summary"] == "no definitions · 2 definitions outside the workspace withheld", builtin

        # Item 5: hover inside a call describes the target (before: print's signature, bolded, first).
        hover = await call("code_hover", {"target": {"path": demo, "line": 8, "matchText": "say"}})
        assert hover["ok"] and hover["summary"].startswith("(function) def say(x: str) -> str"), hover
        assert hover["signatureOf"] == "enclosingCall" and "**" not in hover["signature"], hover
        assert hover["text"].startswith("(function) def say"), hover
        assert hover["range"]["line"] == 8, hover  # B6.10: the server's range, in model coordinates

        # Item 7: never available is not "not ready yet" (before: both "unavailable").
        implementation = await call(
            "code_navigate",
            {"target": {"path": "src/pkg/core.py", "symbol": "Base"}, "kind": "implementation"},
        )
        assert (implementation["ok"], implementation["status"]) == (False, "unsupported"), implementation

        # Item 8: an inherited member resolves through the class's bases (before: "not found").
        inherited = await call(
            "code_navigate",
            {"target": {"path": "src/pkg/core.py", "symbol": "Group.invoke"}, "kind": "references"},
        )
        assert inherited["ok"], inherited
        assert (inherited["target"]["symbol"], inherited["target"]["confidence"]) == (
            "Base.invoke",
            "inherited",
        )
        assert inherited["summary"].endswith(" · of Base.invoke (inherited)"), inherited["summary"]

        # Item 10: counts cover every file (before: "5 references · 1 file (1 of 5 shown)").
        refs = await call(
            "code_navigate",
            {"target": {"path": "src/pkg/core.py", "symbol": "make_str"}, "kind": "references", "limit": 1},
        )
        assert refs["summary"] == "6 references · 3 files (1 of 6 shown; 2 of 3 files not shown)", refs

        # Item 11: the receipt of a plain file edit (before: `since` was refused as an unknown field).
        baseline = await call("code_diagnostics", {"path": demo})
        assert baseline["status"] == "current" and baseline["counts"]["error"] == 0, baseline
        core = folder / "src" / "pkg" / "core.py"
        original = core.read_text()
        core.write_text(original.replace("(value: object)", "(value: object, extra: int)"))
        receipt = await call("code_diagnostics", {"since": baseline["baselineId"]})
        delta = receipt["delta"]
        assert delta["status"] == "current", delta
        # The open importer pyright re-checked; use.py, never opened, is not checked by pyright (an
        # activateWorkspace read with since widens it, below).
        assert [(e["path"], e["line"]) for e in delta["introduced"]] == [(demo, 9)], delta
        assert "1 introduced, 0 resolved" in receipt["summary"], receipt["summary"]
        wide = await call("code_diagnostics", {"since": baseline["baselineId"], "activateWorkspace": True})
        introduced = sorted((e["path"], e["line"]) for e in wide["delta"]["introduced"])
        assert introduced == [(demo, 9), ("src/pkg/use.py", 3), ("src/pkg/use.py", 4)], wide["delta"]
        # use.py was never open when the baseline was taken: compared against none, and said so
        assert wide["delta"]["withoutBaseline"] == ["src/pkg/use.py"], wide["delta"]
        assert "withoutBaseline" not in receipt["delta"], receipt["delta"]
        core.write_text(original)
        back = await call("code_diagnostics", {"since": "last"})
        assert (back["delta"]["counts"]["resolved"], back["delta"]["counts"]["introduced"]) == (3, 0), back


def test_python_answers_describe_the_target(tmp_path: Path, real_servers: RealServers, tag: str) -> None:
    folder = write(tmp_path / "nested", NESTED).resolve()
    asyncio.run(_python(folder, real_servers, tag))


MIXED = {
    "tsconfig.json": '{"compilerOptions": {"strict": true, "target": "es2020"}, "include": ["src"]}\n',
    "pyproject.toml": '[project]\nname = "mixed"\nversion = "0"\n',
    "lib.py": "def shared_greeting() -> str:\n    return 'hi'\n",
    "src/make.ts": (
        "export interface Inst {\n"
        "  _zod: { parse: (payload: unknown) => unknown };\n"
        "}\n\n"
        "export function make<T>(name: string, init: (inst: Inst) => void): T {\n"
        "  const inst: Inst = { _zod: { parse: (payload) => payload } };\n"
        "  init(inst);\n"
        "  return inst as T;\n"
        "}\n"
    ),
    "src/schemas.ts": (
        'import { make } from "./make";\n\n'
        "export function sharedGreeting(): string {\n"
        '  return "hi";\n'
        "}\n\n"
        'export const Thing = make("Thing", (inst) => {\n'
        "  inst._zod.parse = (payload: unknown) => {\n"
        "    return payload;\n"
        "  };\n"
        "});\n\n"
        "export class Other {\n"
        "  parse(x: string): string {\n"
        "    return x;\n"
        "  }\n"
        "}\n"
        "export const uses = [Other, Thing];\n"
    ),
}


async def _mixed(folder: Path, real_servers: RealServers, tag: str) -> None:
    async with _service(folder, real_servers, tag) as service:

        async def call(tool: str, payload: dict[str, Any]) -> dict[str, Any]:
            return await service.dispatch(tool, payload, SLOW)

        # Item 9: a Python call first starts pyright alone; workspace symbols still ask TypeScript too
        # (before: only the running pyright was asked, and the TypeScript match vanished).
        assert (await call("code_symbols", {"path": "lib.py"}))["ok"]
        symbols = await call("code_symbols", {"query": "shared"})
        assert symbols["ok"], symbols
        assert {s["path"] for s in symbols["symbols"]} == {"lib.py", "src/schemas.ts"}, symbols
        assert symbols["languages"] == ["python", "typescript"], symbols
        # Both servers asked and neither answered (the call's deadline spent): not ready, never an
        # empty ok answer (before: ok with no symbols when more than one server failed).
        late = await service.dispatch("code_symbols", {"query": "shared"}, IntelContext(deadline=0.001))
        assert not late["ok"] and late["status"] in ("timeout", "unavailable"), late

        # Item 6: every candidate id of an ambiguous answer resolves to its name (before: the callback's
        # assigned arrow function resolved at its "(" and its references were empty).
        ambiguous = await call(
            "code_navigate", {"target": {"path": "src/schemas.ts", "symbol": "parse"}, "kind": "references"}
        )
        assert not ambiguous["ok"] and ambiguous["ambiguous"], ambiguous
        text = (folder / "src" / "schemas.ts").read_text().splitlines()
        for candidate in ambiguous["candidates"]:
            by_id = await call(
                "code_navigate",
                {"target": {"path": "src/schemas.ts", "symbol": candidate["id"]}, "kind": "references"},
            )
            assert by_id["ok"] and by_id["totalFound"] > 0, (candidate, by_id)
            target = by_id["target"]
            assert target["line"] == candidate["line"] and target["id"] == candidate["id"], (
                candidate,
                target,
            )
            assert text[target["line"] - 1][target["column"] - 1 :].startswith("parse"), (candidate, target)


def test_mixed_workspace_symbols_and_candidate_ids(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = write(tmp_path / "mixed", MIXED).resolve()
    asyncio.run(_mixed(folder, real_servers, tag))
