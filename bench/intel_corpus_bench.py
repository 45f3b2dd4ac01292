"""Code intelligence on real projects nobody tuned to (issue 20, "Done means"): click 8.1.7 (its PyPI
sdist) and zod 4.6.7 (its npm package), measured in one run.

Run: ``.venv/bin/python bench/intel_corpus_bench.py --home DIR --corpora DIR`` (``DIR/.kandev/lsp-servers``
holds pyright and typescript-language-server; without ``--home`` they are installed into a temporary
HOME first). The corpora are fetched once into ``--corpora`` with the registries' own clients (``pip
download --no-binary :all: click==8.1.7``, ``npm pack zod@4.6.7``) and copied into a scratch folder per
run, so every run starts from the published text.

Printed, each against a baseline measured in the same run:

1. **definitions against jedi** (0.20.1, an independent engine): for 30 names defined in click, up to 4
   of the places jedi finds them used (examples/ first, where the nested ``setup.py`` projects are),
   jedi's ``goto(follow_imports=True)`` against ``code_navigate`` ``definition``: a site agrees when
   jedi's definition is among ours. Sites where jedi's answer leaves the corpus are not counted.
2. **references against raw**: ``code_navigate`` ``references`` (limit 500) against the raw
   ``textDocument/references`` request on the same server, as sets of (file, line, column), for names
   of both corpora.
3. **freshness after plain writes**: a parameter added to ``make_str`` in click's ``utils.py`` (then
   ``code_diagnostics`` of ``core.py``, whose two calls break), and an error appended to an open zod
   file (then its ``code_diagnostics``): seconds from the write to the answer, whether it was
   ``current`` and correct, against the raw server's republish time on the same server (the file's
   ``didChange`` sent right after the same write, then the first publication with the new errors).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import bench_home

CLICK = "click==8.1.7"
ZOD = "zod@4.6.7"

#: Names defined in click's sources (30).
CLICK_NAMES = [
    "Command", "Group", "Context", "Option", "Argument", "Parameter", "MultiCommand", "BaseCommand",
    "echo", "secho", "style", "command", "group", "option", "argument", "pass_context", "make_str",
    "get_current_context", "BadParameter", "UsageError", "ClickException", "Choice", "Path", "File",
    "IntRange", "prompt", "confirm", "HelpFormatter", "wrap_text", "get_app_dir",
]  # fmt: skip
SITES_PER_NAME = 4
#: (file, name) whose references are compared with raw.
CLICK_REFERENCES = [
    ("src/click/core.py", "Command.invoke"), ("src/click/utils.py", "make_str"),
    ("src/click/core.py", "Context"), ("src/click/termui.py", "echo_via_pager"),
    ("src/click/decorators.py", "pass_context"), ("src/click/types.py", "ParamType"),
]  # fmt: skip
ZOD_REFERENCES = [
    ("src/v4/core/core.ts", "$constructor"), ("src/v4/classic/schemas.ts", "ZodType"),
    ("src/v4/core/util.ts", "jsonStringifyReplacer"), ("src/v4/classic/errors.ts", "ZodError"),
]  # fmt: skip
ZOD_TSCONFIG = (
    '{"compilerOptions": {"strict": true, "target": "es2022", "module": "esnext", '
    '"moduleResolution": "bundler", "noEmit": true, "skipLibCheck": true}, "include": ["src"]}\n'
)


def fetch(corpora: Path) -> tuple[Path, Path]:
    """The unpacked click sdist and zod package, fetched once into ``corpora``."""
    corpora.mkdir(parents=True, exist_ok=True)
    click = corpora / "click-8.1.7"
    if not click.is_dir():
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*pip, CLICK, "-d", str(corpora)], check=True)
        shutil.unpack_archive(str(corpora / "click-8.1.7.tar.gz"), str(corpora))
    zod = corpora / "zod" / "package"
    if not zod.is_dir():
        npm = shutil.which("npm")
        assert npm is not None, "npm is needed to fetch zod"
        subprocess.run([npm, "pack", ZOD, "--silent"], check=True, cwd=corpora)
        shutil.unpack_archive(str(corpora / "zod-4.6.7.tgz"), str(corpora / "zod"))
    return click, zod


def copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target.resolve()


def working_copies(click: Path, zod: Path, base: Path, name: str) -> tuple[Path, Path]:
    """Fresh copies of the fetched corpora under ``base`` (``click-NAME``, ``zod-NAME``), zod's with the
    ``tsconfig.json`` its package does not ship (its sources under ``src/`` are then one project)."""
    one = copy(click, base / f"click-{name}")
    two = copy(zod, base / f"zod-{name}")
    (two / "tsconfig.json").write_text(ZOD_TSCONFIG)
    return one, two


async def raw_position(service: Any, target: dict[str, Any]) -> tuple[Any, Any, dict[str, int]]:
    """The server, workspace file and LSP position of a tool answer's ``target`` (1-based line and column),
    the file synced, for the raw request at the same place on the same server."""
    file = service.workspace.resolve(target["path"])
    server = await service.pool.server_for(file)
    document = await server.sync(file)
    position = document.lsp_position(target["line"] - 1, target["column"] - 1, server.encoding)
    return server, file, position


def _service(folder: Path, home: Path) -> Any:
    from kandev_lsp import TaskEnvironment
    from kandev_lsp.intel.service import IntelService

    env = TaskEnvironment.from_agent({"HOME": str(home), "PATH": os.environ.get("PATH", "")})
    return IntelService.open([folder], env=env)


def jedi_sites(folder: Path, per_name: int) -> list[tuple[str, int, int, tuple[str, int, int]]]:
    """(file, 1-based line, 1-based column, jedi's definition) for up to ``per_name`` uses of each name."""
    import jedi  # type: ignore[import-untyped]

    src = folder / "src"
    # click's own sources first (the standard library after them, no installed packages): jedi then
    # resolves `import click` in examples/ to src/click, as an IDE on the checkout does.
    stdlib = [entry for entry in sys.path if entry and "site-packages" not in entry]
    project = jedi.Project(str(folder), sys_path=[str(src), *stdlib], smart_sys_path=False)
    sites: list[tuple[str, int, int, tuple[str, int, int]]] = []
    environment = jedi.InterpreterEnvironment()
    for name in CLICK_NAMES:
        definitions = [
            d
            for d in project.search(name)
            if d.module_path
            and str(d.module_path).startswith(str(src / "click"))
            and d.type in ("class", "function")
            and d.name == name
        ]
        if not definitions:
            continue
        first = definitions[0]
        script = jedi.Script(path=str(first.module_path), project=project, environment=environment)
        uses = [r for r in script.get_references(first.line, first.column) if r.module_path is not None]
        uses = [
            r
            for r in uses
            if (r.line, r.column, r.module_path) != (first.line, first.column, first.module_path)
        ]
        uses.sort(
            key=lambda r: (
                not str(r.module_path).startswith(str(folder / "examples")),
                str(r.module_path),
                r.line,
            )
        )
        for use in uses[:per_name]:
            path = str(Path(str(use.module_path)).relative_to(folder))
            at = jedi.Script(path=str(use.module_path), project=project, environment=environment)
            found = [
                g
                for g in at.goto(use.line, use.column, follow_imports=True)
                if g.module_path is not None and str(g.module_path).startswith(str(folder)) and g.line
            ]
            if found:
                target = found[0]
                sites.append(
                    (
                        path,
                        use.line,
                        use.column + 1,
                        (
                            str(Path(str(target.module_path)).relative_to(folder)),
                            target.line,
                            target.column + 1,
                        ),
                    )
                )
    return sites  # fmt: skip


async def definitions(folder: Path, home: Path, per_name: int) -> tuple[int, int, list[str]]:
    from kandev_lsp.intel.surface.dispatch import IntelContext

    sites = await asyncio.to_thread(jedi_sites, folder, per_name)
    agree = 0
    missed: list[str] = []
    async with _service(folder, home) as service:
        for path, line, column, wanted in sites:
            result = await service.dispatch(
                "code_navigate",
                {"target": {"path": path, "line": line, "column": column}, "kind": "definition"},
                IntelContext(deadline=90),
            )
            ours = {
                (g["path"], loc["line"], loc["column"])
                for g in result.get("files", [])
                for loc in g["locations"]
            }
            lines = {(p, ln) for p, ln, _ in ours}
            if wanted in ours or (wanted[0], wanted[1]) in lines:
                agree += 1
            else:
                missed.append(
                    f"{path}:{line}:{column} -> jedi {wanted[0]}:{wanted[1]}, ours {sorted(ours)[:2]}"
                )
    return agree, len(sites), missed


async def references(
    folder: Path, home: Path, names: list[tuple[str, str]]
) -> list[tuple[str, int, int, bool]]:
    """(name, ours, raw, equal) per name: code_navigate references against the raw request."""
    from kandev_lsp.intel.reading.output import locate
    from kandev_lsp.intel.surface.dispatch import IntelContext

    rows = []
    async with _service(folder, home) as service:
        for path, name in names:
            payload = {
                "target": {"path": path, "symbol": name},
                "kind": "references",
                "limit": 500,
                "firstMatch": True,  # zod declares ZodType as an interface and a const
            }
            result = await service.dispatch("code_navigate", payload, IntelContext(deadline=120))
            if not result.get("ok"):
                rows.append((name, -1, -1, False))
                continue
            ours = {(g["path"], loc["line"]) for g in result["files"] for loc in g["locations"]}
            server, file, position = await raw_position(service, result["target"])
            raw = await server.request(
                "textDocument/references",
                {
                    "textDocument": {"uri": file.uri},
                    "position": position,
                    "context": {"includeDeclaration": True},
                },
                60,
            )
            located = locate(raw, service.workspace.uri_lookup())
            theirs = {(f.display, span[0] + 1) for f, spans in located.by_path.values() for span in spans}
            rows.append(
                (name, result["totalFound"], sum(len(s) for _, s in located.by_path.values()), ours == theirs)
            )
    return rows


async def _raw_republish(server: Any, file: Any, uri: str, expect: int, timeout: float = 30) -> float | None:
    """Seconds from now (right after a write) to the first publication of ``uri`` with ``expect`` errors,
    the file's didChange sent first (the raw client's part)."""
    started = time.monotonic()
    await server.sync(file)
    store = server.client.endpoint.diagnostics
    before = store.get(uri)
    while time.monotonic() - started < timeout:
        entry = store.get(uri)
        if entry is not None and entry is not before:
            errors = sum(1 for d in entry.diagnostics if d.get("severity", 1) == 1)
            if errors == expect:
                return time.monotonic() - started
        await asyncio.sleep(0.005)
    return None


async def _settled_errors(service: Any, path: str, ctx: Any) -> int:
    """The error count the server settles on for ``path`` (two answers 2 s apart agree)."""
    last = None
    while True:
        answer = await service.dispatch("code_diagnostics", {"path": path}, ctx)
        count = answer["counts"]["error"]
        if count == last:
            return int(count)
        last = count
        await asyncio.sleep(2.0)


async def freshness(
    folder: Path, home: Path, language: str, rounds: int
) -> list[tuple[float, bool, float | None]]:
    """(our seconds to the answer, it was current and correct, raw republish seconds) per round."""
    from kandev_lsp.intel.surface.dispatch import IntelContext

    if language == "python":
        changed, asked = "src/click/utils.py", "src/click/core.py"
        old, new = "def make_str(value: t.Any) -> str:", "def make_str(value: t.Any, extra: int) -> str:"
    else:
        changed = asked = "src/v4/classic/coerce.ts"
    ctx = IntelContext(deadline=60)
    rows = []
    async with _service(folder, home) as service:
        first = await service.dispatch("code_diagnostics", {"path": asked}, ctx)
        base = first["counts"]["error"]
        await service.dispatch("code_diagnostics", {"path": changed}, ctx)
        path = folder / changed
        original = path.read_text()
        file = service.workspace.resolve(changed)
        target = service.workspace.resolve(asked)
        expect = -1
        for n in range(rounds):
            edited = (
                original.replace(old, new)
                if language == "python"
                else original + f'\nexport const bad{n}: number = "x";\n'
            )
            if language == "typescript":
                expect = base + 1
            elif expect < 0:  # what the server settles on: asked until two answers 2 s apart agree
                path.write_text(edited)
                expect = await _settled_errors(service, asked, ctx)
                path.write_text(original)
                await _settled_errors(service, asked, ctx)
            path.write_text(edited)
            started = time.monotonic()
            answer = await service.dispatch("code_diagnostics", {"path": asked}, ctx)
            ours = time.monotonic() - started
            right = answer["status"] == "current" and answer["counts"]["error"] == expect
            if not right:
                print(
                    f"  round {n}: {answer['status']}, {answer['counts']['error']} errors, expected {expect}"
                )
            path.write_text(original)
            await service.dispatch("code_diagnostics", {"path": asked}, ctx)  # settled on the original
            await asyncio.sleep(1.0)
            server = await service.pool.server_for(target)
            path.write_text(edited)
            raw = await _raw_republish(server, file, target.uri, expect)
            path.write_text(original)
            await service.dispatch("code_diagnostics", {"path": asked}, ctx)
            await asyncio.sleep(1.0)
            rows.append((ours, right, raw))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, help="a HOME whose managed cache holds the servers")
    parser.add_argument("--corpora", type=Path, default=Path(tempfile.gettempdir()) / "kandev-lsp-corpora")
    parser.add_argument("--rounds", type=int, default=5, help="freshness rounds per language")
    parser.add_argument("--sites-per-name", type=int, default=SITES_PER_NAME, help="jedi use sites per name")
    parser.add_argument(
        "--skip", action="append", default=[], choices=["definitions", "references", "freshness"]
    )
    args = parser.parse_args()
    click, zod = fetch(args.corpora)
    with tempfile.TemporaryDirectory(prefix="intel-corpus-") as temp:
        base = Path(temp)
        home = bench_home(args.home, base, ["python", "typescript"])

        def fresh(name: str) -> tuple[Path, Path]:
            return working_copies(click, zod, base, name)

        if "definitions" not in args.skip:
            folder, _ = fresh("definitions")
            agree, total, missed = asyncio.run(definitions(folder, home, args.sites_per_name))
            print(
                f"definitions against jedi on click 8.1.7 ({len(CLICK_NAMES)} names): {agree}/{total} sites agree"
            )
            for line in missed[:20]:
                print(f"  missed {line}")
        if "references" not in args.skip:
            one, two = fresh("references")
            for label, folder, names in (
                ("click 8.1.7", one, CLICK_REFERENCES),
                ("zod 4.6.7", two, ZOD_REFERENCES),
            ):
                compared = asyncio.run(references(folder, home, names))
                equal = sum(1 for row in compared if row[3])
                print(f"references against raw on {label}: {equal}/{len(compared)} names equal")
                for name, ours, raw, same in compared:
                    print(f"  {name:28} ours {ours:>4}  raw {raw:>4}  {'equal' if same else 'DIFFERENT'}")
        if "freshness" not in args.skip:
            one, two = fresh("freshness")
            for language, folder in (("python", one), ("typescript", two)):
                rows = asyncio.run(freshness(folder, home, language, args.rounds))
                answered = [row[0] for row in rows]
                raws = [row[2] for row in rows if row[2] is not None]
                right = sum(1 for row in rows if row[1])
                raw_p50 = statistics.median(raws) if raws else float("nan")
                print(
                    f"freshness after a plain write ({'pyright, click core.py after utils.make_str' if language == 'python' else 'typescript-language-server, zod coerce.ts'}), "
                    f"{len(rows)} rounds: correct and current {right}/{len(rows)}; write -> answer p50 "
                    f"{statistics.median(answered):.2f} s, raw republish p50 {raw_p50:.2f} s "
                    f"({statistics.median(answered) / raw_p50:.2f}x)"
                )
                for n, (mine, ok, republished) in enumerate(rows):
                    shown = republished if republished is None else round(republished, 2)
                    print(
                        f"  round {n}: ours {mine:.2f} s {'current+correct' if ok else 'WRONG'}; raw {shown} s"
                    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
