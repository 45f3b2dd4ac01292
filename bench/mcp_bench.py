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

**Real corpora and the tree before** (issue 20, "Done means": warm per-call cost through MCP kept,
references <= 1.1x raw, small calls within 0.5 ms of an MCP ping). ``--corpus click`` / ``--corpus zod``
(either or both) measure click 8.1.7 (pyright) and zod 4.6.7 (typescript-language-server) instead of the
generated projects, fetched once into ``--corpora DIR`` by ``bench/intel_corpus_bench.py``'s fetcher
(pip download of the sdist, npm pack) and copied per run. ``--compare DIR`` adds a second
``kandev-lsp mcp``: the same console script running DIR's code (``benchkit.compare_environment``; DIR is
a worktree, for instance of the tree before issue 20, whose intel modules are one flat room: the two
are driven only through what they share, the ``mcp`` command and raw LSP), checked to import from DIR;
with the generated projects it adds this section after the phases above. Cases on the corpora: the
references of four names each (``CORPUS_REFERENCES``, symbol targets as an agent gives them, the tool's
default limit), then ``definition`` and ``hover`` at one use site and ``symbols`` of one file
(``CORPUS_USES``; a hover inside a call's parentheses, where the tool asks signature help in parallel,
against both requests in parallel). In one process and event loop:

- the raw request on a warm server of the same kind: this tree's ``IntelService`` in this process, so
  the same settings and the pool's own client, at the place the tool's own answer resolved its target
  to; and this tree's ``dispatch`` of the same call on that server;
- each side's ``kandev-lsp mcp --workspace DIR`` through the official SDK's stdio client (the product's
  default transport), and an MCP ``ping`` per side;

every case warmed up on every side, then per round the raw request, the dispatch, each side's call and
each side's ping, in an order shuffled round by round (a fixed seed per case: the same orders in every
run: a rotation keeps each step's neighbours, one side's call always right after the dispatch). The
noise floor of a side against another is measured by comparing a tree with itself (``--compare`` of
this checkout): on zod at load 2.5-2.7, the two sides' p50 differed by -1.6..+0.6 ms on references
and under 0.8 ms on the small calls. Printed per case: each line's p50, its ratio
to raw's p50, and paired excesses (per round, the step less the raw request, and the ping, of the same
round: a burst of load falls on all of them); ``found`` is references' ``totalFound`` against the raw
request's locations (equal work). The goal column reads issue 20's sentence as: references' MCP p50 at
most 1.1x the raw p50; a small call's MCP time less the raw request and the ping of its round (what
kandev-lsp and the MCP layer add beyond the round trip every MCP call pays) at most 0.5 ms. ``symbols``
is answered from the kept document-symbol tree, without a request: against raw it is cheap, and its
excess over a ping alone is the ``-raw`` column less ``ping``.

Where the time goes, in the same run: **CPU per call** of every step run back to back (this process's
``process_time`` for the raw client, the dispatch and the MCP client; the server's from
``/proc/PID/task/*/schedstat``; the language servers' own CPU is another process's and not counted), with
``server-disp-ping``: the ``kandev-lsp mcp`` process's CPU per call less the in-process dispatch's and
less its CPU per ping, i.e. its MCP layer beyond a ping; and **the MCP layer's work on the answer**,
timed here with the SDK's own types on this tree's answer: the JSON text copy (the answer goes out as
``structuredContent`` and again as JSON text), the server's encoding of the response and the client's
decoding, and the same without the text copy. ``--profile CASE`` (a prefix of the case names; ``ping``
for the SDK's round trip alone) does no timing: it runs ``--rounds`` warm calls of the cases it names
under cProfile, counting CPU, on both ends (the server in two processes with the same warm-up, with and
without the calls, the difference per call), and prints per call the function calls and CPU by room or
package and the costliest functions: counts do not depend on the load; cProfile inflates times, most
for code of many small calls.

Run: ``.venv/bin/python bench/mcp_bench.py --home DIR --corpora DIR --corpus click --corpus zod
--compare /work/wt/before`` (about 4 minutes at 40 rounds).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from benchkit import bench_home, compare_environment
from intel_bench import Case, bench_cases, project_arguments, python_project, typescript_project
from intel_corpus_bench import fetch, raw_position, working_copies

KANDEV_LSP = str(Path(sys.executable).parent / "kandev-lsp")
#: ``kandev-lsp mcp --stdio``: kandev-lsp's event-loop transport, and the SDK's own (the baseline).
TRANSPORTS = ("loop", "sdk")
#: A pause after the warm-up, before timing: tsserver goes on loading in the background for a while
#: after its first requests, which would land on the first timed calls.
SETTLE_SECONDS = 3.0

#: ``--corpus``: the names whose references are measured, (file, symbol), as
#: ``bench/intel_corpus_bench.py`` names them (``firstMatch``: zod declares ``$ZodType`` and ``ZodType``
#: as an interface and a const).
CORPUS_REFERENCES = {
    "click": [
        ("src/click/core.py", "Command.invoke"), ("src/click/utils.py", "make_str"),
        ("src/click/core.py", "Context"), ("src/click/utils.py", "echo"),
    ],
    "zod": [
        ("src/v4/core/schemas.ts", "$ZodType"), ("src/v4/classic/schemas.ts", "ZodType"),
        ("src/v4/core/core.ts", "$constructor"), ("src/v4/classic/errors.ts", "ZodError"),
    ],
}  # fmt: skip
#: ``--corpus``: the small calls' places: a use (file, the text of its line, the name on it) for
#: ``definition`` and ``hover``, and the file whose ``symbols`` are asked.
CORPUS_USES = {
    "click": (("src/click/core.py", 'echo(_("Aborted!")', "echo"), "src/click/utils.py"),
    "zod": (("src/v4/classic/schemas.ts", "...util.normalizeParams(params),", "normalizeParams"), "src/v4/core/core.ts"),
}  # fmt: skip
#: The per-call goals of issue 20 ("Done means"), by the case's first word: references at most this
#: many times the raw request; the small calls at most this many ms over the raw request and a ping.
REFERENCES_GOAL = 1.1
SMALL_GOAL_MS = 0.5
SMALL_CALLS = ("definition", "hover", "symbols")


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


@dataclass(frozen=True)
class Side:
    """One ``kandev-lsp mcp`` being measured: its label (the tree's commit) and its environment."""

    label: str
    env: dict[str, str]


def _commit(tree: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or tree.name


def sides(home: Path, compare: Path | None, scratch: Path) -> list[Side]:
    """This tree's ``kandev-lsp mcp``, and with ``--compare DIR`` the same console script running DIR's
    code (``benchkit.compare_environment``), checked to import from DIR before anything is measured."""
    env = {**os.environ, "HOME": str(home), "PATH": "/usr/bin:/bin"}
    env.pop("KANDEV_LSP_SETTINGS", None)
    out = [Side(_commit(Path(__file__).resolve().parent), env)]
    if compare is not None:
        other = compare_environment(compare, env, scratch)
        found = subprocess.run(
            [sys.executable, "-c", "import kandev_lsp; print(kandev_lsp.__file__)"],
            env=other,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        if not Path(found).resolve().is_relative_to((compare / "core").resolve()):
            raise SystemExit(f"--compare {compare}: kandev_lsp imports from {found}, not from that tree")
        out.append(Side(f"{_commit(compare)} (--compare)", other))
    return out


def _line_of(folder: Path, path: str, text: str) -> int:
    """The 1-based line of ``path`` that holds ``text`` (the corpora are pinned releases)."""
    for number, line in enumerate((folder / path).read_text().splitlines(), 1):
        if text in line:
            return number
    raise SystemExit(f"{path} has no line with {text!r}: not the pinned release?")


def _raw(server: Any, method: str, params: dict[str, Any]) -> Any:
    return lambda: server.client.request(method, params)


def corpus_calls(corpus: str, folder: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """``--corpus``'s calls, (name, tool, payload): the references of ``CORPUS_REFERENCES``, then
    definition and hover at ``CORPUS_USES``' use site and the symbols of its file."""
    calls = [
        (
            f"references {symbol}",
            "code_navigate",
            {"target": {"path": path, "symbol": symbol}, "kind": "references", "firstMatch": True},
        )
        for path, symbol in CORPUS_REFERENCES[corpus]
    ]
    (path, text, name), outlined = CORPUS_USES[corpus]
    target = {"path": path, "line": _line_of(folder, path, text), "matchText": name}
    return [
        *calls,
        (f"definition {name}", "code_navigate", {"target": target, "kind": "definition"}),
        (f"hover {name}", "code_hover", {"target": target}),
        (f"symbols {Path(outlined).name}", "code_symbols", {"path": outlined}),
    ]


async def corpus_cases(service: Any, corpus: str, folder: Path) -> list[Case]:
    """:func:`corpus_calls` on a started service over the corpus, each with the raw request(s) it wraps
    at the place the service's own answer resolved its target to (the service waits for the server's
    readiness on the first call, so the raw requests after it are complete). A hover inside a call's
    parentheses, where the tool asks signature help in parallel, is measured against both requests in
    parallel (``(+signature)``)."""
    from kandev_lsp.intel.surface.dispatch import IntelContext

    ctx = IntelContext(deadline=120)
    cases: list[Case] = []
    for name, tool, payload in corpus_calls(corpus, folder):
        answer = await service.dispatch(tool, payload, ctx)
        assert answer["ok"], answer
        if tool == "code_symbols":
            file = service.workspace.resolve(payload["path"])
            server = await service.pool.server_for(file)
            await server.sync(file)
            outline = {"textDocument": {"uri": file.uri}}
            cases.append((name, tool, payload, _raw(server, "textDocument/documentSymbol", outline)))
            continue
        server, file, position = await raw_position(service, answer["target"])
        params: dict[str, Any] = {"textDocument": {"uri": file.uri}, "position": position}
        if payload.get("kind") == "references":
            params["context"] = {"includeDeclaration": True}
            cases.append((name, tool, payload, _raw(server, "textDocument/references", params)))
        elif payload.get("kind") == "definition":
            cases.append((name, tool, payload, _raw(server, "textDocument/definition", params)))
        elif answer.get("signatureOf") == "enclosingCall":
            # Inside a call's parentheses the tool asks signature help too, in parallel: so does raw.
            hover = _raw(server, "textDocument/hover", params)
            signature = _raw(server, "textDocument/signatureHelp", params)

            async def both(hover: Any = hover, signature: Any = signature) -> Any:
                return await asyncio.gather(hover(), signature())

            cases.append((f"{name} (+signature)", tool, payload, both))
        else:
            cases.append((name, tool, payload, _raw(server, "textDocument/hover", params)))
    return cases


async def generated_cases(service: Any, language: str) -> list[Case]:
    """``bench/intel_bench.py``'s calls on a generated project, after the first (cold) one."""
    from kandev_lsp.intel.surface.dispatch import IntelContext

    ext = "py" if language == "python" else "ts"
    first = {"target": {"path": f"lib.{ext}", "line": 1, "matchText": "greet"}, "kind": "references"}
    assert (await service.dispatch("code_navigate", first, IntelContext(deadline=120)))["ok"]
    return await bench_cases(service, language)


def _found(value: Any) -> int | None:
    """How many locations a call found: a raw request's list, or a tool answer's ``totalFound`` (for the
    references cases, where both count the same locations)."""
    if isinstance(value, list):
        return len(value)
    if isinstance(value, dict) and isinstance(value.get("totalFound"), int):
        return int(value["totalFound"])
    return None


async def against_raw(
    folder: Path,
    home: Path,
    measured: list[Side],
    cases_for: Callable[[Any], Awaitable[list[Case]]],
    rounds: int,
) -> list[dict[str, Any]]:
    """Each case through every side's ``kandev-lsp mcp`` (the official SDK's stdio client, the
    product's default transport), against the raw request on a warm server of the same kind (this
    tree's :class:`~kandev_lsp.intel.service.IntelService` in this process, the same settings, the
    pool's own client), with an MCP ``ping`` per side: per round, the raw request, the dispatch, each
    side's call and each side's ping, in an order shuffled round by round (seeded by the case's name)."""
    from kandev_lsp import TaskEnvironment
    from kandev_lsp.intel.service import IntelService
    from kandev_lsp.intel.surface.dispatch import IntelContext
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    task = TaskEnvironment.from_agent({"HOME": str(home), "PATH": "/usr/bin:/bin"})
    ctx = IntelContext(deadline=120)
    async with IntelService.open([folder], env=task) as service, contextlib.AsyncExitStack() as stack:
        cases = await cases_for(service)
        sessions: dict[str, Any] = {}
        servers: dict[str, int] = {}  # each side's `kandev-lsp mcp` process, for its CPU time
        for side in measured:
            params = StdioServerParameters(
                command=KANDEV_LSP,
                args=["mcp", "--workspace", str(folder), "--deadline", "120"],
                env=side.env,
            )
            before = {child.pid for child in psutil.Process().children()}
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions[side.label] = session
            (servers[side.label],) = {child.pid for child in psutil.Process().children()} - before

        async def call(label: str, tool: str, payload: dict[str, Any]) -> Any:
            result = await sessions[label].call_tool(tool, payload)
            assert not result.is_error and result.structured_content["ok"], (label, tool, result)
            return result.structured_content

        # Every case warmed up on every side before any is timed (the first call starts that side's
        # server and waits for its readiness; the files the cases open are then open on all sides).
        for _, tool, payload, raw in cases:
            for _ in range(3):
                await raw()
                assert (await service.dispatch(tool, payload, ctx))["ok"]
                for label in sessions:
                    await call(label, tool, payload)
        await asyncio.sleep(SETTLE_SECONDS)
        rows = []
        for name, tool, payload, raw in cases:

            async def run(
                step: tuple[str, str], tool: str = tool, payload: dict[str, Any] = payload, raw: Any = raw
            ) -> Any:
                label, kind = step
                if step == RAW:
                    return await raw()
                if step == DISPATCH:
                    return await service.dispatch(tool, payload, ctx)
                if kind == "ping":
                    return await sessions[label].send_ping()
                return await call(label, tool, payload)

            steps = [RAW, DISPATCH, *((label, kind) for label in sessions for kind in ("call", "ping"))]
            times: dict[tuple[str, str], list[float]] = {step: [] for step in steps}
            found: dict[str, int | None] = {}
            answer: dict[str, Any] = {}
            order = random.Random(name)  # the same orders in every run, for every tree
            for _ in range(rounds):
                # A fresh order each round: every step takes every place and follows every other one
                # (a rotation keeps the neighbours: one side's call always right after the dispatch,
                # on the raw server's heels, the other's after a ping).
                order.shuffle(steps)
                for step in steps:
                    started = time.perf_counter()
                    value = await run(step)
                    times[step].append(time.perf_counter() - started)
                    if step[1] != "ping" and name.startswith("references"):
                        found[step[0]] = _found(value)
                    if step == DISPATCH:
                        answer = value
            row = _row(name, times, found, list(sessions))
            row["wire"] = wire_costs(answer)
            # CPU per call, each step run back to back for at least CPU_SECONDS of wall time.
            row["cpu"] = {}
            for step in steps:
                calls = max(rounds, math.ceil(CPU_SECONDS / max(statistics.median(times[step]), 1e-4)))
                server = servers.get(step[0])
                here, there = _cpu(None), _cpu(server)
                for _ in range(calls):
                    await run(step)
                row["cpu"][step] = (
                    round((_cpu(None) - here) / calls * 1000, 3),
                    round((_cpu(server) - there) / calls * 1000, 3) if server is not None else None,
                )
            rows.append(row)
    return rows


#: ``against_raw``'s CPU phase runs each step for at least this long (the server's CPU time is read
#: in clock ticks where /proc has no ``schedstat``).
CPU_SECONDS = 1.0


def _cpu(pid: int | None) -> float:
    """CPU seconds so far of this process (``pid`` None) or of process ``pid``: all its threads' run
    time from ``/proc/PID/task/*/schedstat`` (nanoseconds) where Linux has it, else psutil's."""
    if pid is None:
        return time.process_time()
    tasks = Path(f"/proc/{pid}/task")
    if tasks.is_dir():
        total = 0
        for task in tasks.iterdir():
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                total += int((task / "schedstat").read_text().split()[0])
        if total:
            return total / 1e9
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


#: How many times :func:`wire_costs` repeats each piece (its p50 is printed).
WIRE_REPEATS = 21


def wire_costs(result: dict[str, Any]) -> dict[str, float]:
    """What the MCP layer does with one tool answer, piece by piece, timed in this process with the SDK's
    own types (p50 of WIRE_REPEATS, ms): the server's JSON text copy (``kandev-lsp mcp`` sends the answer
    as ``structuredContent`` and again as JSON text, cli/mcp.py's ``call_tool``), its encoding of the
    response (``CallToolResult`` built, dumped to JSON-ready data as the SDK's runner does, wrapped in a
    ``JSONRPCResponse`` and dumped to the line its stdio transport writes), and the client's decoding
    (the line parsed by the SDK's ``jsonrpc_message_adapter``, the result validated as a
    ``CallToolResult``); also the sizes, and the same encoding and decoding without the text copy."""
    import mcp_types as types

    def timed(work: Callable[[], Any]) -> float:
        taken = []
        for _ in range(WIRE_REPEATS):
            started = time.perf_counter()
            work()
            taken.append(time.perf_counter() - started)
        return _ms(taken)

    def text() -> str:
        return json.dumps(result, ensure_ascii=False, separators=(",", ":"))

    def encoded(with_text: bool) -> str:
        content: list[types.ContentBlock] = [types.TextContent(text=str(result.get("summary", "")))]
        if with_text:
            content.append(types.TextContent(text=text()))
        answer = types.CallToolResult(content=content, structured_content=result, is_error=False)
        dumped = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        message = types.JSONRPCResponse(jsonrpc="2.0", id=1, result=dumped)
        return message.model_dump_json(by_alias=True, exclude_unset=True)

    def decoded(line: str) -> Any:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        assert isinstance(message, types.JSONRPCResponse)
        return types.CallToolResult.model_validate(message.result, by_name=False)

    line, bare = encoded(True), encoded(False)
    copy = timed(text)
    return {
        "answerChars": len(text()),
        "lineChars": len(line),
        "textMs": copy,
        "encodeMs": round(timed(lambda: encoded(True)) - copy, 2),
        "decodeMs": timed(lambda: decoded(line)),
        "withoutTextMs": round(timed(lambda: encoded(False)) + timed(lambda: decoded(bare)), 2),
    }


#: The two steps of a round besides the sides' calls and pings: the raw request, and this tree's
#: ``dispatch`` of the same call in this process, on the same server as the raw request.
RAW = ("raw", "")
DISPATCH = ("dispatch", "")


def _row(
    case: str, times: dict[tuple[str, str], list[float]], found: dict[str, int | None], labels: list[str]
) -> dict[str, Any]:
    """A case's figures: per line (raw, in-process dispatch, each side's MCP call) the p50, its ratio to
    raw's p50 and its paired excess over raw (per round, the step less the raw request of the same
    round: a burst of load falls on both, where the difference of medians would take it whole); for
    the MCP calls also the ping's p50, the paired excess over raw plus ping, and that over the
    in-process dispatch plus ping (what the MCP layer costs beyond its bare round trip)."""
    raw = times[RAW]

    def paired(taken: list[float], *less: list[float]) -> float:
        """The median over rounds of ``taken`` less each of ``less`` in the same round, in ms."""
        rounds: list[float] = [taken[n] - sum(other[n] for other in less) for n in range(len(taken))]
        return round(statistics.median(rounds) * 1000, 2)

    def line(label: str, taken: list[float]) -> dict[str, Any]:
        return {
            "label": label,
            "ms": _ms(taken),
            "ratio": round(statistics.median(taken) / statistics.median(raw), 2),
            "overRawMs": paired(taken, raw),
            "found": found.get(label),
        }

    lines = [
        line("raw request", raw) | {"found": found.get("raw")},
        line("dispatch (in process)", times[DISPATCH]),
    ]
    lines[1]["found"] = found.get("dispatch")
    for label in labels:
        called, pinged = times[(label, "call")], times[(label, "ping")]
        lines.append(
            line(f"MCP {label}", called)
            | {
                "found": found.get(label),
                "pingMs": _ms(pinged),
                "overRawPingMs": paired(called, raw, pinged),
                "overDispatchPingMs": paired(called, times[DISPATCH], pinged),
            }
        )
    return {"case": case, "lines": lines}


def _verdict(case: str, line: dict[str, Any]) -> str:
    """Issue 20's per-call goal for an MCP line: references within REFERENCES_GOAL x raw, the small calls
    within SMALL_GOAL_MS of raw plus a ping (the call's excess over the raw request, less the round trip
    every MCP call pays)."""
    kind = case.split()[0]
    if "pingMs" not in line:
        return ""
    if kind == "references":
        return f"{'met' if line['ratio'] <= REFERENCES_GOAL else 'MISS'} (<= {REFERENCES_GOAL}x raw)"
    if kind in SMALL_CALLS:
        met = line["overRawPingMs"] <= SMALL_GOAL_MS
        return f"{'met' if met else 'MISS'} (<= raw + ping + {SMALL_GOAL_MS} ms)"
    return ""


def print_against_raw(title: str, rows: list[dict[str, Any]], load: tuple[float, float]) -> None:
    print(f"\n{title}; load average {load[0]:.2f} at the start, {load[1]:.2f} at the end")
    print(
        f"  {'case':26} {'measured':24} {'p50':>8} {'/raw':>6} {'-raw':>8} {'ping':>7} {'-raw-ping':>9} "
        f"{'-disp-ping':>10} {'found':>6}  goal"
    )
    for row in rows:
        for n, line in enumerate(row["lines"]):
            ping = {
                key: f"{line[key]:.2f}" if key in line else ""
                for key in ("pingMs", "overRawPingMs", "overDispatchPingMs")
            }
            found = "" if line["found"] is None else str(line["found"])
            print(
                f"  {row['case'] if n == 0 else '':26} {line['label']:24} {line['ms']:>8.2f} {line['ratio']:>5.2f}x "
                f"{line['overRawMs']:>8.2f} {ping['pingMs']:>7} {ping['overRawPingMs']:>9} "
                f"{ping['overDispatchPingMs']:>10} {found:>6}  {_verdict(row['case'], line)}"
            )
    print(
        "  (ms; -raw, -raw-ping, -disp-ping: per round, paired; dispatch is this tree's, on the raw request's server)"
    )
    print(
        "  CPU per call (ms; this process's: the raw client, the in-process dispatch, the MCP client; the "
        "server's:\n  its `kandev-lsp mcp` process; the language servers' own CPU is not counted)"
    )
    print(
        f"  {'case':26} {'side':22} {'raw':>6} {'disp':>6} {'server':>7} {'(ping)':>7} {'client':>7} "
        f"{'(ping)':>7} {'server-disp-ping':>16}"
    )
    for row in rows:
        cpu = row["cpu"]
        raw, dispatch = cpu[RAW][0], cpu[DISPATCH][0]
        for n, label in enumerate(line["label"].removeprefix("MCP ") for line in row["lines"][2:]):
            client, server = cpu[(label, "call")]
            ping_client, ping_server = cpu[(label, "ping")]
            print(
                f"  {row['case'] if n == 0 else '':26} {label:22} {raw:>6.2f} {dispatch:>6.2f} {server:>7.2f} "
                f"{ping_server:>7.2f} {client:>7.2f} {ping_client:>7.2f} {server - dispatch - ping_server:>16.2f}"
            )
    print(
        "  the MCP layer's work on this tree's answer, in this process with the SDK's types (p50, ms): "
        "the JSON text copy, the server's\n  encoding of the rest, the client's decoding; their sum, and "
        "encoding + decoding without the text copy"
    )
    print(
        f"  {'case':26} {'answer':>8} {'wire':>8} {'text':>6} {'encode':>7} {'decode':>7} {'sum':>6} "
        f"{'no text':>8}   (chars: the answer's JSON, the response line)"
    )
    for row in rows:
        wire = row["wire"]
        total = wire["textMs"] + wire["encodeMs"] + wire["decodeMs"]
        print(
            f"  {row['case']:26} {wire['answerChars']:>8} {wire['lineChars']:>8} {wire['textMs']:>6.2f} "
            f"{wire['encodeMs']:>7.2f} {wire['decodeMs']:>7.2f} {total:>6.2f} {wire['withoutTextMs']:>8.2f}"
        )


def measure(
    folder: Path,
    home: Path,
    measured: list[Side],
    cases_for: Callable[[Any], Awaitable[list[Case]]],
    rounds: int,
) -> tuple[list[dict[str, Any]], tuple[float, float]]:
    """:func:`against_raw`'s rows, and the 1-minute load average before and after it."""
    before = os.getloadavg()[0]
    rows = asyncio.run(against_raw(folder, home, measured, cases_for, rounds))
    return rows, (before, os.getloadavg()[0])


#: cProfile's pseudo-file of the functions written in C, which ``_bucket`` names by what they are.
_BUILT_IN = "~"


def _bucket(file: str, function: str) -> str:
    """Where a profiled function's own time belongs: kandev-lsp's room (``kandev_lsp/intel/reading``),
    an installed package (``pydantic_core``, ``mcp``, ``anyio``), a standard module (``asyncio``,
    ``json``), or for functions in C, the module named in cProfile's label (``_json``, ``posix``)."""
    if file == _BUILT_IN:
        for known in ("pydantic_core", "_json", "posix", "select", "_asyncio", "_io", "_socket"):
            if known in function:
                return f"C: {known}"
        return "C: other"
    path = Path(file)
    if "site-packages" in path.parts:
        return path.parts[path.parts.index("site-packages") + 1]
    core = Path(__file__).resolve().parent.parent / "core"
    if path.is_relative_to(core):
        return "/".join(("kandev_lsp", *path.relative_to(core).parts[:2])).removesuffix(".py")
    return path.parent.name if path.parent.name in ("asyncio", "json") else path.stem


#: One profiled function (cProfile's key: file, line, name) -> (calls, own CPU seconds) per measured call.
PerCall = dict[tuple[str, int, str], tuple[float, float]]


def _per_call(stats: Any, baseline: Any | None, calls: int) -> PerCall:
    """``stats`` per measured call, ``baseline``'s (a run with the same warm-up and no measured calls)
    taken off."""
    base = baseline.stats if baseline is not None else {}
    out = {}
    for key, (_, count, own, _cumulative, _callers) in stats.stats.items():
        before = base.get(key, (0, 0, 0.0, 0.0, None))
        out[key] = ((count - before[1]) / calls, (own - before[2]) / calls)
    return out


def print_profile(title: str, functions: PerCall) -> None:
    """The CPU per call by bucket (most first), and the costliest functions."""
    buckets: dict[str, list[float]] = {}
    for (file, _line, function), (count, own) in functions.items():
        bucket = buckets.setdefault(_bucket(file, function), [0.0, 0.0])
        bucket[0] += count
        bucket[1] += own
    total = sum(own for _, own in buckets.values())
    calls = sum(count for count, _ in buckets.values())
    print(f"  {title}: {calls:,.0f} function calls, {total * 1000:.2f} ms of CPU per call")
    for name, (count, own) in sorted(buckets.items(), key=lambda item: -item[1][1])[:TOP]:
        print(f"    {name:34} {own * 1000:7.3f} ms {own / total:6.1%} {count:9.0f} calls")
    print("    costliest functions (own CPU per call):")
    for (file, line, function), (count, own) in sorted(functions.items(), key=lambda item: -item[1][1])[:TOP]:
        where = f"{Path(file).name}:{line}" if file != _BUILT_IN else ""
        print(f"      {own * 1000:7.3f} ms {count:7.0f}x  {function} {where}")


#: How many buckets and functions ``--profile`` lists per end.
TOP = 12
#: ``python -c _PROFILED OUT SCRIPT ARGS...``: the console script SCRIPT under cProfile counting CPU
#: time, its stats written to OUT as it exits. ``python -m cProfile`` counts wall time, where a process
#: waiting in ``epoll``, or preempted in a pipe ``write`` that woke its reader, looks busy.
_PROFILED = """
import cProfile, runpy, sys, time
out, sys.argv = sys.argv[1], sys.argv[2:]
profiler = cProfile.Profile(time.process_time)
try:
    profiler.runcall(runpy.run_path, sys.argv[0], run_name="__main__")
except SystemExit:
    pass
finally:
    profiler.dump_stats(out)
"""


async def profile_over_mcp(
    folder: Path,
    home: Path,
    side: Side,
    cases_for: Callable[[Any], Awaitable[list[Case]]],
    prefix: str,
    calls: int,
    scratch: Path,
) -> None:
    """``--profile CASE``: where a warm call's CPU goes, on both ends of this tree's ``kandev-lsp mcp``.
    cProfile's function counts do not depend on the machine's load; its times are inflated by the
    profiling itself, most for code of many small calls, but say which part costs. The server is
    profiled in two processes with the same warm-up, one then making ``calls`` calls of the case and
    one none, the difference per call; the client (the SDK's session, in this process) over the same
    calls. ``--profile ping`` profiles MCP pings the same way: what every call costs the SDK."""
    import cProfile
    import pstats

    from kandev_lsp import TaskEnvironment
    from kandev_lsp.intel.service import IntelService
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    task = TaskEnvironment.from_agent({"HOME": str(home), "PATH": "/usr/bin:/bin"})
    async with IntelService.open([folder], env=task) as service:
        chosen = [(n, t, p) for n, t, p, _ in await cases_for(service) if n.startswith(prefix)]
    if "ping".startswith(prefix):  # the SDK's bare round trip, as a baseline of the same counts
        chosen.append(("ping", "", {}))
    if not chosen:
        raise SystemExit(f"--profile {prefix!r}: no case starts with it")
    for name, tool, payload in chosen:
        print(f"\n{name}: {calls} warm calls through `kandev-lsp mcp` ({side.label}), CPU under cProfile")
        server: list[Any] = []
        client = cProfile.Profile(time.process_time)
        for measured in (0, calls):
            out = scratch / f"server-{measured}.prof"
            command = [KANDEV_LSP, "mcp", "--workspace", str(folder), "--deadline", "120"]
            params = StdioServerParameters(
                command=sys.executable, args=["-c", _PROFILED, str(out), *command], env=side.env
            )
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()

                async def once(
                    session: Any = session, tool: str = tool, payload: dict[str, Any] = payload
                ) -> None:
                    if tool:
                        assert not (await session.call_tool(tool, payload)).is_error
                    else:
                        await session.send_ping()

                for _ in range(4):
                    await once()
                await asyncio.sleep(SETTLE_SECONDS)
                client.enable()
                for _ in range(measured):
                    await once()
                client.disable()
            if not out.exists():
                raise SystemExit(f"the profiled server wrote no {out.name}: did it exit cleanly?")
            server.append(pstats.Stats(str(out)))
            out.unlink()
        print_profile("server (kandev-lsp mcp)", _per_call(server[1], server[0], calls))
        print_profile(
            "client (the SDK's ClientSession, this process)", _per_call(pstats.Stats(client), None, calls)
        )


def main() -> int:
    parser = project_arguments(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus",
        action="append",
        choices=sorted(CORPUS_REFERENCES),
        help="measure on this real corpus (click 8.1.7, zod 4.6.7) instead of the generated projects",
    )
    parser.add_argument(
        "--corpora",
        type=Path,
        default=Path(tempfile.gettempdir()) / "kandev-lsp-corpora",
        help="where the corpora are fetched once (as bench/intel_corpus_bench.py does)",
    )
    parser.add_argument(
        "--compare", type=Path, metavar="DIR", help="another checkout whose `kandev-lsp mcp` is measured too"
    )
    parser.add_argument(
        "--profile",
        metavar="CASE",
        help="cProfile --rounds warm MCP calls of the cases whose name starts with CASE, on both ends, no timing",
    )
    args = parser.parse_args()
    rounds = args.rounds or (5 if args.quick else 40)
    modules = args.modules or (10 if args.quick else 40)
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as temp:
        base = Path(temp)
        home = bench_home(args.home, base, ["python", "typescript"])
        measured = sides(home, args.compare, base)
        names = ", ".join(side.label for side in measured)
        if args.corpus:
            click, zod = fetch(args.corpora)
            folders = dict(zip(("click", "zod"), working_copies(click, zod, base, "mcp"), strict=True))
            releases = {"click": "click 8.1.7 (pyright)", "zod": "zod 4.6.7 (typescript-language-server)"}
            for corpus in args.corpus:
                folder = folders[corpus]
                cases_for = functools.partial(corpus_cases, corpus=corpus, folder=folder)
                if args.profile is not None:
                    coroutine = profile_over_mcp(
                        folder, home, measured[0], cases_for, args.profile, rounds, base
                    )
                    asyncio.run(coroutine)
                    continue
                rows, load = measure(folder, home, measured, cases_for, rounds)
                print_against_raw(f"{releases[corpus]}, {rounds} rounds, sides {names}", rows, load)
            return 0
        for language in args.language or ["python", "typescript"]:
            folder = base / language
            folder.mkdir()
            (python_project if language == "python" else typescript_project)(folder, modules)
            cases_for = functools.partial(generated_cases, language=language)
            if args.profile is not None:
                asyncio.run(
                    profile_over_mcp(folder, home, measured[0], cases_for, args.profile, rounds, base)
                )
                continue
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
            if args.compare is not None:
                rows, load = measure(folder, home, measured, cases_for, rounds)
                print_against_raw(
                    f"{language} ({modules} modules), {rounds} rounds, sides {names}", rows, load
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
