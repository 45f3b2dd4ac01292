"""``kandev-lsp code`` through its warm daemon: cold first call, warm call against a bare interpreter
start, the one-shot path and the same question through a warm ``kandev-lsp mcp`` session, in one run.

Run: ``.venv/bin/python bench/code_bench.py --home DIR`` (``DIR`` as for ``bench/intel_bench.py``: a HOME
whose managed cache holds pyright; without ``--home`` it is installed into a temporary HOME first, real
npm, ~10 s). ``--quick`` for a smoke run; ``--language typescript`` for typescript-language-server.

The question is the references of ``greet`` in the generated project of ``bench/intel_bench.py`` (40
modules: 121 references, the first 100 shown). Measured, each as the wall time a script calling the
command sees:

1. **cold first call**: no daemon yet; the call starts the daemon, which starts the language server and
   answers (``--cold`` rounds, each after ``kandev-lsp code --stop``);
2. **warm call** against a **bare interpreter start** (``python -c pass``, the same interpreter): the two
   alternate, round after round, so both see the same load; the goal of issue 19 is a warm call within 4x
   the bare start. Printed: both medians, the ratio of the medians, and the median of each round's ratio;
3. the **one-shot path** (``--no-daemon``: start the server, answer, stop it), ``--cold`` rounds;
4. the same question through a **warm ``kandev-lsp mcp`` session** (the official SDK's stdio client,
   ``tools/call`` timed from the client's side), with an MCP ``ping`` as the SDK's own round trip.

Also printed: what a warm call imports (``-X importtime``: the modules beyond a bare interpreter's,
their summed own import time, each the least of 7 runs, the largest; none of them heavy:
tests/codedaemon checks that asyncio, the MCP SDK, pluggy and the servers' runtime are not imported when
it connects), the part of a warm call the client side keeps small.
"""

from __future__ import annotations

import asyncio
import json
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
from intel_bench import project_arguments, python_project, typescript_project

KANDEV_LSP = str(Path(sys.executable).parent / "kandev-lsp")


def _question(language: str) -> dict[str, Any]:
    ext = "py" if language == "python" else "ts"
    return {"target": {"path": f"lib.{ext}", "line": 1, "matchText": "greet"}, "kind": "references"}


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds of one command, and its stdout (it must succeed)."""
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    taken = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv[1:3]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return taken, done.stdout


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def client_imports(argv: list[str], env: dict[str, str], runs: int = 7) -> dict[str, Any]:
    """What a warm call imports beyond a bare interpreter (``-X importtime`` of both, the same run): each
    module's own import time is its least over ``runs`` runs (one run's figures move with the load)."""

    def imported(code: str) -> dict[str, int]:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        own: dict[str, int] = {}
        for line in done.stderr.splitlines():
            if line.startswith("import time:") and "|" in line and "self [us]" not in line:
                self_us, _, name = line.removeprefix("import time:").split("|")
                own[name.strip()] = int(self_us)
        return own

    bare = imported("pass")
    code = f"import sys\nfrom kandev_lsp.cli import main\nsys.exit(main({argv[1:]!r}))"
    extra: dict[str, int] = {}
    for _ in range(runs):
        for name, us in imported(code).items():
            if name not in bare:
                extra[name] = min(us, extra.get(name, us))
    largest = sorted(extra.items(), key=lambda item: -item[1])[:5]
    return {
        "modules": len(extra),
        "importMs": round(sum(extra.values()) / 1000, 1),
        "largest": [f"{name} {us / 1000:.1f} ms" for name, us in largest],
        "heavy": sorted(m for m in ("asyncio", "mcp", "pluggy", "kandev_lsp.intel") if m in extra),
    }


async def over_mcp(
    folder: Path, env: dict[str, str], question: dict[str, Any], rounds: int
) -> dict[str, float]:
    """The p50 of the question and of a ping through one warm ``kandev-lsp mcp`` session."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=KANDEV_LSP, args=["mcp", "--workspace", str(folder), "--deadline", "120"], env=env
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(5):  # warm: the server started, the files open
            result = await session.call_tool("code_navigate", question)
            assert not result.is_error, result
        calls: list[float] = []
        pings: list[float] = []
        for _ in range(rounds):
            started = time.perf_counter()
            await session.call_tool("code_navigate", question)
            calls.append(time.perf_counter() - started)
            started = time.perf_counter()
            await session.send_ping()
            pings.append(time.perf_counter() - started)
    return {"callMs": _ms(statistics.median(calls)), "pingMs": _ms(statistics.median(pings))}


def bench(language: str, folder: Path, home: Path, rounds: int, cold_rounds: int) -> dict[str, Any]:
    runtime = Path(tempfile.mkdtemp(prefix="kdb"))  # short: a socket path takes 107 bytes at most
    env = {**os.environ, "HOME": str(home), "PATH": "/usr/bin:/bin", "KANDEV_LSP_RUNTIME_DIR": str(runtime)}
    env.pop("KANDEV_LSP_SETTINGS", None)
    question = _question(language)
    call = [KANDEV_LSP, "code", "code_navigate", "--workspace", str(folder), "--json", json.dumps(question)]
    stop = [KANDEV_LSP, "code", "--stop", "--workspace", str(folder)]
    bare = [sys.executable, "-c", "pass"]
    report: dict[str, Any] = {"language": language, "files": len(list(folder.iterdir())), "rounds": rounds}
    try:
        colds = []
        for _ in range(cold_rounds):
            _timed(stop, env)
            taken, out = _timed(call, env)
            colds.append(taken)
        report["summary"] = json.loads(out)["summary"]
        report["coldS"] = round(statistics.median(colds), 2)
        for _ in range(5):
            _timed(call, env)  # warm-up: the daemon's files open, the caches hot
        warm: list[float] = []
        start: list[float] = []
        for index in range(rounds):
            pair = [(call, warm), (bare, start)]
            for argv, into in pair if index % 2 == 0 else pair[::-1]:
                into.append(_timed(argv, env)[0])
        report["warmMs"] = _ms(statistics.median(warm))
        report["bareMs"] = _ms(statistics.median(start))
        report["ratio"] = round(statistics.median(warm) / statistics.median(start), 2)
        report["pairRatio"] = round(statistics.median(w / b for w, b in zip(warm, start, strict=True)), 2)
        report["client"] = client_imports(call, env)
        _timed(stop, env)
        report["oneShotS"] = round(
            statistics.median(_timed([*call, "--no-daemon"], env)[0] for _ in range(cold_rounds)), 2
        )
        report["mcp"] = asyncio.run(over_mcp(folder, env, question, rounds))
    finally:
        subprocess.run(stop, capture_output=True, env=env, check=False)
        shutil.rmtree(runtime, ignore_errors=True)
    return report


def main() -> int:
    parser = project_arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--cold", type=int, default=None, help="rounds of the cold and one-shot calls")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rounds = args.rounds or (5 if args.quick else 30)
    cold_rounds = args.cold or (1 if args.quick else 3)
    modules = args.modules or (10 if args.quick else 40)
    languages = args.language or ["python"]
    reports = []
    with tempfile.TemporaryDirectory(prefix="code-bench-") as temp:
        base = Path(temp)
        home = bench_home(args.home, base, languages)
        for language in languages:
            folder = base / language
            folder.mkdir()
            (python_project if language == "python" else typescript_project)(folder, modules)
            reports.append(bench(language, folder, home, rounds, cold_rounds))
    if args.json:
        print(json.dumps(reports, indent=2))
        return 0
    for report in reports:
        client = report["client"]
        print(
            f"\n{report['language']}: {report['files']} files, '{report['summary']}',"
            f" {report['rounds']} rounds"
            f"\n  cold first call (starts the daemon and the server)  {report['coldS']} s"
            f"\n  bare interpreter start (python -c pass)            {report['bareMs']} ms"
            f"\n  warm call through the daemon                       {report['warmMs']} ms"
            f"  = {report['ratio']}x the bare start (per-round median {report['pairRatio']}x; goal <= 4x)"
            f"\n  one-shot call (--no-daemon)                        {report['oneShotS']} s"
            f"\n  warm kandev-lsp mcp session: tools/call            {report['mcp']['callMs']} ms"
            f" (MCP ping {report['mcp']['pingMs']} ms)"
            f"\n  a warm call imports {client['modules']} modules beyond a bare interpreter:"
            f" {client['importMs']} ms of import time (-X importtime);"
            f" largest: {', '.join(client['largest'])}; heavy ones: {client['heavy'] or 'none'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
