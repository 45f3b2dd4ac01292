"""Code-intelligence overhead in instructions: what a tool call executes in kandev-lsp's process beyond the
raw LSP request(s) it wraps, counted by valgrind's callgrind (deterministic, unlike wall time on a shared VM).

Run: ``.venv/bin/python bench/intel_instructions.py --home DIR [--language python] [--case references]``
(``DIR`` as for ``bench/intel_bench.py``; needs ``valgrind``: ``apt-get install valgrind``); with
``--corpus click`` / ``--corpus zod``, ``bench/mcp_bench.py``'s cases on that real corpus (``--case`` a
start of their names: ``references``, ``hover``, ...), fetched into ``--corpora`` as there. Each case
takes three runs of about a minute: the same generated project and warm-up in each, then ``--calls``
tool calls, or as many raw requests, or none; the process's instructions (the servers are other
processes, not counted) minus the run with none, per call. Printed: the tool's and the raw request's
instructions per call and the tool's addition (Python's hash seed is fixed, so a rerun gives the same
counts to within a fraction of a percent).

Instructions are not time: the same count runs slower with cold caches, as a call right after the
server's answer does. They show where the per-call work went and that a change reduced it, which
``bench/intel_bench.py``'s milliseconds on this machine cannot show below a millisecond or so.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchkit import bench_home

_COLLECTED = re.compile(rb"Collected : (\d+)")
CASES = ("references", "definition", "hover", "symbols", "callers", "inlay")


async def _child(language: str, folder: Path, home: Path, case: str, mode: str, calls: int) -> None:
    """Inside valgrind: warm up every part of ``case``, then run ``calls`` of ``mode`` (tool, raw, none).
    ``language`` is a generated project's, or ``corpus:NAME`` for ``--corpus``."""
    from intel_bench import bench_cases
    from kandev_lsp import TaskEnvironment
    from kandev_lsp.intel.service import IntelService
    from kandev_lsp.intel.surface.dispatch import IntelContext
    from mcp_bench import corpus_cases

    env = TaskEnvironment.from_agent({"HOME": str(home), "PATH": "/usr/bin:/bin"})
    ctx = IntelContext(deadline=600)  # valgrind runs this process ~50x slower than the servers
    async with IntelService.open([folder], env=env) as service:
        if language.startswith("corpus:"):
            cases = await corpus_cases(service, language.removeprefix("corpus:"), folder)
        else:
            ext = "py" if language == "python" else "ts"
            first = {"target": {"path": f"lib.{ext}", "line": 1, "matchText": "greet"}, "kind": "references"}
            assert (await service.dispatch("code_navigate", first, ctx))["ok"]
            cases = await bench_cases(service, language)
        chosen = [c for c in cases if c[0].startswith(case)]
        if not chosen:
            raise SystemExit(f"no case {case!r} for {language} (the server may not offer it)")
        _, tool, payload, raw = chosen[0]
        for _ in range(3):
            assert (await service.dispatch(tool, payload, ctx))["ok"]
            await raw()
        for _ in range(calls if mode != "none" else 0):
            if mode == "tool":
                await service.dispatch(tool, payload, ctx)
            else:
                await raw()


def _count(valgrind: str, args: list[str]) -> int:
    """Instructions of one child run (argv ``args`` after the script)."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__, *args],
        capture_output=True,
        env=env,
        check=False,
    )
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        tail = done.stderr.decode(errors="replace")[-2000:]
        raise SystemExit(f"the counted run failed (exit {done.returncode}):\n{tail}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, help="a HOME whose managed cache holds the servers")
    parser.add_argument("--language", action="append", choices=["python", "typescript"])
    parser.add_argument("--case", action="append", help=f"a case's name or its start ({', '.join(CASES)})")
    parser.add_argument(
        "--corpus",
        action="append",
        choices=["click", "zod"],
        help="bench/mcp_bench.py's cases on this real corpus instead of a generated project",
    )
    parser.add_argument("--corpora", type=Path, default=Path(tempfile.gettempdir()) / "kandev-lsp-corpora")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument(
        "--child", nargs=5, metavar=("LANGUAGE", "FOLDER", "HOME", "CASE", "MODE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        language, folder, home, case, mode = args.child
        asyncio.run(_child(language, Path(folder), Path(home), case, mode, args.calls))
        return 0
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit(
            "valgrind is not installed: apt-get install valgrind (this bench counts with callgrind)"
        )
    from intel_bench import python_project, typescript_project
    from intel_corpus_bench import fetch, working_copies
    from mcp_bench import corpus_calls

    with tempfile.TemporaryDirectory(prefix="intel-instructions-") as temp:
        base = Path(temp)
        home = bench_home(args.home, base, ["python", "typescript"])
        projects: list[tuple[str, Path, list[str]]] = []
        if args.corpus:
            folders = dict(
                zip(("click", "zod"), working_copies(*fetch(args.corpora), base, "counted"), strict=True)
            )
            for corpus in args.corpus:
                names = [name for name, _, _ in corpus_calls(corpus, folders[corpus])]
                chosen = [n for n in names if not args.case or any(n.startswith(c) for c in args.case)]
                projects.append((f"corpus:{corpus}", folders[corpus], chosen))
        for language in args.language or ([] if args.corpus else ["python"]):
            folder = base / language
            folder.mkdir()
            (python_project if language == "python" else typescript_project)(folder, 40)
            projects.append((language, folder, args.case or ["references", "definition", "callers"]))
        print(f"{'project':13} {'case':26} {'tool':>12} {'raw':>12} {'added':>12}   instructions per call")
        for language, folder, cases in projects:
            for case in cases:
                child = ["--calls", str(args.calls), "--child", language, str(folder), str(home), case]
                none, tool, raw = (_count(valgrind, [*child, mode]) for mode in ("none", "tool", "raw"))
                per_tool, per_raw = (tool - none) // args.calls, (raw - none) // args.calls
                label = language.removeprefix("corpus:")
                print(f"{label:13} {case:26} {per_tool:>12,} {per_raw:>12,} {per_tool - per_raw:>12,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
