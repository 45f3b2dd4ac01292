"""Code-intelligence benchmark: each read tool against the same raw LSP request on the same warm server.

Run: ``.venv/bin/python bench/intel_bench.py --home DIR`` where ``DIR/.kandev/lsp-servers`` holds pyright
and typescript-language-server (``kandev-lsp install python typescript`` with ``HOME=DIR``); without
``--home`` they are installed into a temporary HOME first (real npm, ~10 s). ``--quick`` for a smoke run.

A generated project per language (``--modules`` files, each calling a shared ``greet`` twice, so its
references span every file) is opened through :class:`~kandev_lsp.intel.service.IntelService`; after a
warm-up, each tool call and the raw request(s) it wraps are timed back to back, in alternating order, on
the *same* server (the pool's own :class:`~kandev_lsp.lsp.LspClient`), so a ratio compares measurements
under the same load. Printed per tool: raw p50, tool p50, the overhead and ratio. The overhead is the
median of each round's tool time minus the raw time of the same round (with its interquartile range):
a burst of load on a shared machine falls on both halves of a pair, where the difference of two
medians would count it whole. The goal (issue 9): under 5 % plus 1 ms over raw. "added CPU" is the
CPU time kandev-lsp's own process spent on a tool call beyond the raw request's (p50 against p50). It
depends on the machine too: the same work costs more CPU on cold caches, right after the server's
process had the core. What does not depend on it: ``--profile``'s function-call counts, and
``bench/intel_instructions.py``'s instruction counts. Also printed: the size in characters of the
tool's result against the bare ``file:line`` list of the same locations (a peer's MCP server returned 9-12x that list), and the cold
start to the first complete answer against the server's own readiness.

What a tool adds over raw: target resolution (a symbol target needs the document's ``documentSymbol``
tree, asked once per document text and kept while the server has that text, so a repeated call on an
unchanged file asks nothing more; line targets need none), the disk re-sync check (inotify says which
open or seen files changed, and only those get a ``stat``; without inotify a ``stat`` per file), the
path-safety check of every server URI (one ``lstat`` per file per call, B8.11), snippets from the file
text and the result's shaping. Hover asks signature help in parallel. The ``symbols`` row is
``code_symbols`` on an unchanged file: answered from the kept tree, it makes no request at all.

``--profile CASE`` runs ``--rounds`` warm calls of the cases whose name starts with CASE under cProfile
instead of timing them (function calls and ``stat``/``lstat`` counts per call do not depend on the load
of a shared machine, times do).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchkit import bench_home


def python_project(folder: Path, modules: int) -> None:
    (folder / "pyproject.toml").write_text('[project]\nname = "bench"\nversion = "0"\n')
    (folder / "lib.py").write_text(
        "def greet(name: str, excited: bool = False) -> str:\n"
        '    """Say hello."""\n'
        '    return "hello " + name\n'
    )
    for n in range(modules):
        (folder / f"mod{n}.py").write_text(
            "from lib import greet\n\n\n"
            f"def use{n}(x: str) -> str:\n"
            f"    first = greet(x)\n"
            f"    return first + greet(x, True)\n"
        )


def typescript_project(folder: Path, modules: int) -> None:
    (folder / "tsconfig.json").write_text('{"compilerOptions": {"strict": true, "target": "es2020"}}\n')
    (folder / "lib.ts").write_text(
        "export function greet(name: string, excited = false): string {\n"
        '  return "hello " + name + (excited ? "!" : "");\n'
        "}\n"
    )
    for n in range(modules):
        (folder / f"mod{n}.ts").write_text(
            'import { greet } from "./lib";\n\n'
            f"export function use{n}(x: string): string {{\n"
            "  const first = greet(x);\n"
            "  return first + greet(x, true);\n"
            "}\n"
        )


async def _timed(call: Callable[[], Awaitable[Any]]) -> tuple[float, float, Any]:
    """Wall time and this process's CPU time of one call, and its value."""
    cpu, started = time.process_time(), time.perf_counter()
    value = await call()
    return time.perf_counter() - started, time.process_time() - cpu, value


#: One benchmarked call: its name, the tool and payload, and the raw request(s) it wraps.
Case = tuple[str, str, dict[str, Any], Callable[[], Awaitable[Any]]]


def _bare_list(result: dict[str, Any]) -> str:
    return "\n".join(
        f"{group['path']}:{loc['line']}" for group in result.get("files", []) for loc in group["locations"]
    )


async def bench_cases(service: Any, language: str) -> list[Case]:
    """The benchmarked calls on a started :class:`~kandev_lsp.intel.service.IntelService` over a generated
    project: (name, tool, payload, the raw request(s) the tool wraps, on the same server)."""
    ext = "py" if language == "python" else "ts"
    server = service.pool.servers[0]
    lib = service.workspace.resolve(f"lib.{ext}")
    mod = service.workspace.resolve(f"mod0.{ext}")
    await server.sync(mod)
    # `greet` in `def greet` / `export function greet`
    position = {"line": 0, "character": 4 if language == "python" else 16}
    use = {"line": 4, "character": 12} if language == "python" else {"line": 3, "character": 16}
    request = server.client.request

    async def raw_hierarchy() -> Any:
        items = await request(
            "textDocument/prepareCallHierarchy", {"textDocument": {"uri": lib.uri}, "position": position}
        )
        return await request("callHierarchy/incomingCalls", {"item": items[0]})

    cases: list[Case] = [
        (
            "references",
            "code_navigate",
            {"target": {"path": f"lib.{ext}", "line": 1, "matchText": "greet"}, "kind": "references"},
            lambda: request(
                "textDocument/references",
                {
                    "textDocument": {"uri": lib.uri},
                    "position": position,
                    "context": {"includeDeclaration": True},
                },
            ),
        ),
        (
            "definition",
            "code_navigate",
            {
                "target": {"path": f"mod0.{ext}", "line": use["line"] + 1, "matchText": "greet"},
                "kind": "definition",
            },
            lambda: request("textDocument/definition", {"textDocument": {"uri": mod.uri}, "position": use}),
        ),
        (
            "hover",
            "code_hover",
            {"target": {"path": f"mod0.{ext}", "line": use["line"] + 1, "matchText": "greet"}},
            lambda: request("textDocument/hover", {"textDocument": {"uri": mod.uri}, "position": use}),
        ),
        (
            "symbols",
            "code_symbols",
            {"path": f"mod0.{ext}"},
            lambda: request("textDocument/documentSymbol", {"textDocument": {"uri": mod.uri}}),
        ),
        (
            "callers (symbol target)",
            "code_hierarchy",
            {"target": {"path": f"lib.{ext}", "symbol": "greet"}, "kind": "callers"},
            raw_hierarchy,
        ),
    ]
    if server.offers("inlayHintProvider"):
        cases.append(
            (
                "inlay hints",
                "code_inlay_hints",
                {"path": f"mod0.{ext}"},
                lambda: request(
                    "textDocument/inlayHint",
                    {
                        "textDocument": {"uri": mod.uri},
                        "range": {
                            "start": {"line": 0, "character": 0},
                            "end": {"line": 6, "character": 0},
                        },
                    },
                ),
            )
        )
    return cases


async def bench_language(
    language: str, folder: Path, home: Path, rounds: int, profile: str | None = None
) -> dict[str, Any]:
    from kandev_lsp import TaskEnvironment
    from kandev_lsp.intel.service import IntelService
    from kandev_lsp.intel.surface.dispatch import IntelContext

    ext = "py" if language == "python" else "ts"
    env = TaskEnvironment.from_agent({"HOME": str(home), "PATH": "/usr/bin:/bin"})
    ctx = IntelContext(deadline=120)
    out: dict[str, Any] = {"language": language}
    async with IntelService.open([folder], env=env) as service:
        call = service.dispatch
        cold_started = time.perf_counter()
        first = await call(
            "code_navigate",
            {"target": {"path": f"lib.{ext}", "line": 1, "matchText": "greet"}, "kind": "references"},
            ctx,
        )
        out["coldFirstAnswerS"] = round(time.perf_counter() - cold_started, 3)
        server = service.pool.servers[0]
        tracker = server.client.readiness
        if tracker is not None and tracker.ready_at is not None:
            out["serverReadyS"] = round(tracker.ready_at - tracker.started_at, 3)
        assert first["ok"], first
        cases = await bench_cases(service, language)
        if profile is not None:
            print(f"\n{language}: {rounds} warm calls per case under cProfile")
            await _profile(call, ctx, [(n, t, p) for n, t, p, _ in cases if n.startswith(profile)], rounds)
            return out
        rows = []
        for name, tool, payload, raw in cases:
            for _ in range(3):  # warm-up
                await raw()
                result = await call(tool, payload, ctx)
                assert result["ok"], result
            raw_times, tool_times, raw_cpu, tool_cpu = [], [], [], []
            for index in range(rounds):
                order = (raw, None) if index % 2 == 0 else (None, raw)
                for step in order:
                    if step is None:
                        elapsed, cpu, result = await _timed(functools.partial(call, tool, payload, ctx))
                        tool_times.append(elapsed)
                        tool_cpu.append(cpu)
                    else:
                        elapsed, cpu, _ = await _timed(step)
                        raw_times.append(elapsed)
                        raw_cpu.append(cpu)
            raw_p50 = statistics.median(raw_times) * 1000
            tool_p50 = statistics.median(tool_times) * 1000
            # Each round's tool call minus the raw request timed next to it: a burst of load on the
            # shared machine lands on both halves of a pair, where p50 - p50 would take it whole.
            paired = [(tool - raw) * 1000 for tool, raw in zip(tool_times, raw_times, strict=True)]
            overhead = statistics.median(paired)
            quartiles = statistics.quantiles(paired, n=4)
            row = {
                "case": name,
                "rawMs": round(raw_p50, 2),
                "toolMs": round(tool_p50, 2),
                "overheadMs": round(overhead, 2),
                "overheadIqrMs": [round(quartiles[0], 2), round(quartiles[2], 2)],
                "ratio": round((raw_p50 + overhead) / raw_p50, 2) if raw_p50 else None,
                "goalMet": overhead <= raw_p50 * 0.05 + 1.0,
                # What kandev-lsp's process itself spent (the server's time is another process's).
                "addedCpuMs": round((statistics.median(tool_cpu) - statistics.median(raw_cpu)) * 1000, 2),
            }
            if tool == "code_navigate":
                text = json.dumps(result, ensure_ascii=False)
                bare = _bare_list(result)
                row["resultChars"] = len(text)
                row["bareListChars"] = len(bare)
                row["sizeRatio"] = round(len(text) / len(bare), 2) if bare else None
            rows.append(row)
        out["rows"] = rows
    return out


async def _profile(
    call: Callable[[str, dict[str, Any], Any], Awaitable[dict[str, Any]]],
    ctx: Any,
    cases: list[tuple[str, str, dict[str, Any]]],
    rounds: int,
) -> None:
    """cProfile of ``rounds`` warm calls per case: per call, the function calls and the ``stat`` /
    ``lstat`` system calls (printed), and the costliest functions (to stderr)."""
    import cProfile
    import pstats

    for name, tool, payload in cases:
        for _ in range(3):
            await call(tool, payload, ctx)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(rounds):
            await call(tool, payload, ctx)
        profiler.disable()
        stats = pstats.Stats(profiler, stream=sys.stderr)
        counts = {"stat": 0, "lstat": 0}
        for (_file, _line, function), row in stats.stats.items():  # type: ignore[attr-defined]
            for syscall in counts:
                if function == f"<built-in method posix.{syscall}>":
                    counts[syscall] += row[1]
        print(
            f"  {name:26} {stats.total_calls / rounds:8.0f} function calls, "  # type: ignore[attr-defined]
            f"{counts['stat'] / rounds:5.1f} stat, {counts['lstat'] / rounds:5.1f} lstat per call"
        )
        stats.sort_stats(os.environ.get("SORT", "tottime")).print_stats(int(os.environ.get("TOP", "25")))


def project_arguments(description: str) -> argparse.ArgumentParser:
    """The options of a bench on the generated projects (this one's and ``bench/mcp_bench.py``'s)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--home", type=Path, help="a HOME whose managed cache holds the servers")
    parser.add_argument("--quick", action="store_true", help="few rounds, small projects")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--modules", type=int, default=None, help="files per generated project (default 40)")
    parser.add_argument("--language", action="append", choices=["python", "typescript"])
    return parser


def main() -> int:
    parser = project_arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--profile",
        metavar="CASE",
        help="cProfile --rounds warm calls of the cases whose name starts with CASE ('' for all), no timing",
    )
    args = parser.parse_args()
    rounds = args.rounds or (5 if args.quick else 30)
    modules = args.modules or (10 if args.quick else 40)
    languages = args.language or ["python", "typescript"]
    with tempfile.TemporaryDirectory(prefix="intel-bench-") as temp:
        base = Path(temp)
        home = bench_home(args.home, base, ["python", "typescript"])
        reports = []
        for language in languages:
            folder = base / language
            folder.mkdir()
            (python_project if language == "python" else typescript_project)(folder, modules)
            reports.append(asyncio.run(bench_language(language, folder, home, rounds, args.profile)))
        if args.profile is not None:
            return 0
    if args.json:
        print(json.dumps(reports, indent=2))
        return 0
    for report in reports:
        ready = report.get("serverReadyS")
        print(
            f"\n{report['language']}: cold start to the first complete answer {report['coldFirstAnswerS']} s"
            + (f" (server readiness at {ready} s after start)" if ready is not None else "")
        )
        print(
            f"  {'case':26} {'raw p50':>9} {'tool p50':>9} {'overhead':>9} {'(IQR)':>15} {'ratio':>6}  goal"
            f"  {'added CPU':>9}  size vs file:line"
        )
        for row in report["rows"]:
            size = (
                f"{row['resultChars']} / {row['bareListChars']} = {row['sizeRatio']}x"
                if "resultChars" in row
                else ""
            )
            low, high = row["overheadIqrMs"]
            print(
                f"  {row['case']:26} {row['rawMs']:>7.2f}ms {row['toolMs']:>7.2f}ms {row['overheadMs']:>7.2f}ms "
                f"{f'({low:.2f}..{high:.2f})':>15} {row['ratio']:>5}x  {'met ' if row['goalMet'] else 'MISS'}"
                f"  {row['addedCpuMs']:>7.2f}ms  {size}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
