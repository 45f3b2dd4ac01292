"""The six mutating tools on real pyright and typescript-language-server projects (B6.16-B6.29), through
IntelService's dispatch: what a model calls, what lands on disk, what the result says."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from intel_projects import PYTHON, TYPESCRIPT, write
from kandev_lsp import TaskEnvironment
from kandev_lsp.intel.service import IntelService
from kandev_lsp.intel.surface.dispatch import IntelContext
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]

#: A loaded shared machine: cold servers get longer than the tools' 9 s default.
SLOW = IntelContext(deadline=90)
AUTO = IntelContext(deadline=90, auto_approve=True)


def _service(folder: Path, real_servers: RealServers, tag: str) -> IntelService:
    env = TaskEnvironment.from_agent({**real_servers.overrides(), TAG_VARIABLE: tag})
    return IntelService.open([folder], env=env)


def _texts(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): path.read_text()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.suffix in (".py", ".ts")
    }


async def _python_checks(folder: Path, real_servers: RealServers, tag: str) -> None:
    async with _service(folder, real_servers, tag) as service:
        call = service.dispatch
        # Mutations refuse firstMatch (B4.6), before touching anything.
        first = await call(
            "code_rename",
            {"target": {"path": "lib.py", "symbol": "speak"}, "newName": "talk", "firstMatch": True},
            AUTO,
        )
        assert not first["ok"] and "is for reads only" in first["error"], first
        # Without it, the ambiguous symbol answers candidates and changes nothing.
        before = _texts(folder)
        ambiguous = await call(
            "code_rename", {"target": {"path": "lib.py", "symbol": "speak"}, "newName": "talk"}, AUTO
        )
        assert not ambiguous["ok"] and ambiguous["ambiguous"] and len(ambiguous["candidates"]) == 2
        assert "receipt" in ambiguous and _texts(folder) == before
        # A rename the server refuses: pyright has nothing to rename at a builtin (prepareRename).
        refused = await call(
            "code_rename",
            {"target": {"path": "app.py", "line": 5, "matchText": "print"}, "newName": "p"},
            AUTO,
        )
        assert not refused["ok"] and refused["status"] == "refused", refused
        assert refused["error"].startswith("the pyright-langserver server cannot rename at app.py:5:5"), (
            refused
        )
        assert _texts(folder) == before
        # A rename to the name the symbol has changes nothing: no preview to approve, nothing written.
        same = await call(
            "code_rename", {"target": {"path": "lib.py", "symbol": "greet"}, "newName": "greet"}, SLOW
        )
        assert same["ok"] and same["changed"] is False and same["receipt"]["outcome"] == "unchanged", same
        assert "transactionId" not in same and same["summary"] == "no changes", same
        assert _texts(folder) == before
        # Cross-file rename, two steps: preview + transaction, then approval applies it.
        parked = await call(
            "code_rename", {"target": {"path": "lib.py", "symbol": "greet"}, "newName": "salute"}, SLOW
        )
        assert parked["ok"] and parked["needsApproval"], parked
        assert parked["newName"] == "salute" and parked["summary"].startswith("needs approval:"), parked
        assert _texts(folder) == before
        applied = await call("code_rename", {"transactionId": parked["transactionId"], "approve": True}, SLOW)
        assert applied["ok"] and applied["applied"], applied
        assert applied["files"] == 2 and applied["edits"] == 5 and applied["newName"] == "salute", applied
        assert applied["summary"] == "renamed → salute · 2 files", applied["summary"]
        lib, app = (folder / "lib.py").read_text(), (folder / "app.py").read_text()
        assert "def salute(" in lib and 'return salute("helper")' in lib and "greet" not in lib
        assert app.startswith("from lib import Dog, salute\n") and app.count("salute(") == 2, app
        # Insert after a symbol, then replace a method by symbol (auto-approved: text edits only).
        inserted = await call(
            "code_insert",
            {
                "target": {"path": "lib.py", "symbol": "helper"},
                "position": "after",
                "text": '\n\ndef farewell() -> str:\n    return "bye"\n',
            },
            AUTO,
        )
        assert inserted["ok"] and inserted["applied"], inserted
        lib = (folder / "lib.py").read_text()
        assert lib.endswith('    return salute("helper")\n\n\ndef farewell() -> str:\n    return "bye"\n'), (
            lib
        )
        replaced = await call(
            "code_replace",
            {
                "target": {"path": "lib.py", "symbol": "Dog.speak"},
                "text": 'def speak(self) -> str:\n        return "WOOF"\n',
            },
            AUTO,
        )
        assert replaced["ok"] and replaced["replaced"]["line"] == 7, replaced
        lib = (folder / "lib.py").read_text()
        assert '    def speak(self) -> str:\n        return "WOOF"\n\n\ndef salute(' in lib, lib
        assert replaced["receipt"]["diagnostics"]["introduced"] == [], replaced["receipt"]
        # A batch whose targets overlap is refused whole.
        before = _texts(folder)
        overlap = await call(
            "code_replace_batch",
            {
                "edits": [
                    {"target": {"path": "lib.py", "symbol": "salute"}, "text": "def salute(): ...\n"},
                    {"target": {"path": "lib.py", "line": 13, "matchText": "hello"}, "text": "hi"},
                ]
            },
            AUTO,
        )
        assert not overlap["ok"] and "edits[0] and edits[1] overlap in lib.py" in overlap["error"], overlap
        assert "receipt" in overlap and _texts(folder) == before
        # A batch over two files: one atomic change, per-target locations.
        batch = await call(
            "code_replace_batch",
            {
                "edits": [
                    {"target": {"path": "lib.py", "line": 13, "matchText": "hello"}, "text": "hi"},
                    {"target": {"path": "app.py", "line": 7}, "text": "    value: str = salute('again')"},
                ]
            },
            AUTO,
        )
        assert batch["ok"] and batch["applied"] and batch["files"] == 2, batch
        assert [(loc["path"], loc["line"]) for loc in batch["locations"]] == [("lib.py", 13), ("app.py", 7)]
        assert '"hi " + name' in (folder / "lib.py").read_text()
        assert (folder / "app.py").read_text().endswith("    value: str = salute('again')\n")
        # The receipt compared both files' diagnostics (their freshness is the coordinator's tests' part).
        assert batch["receipt"]["diagnostics"]["files"] == 2, batch["receipt"]
        # A replacement is bound to the version it was made against (B6.28): the file edited on disk
        # after the preview makes the approval a conflict, and nothing is written.
        parked = await call(
            "code_replace",
            {
                "target": {"path": "lib.py", "symbol": "farewell"},
                "text": "def farewell() -> str:\n    return 'ciao'\n",
            },
            SLOW,
        )
        assert parked["ok"] and parked["needsApproval"] and parked["replaced"]["line"] == 20, parked
        lib_path = folder / "lib.py"
        lib_path.write_text(lib_path.read_text().replace('"bye"', '"so long"'))
        edited = lib_path.read_text()
        conflict = await call(
            "code_replace", {"transactionId": parked["transactionId"], "approve": True}, SLOW
        )
        assert not conflict["ok"] and conflict["status"] == "conflict", conflict
        assert conflict["conflicts"] == ["lib.py"] and conflict["receipt"]["outcome"] == "conflict"
        assert lib_path.read_text() == edited
        # pyright has no formatter: said plainly, nothing changed.
        unformatted = await call("code_format", {"path": "lib.py"}, AUTO)
        assert not unformatted["ok"] and "does not offer document formatting" in unformatted["error"]


def test_mutating_tools_on_pyright(tmp_path: Path, real_servers: RealServers, tag: str) -> None:
    folder = write(tmp_path / "py", PYTHON)
    asyncio.run(_python_checks(folder, real_servers, tag))


TS_EXTRA = {
    "src/messy.ts": (
        'import { Square } from "./lib";\n'
        'import { greet } from "./lib";\n'
        "export   function   shout( name:string ):string{\n"
        "return greet( name,true )\n"
        "}\n"
    ),
}


async def _typescript_checks(folder: Path, real_servers: RealServers, tag: str) -> None:
    async with _service(folder, real_servers, tag) as service:
        call = service.dispatch
        before = _texts(folder)
        refused = await call(
            "code_rename",
            {"target": {"path": "src/app.ts", "line": 4, "matchText": "console"}, "newName": "terminal"},
            AUTO,
        )
        assert not refused["ok"] and refused["status"] == "refused", refused
        # tsserver's own words, as given (B6.16).
        assert (
            refused["error"]
            == "You cannot rename elements that are defined in the standard TypeScript library."
        )
        assert _texts(folder) == before
        renamed = await call(
            "code_rename", {"target": {"path": "src/lib.ts", "symbol": "Square"}, "newName": "Box"}, AUTO
        )
        assert renamed["ok"] and renamed["applied"] and renamed["files"] == 3, renamed
        assert "class Box implements Shape" in (folder / "src/lib.ts").read_text()
        assert "new Box(2)" in (folder / "src/app.ts").read_text()
        assert 'import { Box } from "./lib";' in (folder / "src/messy.ts").read_text()
        # Organize imports through a code action: list, refuse a prefix, apply by exact title.
        listing = await call(
            "code_actions", {"path": "src/messy.ts", "line": 1, "only": "source.organizeImports"}, SLOW
        )
        assert listing["ok"] and listing["actions"], listing
        action = listing["actions"][0]
        assert action["kind"].startswith("source.organizeImports") and action["hasEdit"], action
        assert action["sourceVersion"] == listing["version"] and len(action["actionId"]) == 12
        by_prefix = await call(
            "code_actions",
            {
                "path": "src/messy.ts",
                "line": 1,
                "only": "source.organizeImports",
                "apply": action["title"][:5],
            },
            AUTO,
        )
        assert not by_prefix["ok"] and "not by prefix" in by_prefix["error"], by_prefix
        # By its exact title (a fresh listing of the same lines and kind finds it).
        organized = await call(
            "code_actions",
            {
                "path": "src/messy.ts",
                "line": 1,
                "only": "source.organizeImports",
                "apply": "Organize Imports",
            },
            AUTO,
        )
        assert organized["ok"] and organized["applied"], organized
        assert organized["action"]["title"] == "Organize Imports", organized
        messy = (folder / "src/messy.ts").read_text()
        assert messy.startswith('import { Box, greet } from "./lib";\nexport'), messy  # combined
        # The file changed since the listing: the old id is stale now.
        stale = await call(
            "code_actions", {"path": "src/messy.ts", "line": 1, "apply": action["actionId"]}, AUTO
        )
        assert not stale["ok"] and "changed since action" in stale["error"], stale
        # Format a line range: only that line changes.
        ranged = await call(
            "code_format", {"path": "src/messy.ts", "range": {"startLine": 3, "endLine": 3}}, AUTO
        )
        assert ranged["ok"] and ranged["applied"], ranged
        lines = (folder / "src/messy.ts").read_text().split("\n")
        assert lines[1] == "export   function   shout( name:string ):string{", lines
        assert lines[2] == "    return greet(name, true)", lines
        # Format with changes, then again without.
        formatted = await call("code_format", {"path": "src/messy.ts"}, AUTO)
        assert formatted["ok"] and formatted["applied"] and formatted["edits"] > 0, formatted
        messy = (folder / "src/messy.ts").read_text()
        assert "export function shout(name: string): string {\n" in messy, messy
        # A refactoring that runs a command: never auto-approved (its diff is incomplete, B6.22); once
        # approved, the command's own workspace/applyEdit goes through the same applier (B6.23).
        listed = await call("code_actions", {"path": "src/messy.ts", "line": 1}, SLOW)
        titles = {a["title"]: a for a in listed["actions"]}
        namespace = titles["Convert named imports to namespace import"]
        assert namespace["hasCommand"] and not namespace["hasEdit"], namespace
        asked = await call(
            "code_actions", {"path": "src/messy.ts", "line": 1, "apply": namespace["actionId"]}, AUTO
        )
        assert asked["ok"] and asked["needsApproval"], asked
        assert any("command" in reason for reason in asked["approvalReasons"]), asked
        ran = await call("code_actions", {"transactionId": asked["transactionId"], "approve": True}, SLOW)
        assert ran["ok"] and ran["receipt"]["commands"][0]["status"] == "ok", ran
        messy = (folder / "src/messy.ts").read_text()
        assert messy.startswith('import * as lib from "./lib";\n') and "lib.greet(" in messy, messy
        assert ran["receipt"]["textEdits"] == 2 and ran["summary"] == "applied 2 edits in 1 file", ran
        assert ran["receipt"]["commands"][0]["serverEdits"] == 2
        disabled = [a for a in listed["actions"] if "disabled" in a]
        assert disabled and not any(a.get("resolvedOnApply") for a in disabled), disabled
        again = await call("code_format", {"path": "src/messy.ts"}, AUTO)
        assert again["ok"] and again["changed"] is False and again["summary"] == "no changes", again
        assert (folder / "src/messy.ts").read_text() == messy


def test_mutating_tools_on_typescript_language_server(
    tmp_path: Path, real_servers: RealServers, tag: str
) -> None:
    folder = write(tmp_path / "ts", {**TYPESCRIPT, **TS_EXTRA})
    asyncio.run(_typescript_checks(folder, real_servers, tag))
