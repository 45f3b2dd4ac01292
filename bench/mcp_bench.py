"""Code intelligence as an MCP client sees it: ``kandev-lsp mcp`` per tool call, against the raw LSP request.

Run: ``.venv/bin/python bench/mcp_bench.py --home DIR`` (``DIR`` as for ``bench/intel_bench.py``; without
``--home`` the servers are installed into a temporary HOME first, real npm, ~10 s). ``--quick`` for a
smoke run.

``bench/intel_bench.py`` measures a tool inside kandev-lsp's process (``IntelService.dispatch``), which is
where kandev-lsp's own work is. An agent reaches the tools through MCP: a JSON-RPC request over stdio, the
SDK's validation on both sides, the result as structured content plus its text. The issue 9 reference
point is a widely used peer's MCP server, measured here at about 100 ms per call, 13x the raw request
for references. This bench measures the same thing for kandev-lsp, in one run on the same generated
project, in two phases (two servers would share this machine's cores if run at once):

1. in-process, as ``bench/intel_bench.py`` does: each case's raw request(s) and its ``dispatch`` call,
   alternating, on one warm server;
2. ``kandev-lsp mcp --workspace DIR`` started by the official SDK's stdio client, every case warmed up
   (so the same files are open as in phase 1), then each case's ``tools/call`` timed from the client's
   side;
3. two such servers at once, one per stdio transport (``--stdio loop``, the default: the event loop's
   pipes; ``--stdio sdk``: the SDK's worker threads, the baseline), called in turn (alternating order)
   so both see the same load.

Printed first: the p50 of an MCP ``ping`` (the SDK's round trip, client session to server session, with
nothing behind it: every call pays it) on each transport (phase 3). Per case: raw p50 and dispatch p50
(phase 1), the MCP call's p50 (phase 2), its ratio to raw, what the MCP layer adds over dispatch (medians
of two phases on two server processes of the same version and project: under a millisecond or so, that
difference is noise), and phase 3's two transports. Phase 3's own times are higher for calls where the
language server works hard: two servers take turns on the same cores and caches.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import bench_home
from intel_bench import bench_cases, project_arguments, python_project, typescript_project

KANDEV_LSP = str(Path(sys.executable).parent / "kandev-lsp")
#: ``kandev-lsp mcp --stdio``: kandev-lsp's event-loop transport, and the SDK's own (the baseline).
TRANSPORTS = ("loop", "sdk")
#: A pause after the warm-up, before timing: tsserver goes on loading in the background for a while
#: after its first requests, which would land on the first timed calls.
SETTLE_SECONDS = 3.0


def _ms(times: list[float]) -> float:
    return round(statistics.median(times) * 1000, 2)


async def in_process(language: str, folder: Path, home: Path, rounds: int) -> dict[str, dict[str, Any]]:
    """Phase 1: per case, the raw request's and the ``dispatch`` call's p50, and the case's tool payload."""
    from kandev_lsp import TaskEnvironment
    from kandev_lsp.intel.service import IntelService
    from kandev_lsp.intel.surface.dispatch import IntelContext

    env = TaskEnvironment.from_agent({"HOME": str(home), "PATH": "/usr/bin:/bin"})
    ctx = IntelContext(deadline=120)
    out: dict[str, dict[str, Any]] = {}
    async with IntelService.open([folder], env=env) as service:
        ext = "py" if language == "python" else "ts"
        first = {"target": {"path": f"lib.{ext}", "line": 1, "matchText": "greet"}, "kind": "references"}
        assert (await service.dispatch("code_navigate", first, ctx))["ok"]
        for name, tool, payload, raw in await bench_cases(service, language):
            for _ in range(3):
                await raw()
                assert (await service.dispatch(tool, payload, ctx))["ok"]
            raw_times, tool_times = [], []
            for index in range(rounds):
                for step in ("raw", "tool") if index % 2 == 0 else ("tool", "raw"):
                    started = time.perf_counter()
                    if step == "raw":
                        await raw()
                        raw_times.append(time.perf_counter() - started)
                    else:
                        await service.dispatch(tool, payload, ctx)
                        tool_times.append(time.perf_counter() - started)
            out[name] = {
                "tool": tool,
                "payload": payload,
                "rawMs": _ms(raw_times),
                "dispatchMs": _ms(tool_times),
            }
    return out


async def over_mcp(
    folder: Path, home: Path, cases: dict[str, dict[str, Any]], rounds: int, transports: tuple[str, ...]
) -> dict[str, dict[str, float]]:
    """Phase 2: per case (and for a ``ping``), the p50 of a call through ``kandev-lsp mcp`` from the SDK
    client's side, for each stdio transport (``--stdio loop`` and ``--stdio sdk``): two sessions open at
    once, called in turn, so both see the same load."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {**os.environ, "HOME": str(home), "PATH": "/usr/bin:/bin"}
    env.pop("KANDEV_LSP_SETTINGS", None)
    out: dict[str, dict[str, float]] = {}
    async with contextlib.AsyncExitStack() as stack:
        sessions: dict[str, Any] = {}
        for transport in transports:
            params = StdioServerParameters(
                command=KANDEV_LSP,
                args=["mcp", "--workspace", str(folder), "--deadline", "120", "--stdio", transport],
                env=env,
            )
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions[transport] = session

        async def timed(session: Any, case: dict[str, Any] | None) -> float:
            started = time.perf_counter()
            if case is None:
                await session.send_ping()
            else:
                result = await session.call_tool(case["tool"], case["payload"])
                assert not result.is_error, result
            return time.perf_counter() - started

        calls = [("ping", None), *cases.items()]
        # Every case warmed up before any is timed: the first call starts the language server, and the
        # files the cases open are then open for all of them, as in phase 1.
        for _, case in calls:
            for session in sessions.values():
                for _ in range(4):
                    await timed(session, case)
        await asyncio.sleep(SETTLE_SECONDS)
        for name, case in calls:
            times: dict[str, list[float]] = {transport: [] for transport in transports}
            for index in range(rounds):
                order = transports if index % 2 == 0 else transports[::-1]
                for transport in order:
                    times[transport].append(await timed(sessions[transport], case))
            out[name] = {transport: _ms(taken) for transport, taken in times.items()}
    return out


def main() -> int:
    args = project_arguments(__doc__.split("\n\n")[0]).parse_args()
    rounds = args.rounds or (5 if args.quick else 40)
    modules = args.modules or (10 if args.quick else 40)
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as temp:
        base = Path(temp)
        home = bench_home(args.home, base, ["python", "typescript"])
        for language in args.language or ["python", "typescript"]:
            folder = base / language
            folder.mkdir()
            (python_project if language == "python" else typescript_project)(folder, modules)
            cases = asyncio.run(in_process(language, folder, home, rounds))
            alone = asyncio.run(over_mcp(folder, home, cases, rounds, ("loop",)))
            mcp = asyncio.run(over_mcp(folder, home, cases, rounds, TRANSPORTS))
            ping = mcp["ping"]
            print(
                f"\n{language} ({modules} modules, {rounds} rounds): an MCP ping (the SDK's round trip over "
                f"stdio, nothing behind it) {ping['loop']:.2f} ms with --stdio loop, {ping['sdk']:.2f} ms "
                f"with --stdio sdk ({ping['loop'] / ping['sdk']:.2f}x)"
            )
            print(
                f"  {'case':26} {'raw p50':>9} {'dispatch':>9} {'MCP call':>9} {'MCP/raw':>8} "
                f"{'MCP layer':>10}   in turn: {'loop':>8} {'sdk':>8} {'loop/sdk':>8}"
            )
            for name, case in cases.items():
                raw, dispatched, called = case["rawMs"], case["dispatchMs"], alone[name]["loop"]
                loop, sdk = mcp[name]["loop"], mcp[name]["sdk"]
                print(
                    f"  {name:26} {raw:>7.2f}ms {dispatched:>7.2f}ms {called:>7.2f}ms "
                    f"{called / raw if raw else 0:>7.2f}x {called - dispatched:>8.2f}ms   "
                    f"{'':9} {loop:>6.2f}ms {sdk:>6.2f}ms {loop / sdk if sdk else 0:>7.2f}x"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
