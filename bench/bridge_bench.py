"""Bridge benchmark: the WebSocket stream against the same echo server driven directly over pipes.

Run: ``.venv/bin/python bench/bridge_bench.py`` (about a minute; ``--quick`` for a smoke run).

Both paths talk to one small Content-Length echo script (it writes every frame body back unchanged):

* direct: this process <-pipes-> echo
* bridge: this process <-WebSocket-> stream server (a separate process, the same ``StreamServer`` that
  ``kandev-lsp serve`` runs) <-pipes-> echo

Reported, for 1 KiB and 1 MiB messages: round-trip latency p50/p99 (one message in flight) and throughput
(a window of messages in flight), and the bridge/direct ratios. Goals: the bridge adds under 0.2 ms to
the p50 round trip of 1 KiB messages, and keeps at least 50 % of the direct throughput of 1 MiB messages.
Also reported: the RSS of the server process with 8 idle connections (each with its own echo server),
and, for context, a plain websockets echo server in the same server process: the cost of any WebSocket
hop between two Python processes, which the bridge cannot go below. ``--loop uvloop`` runs both processes
on uvloop (when it is installed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ECHO = r"""
import sys
stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
while True:
    length = None
    while True:
        line = stdin.readline()
        if not line:
            sys.exit(0)
        if line == b"\r\n":
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    body = stdin.read(length)
    stdout.write(b"Content-Length: %d\r\n\r\n" % len(body))
    stdout.write(body)
    stdout.flush()
"""

TOKEN = "bridge-bench-token-0123456789abcdef"
KIB = 1024
MIB = 1024 * 1024


# The server side (a child process) -------------------------------------------------------------------------
def run_loop(main: Awaitable[Any], loop: str) -> Any:
    if loop == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)


def serve_child(echo: str, workspace: str, loop: str) -> None:
    """Run a stream server whose ``echo`` language is the echo script; print its URL, serve until stdin ends."""
    from kandev_lsp import hookimpl
    from kandev_lsp.discovery import Candidate
    from kandev_lsp.host import PluginHost
    from kandev_lsp.language import LanguageSpec, ManualInstall
    from kandev_lsp.stream.auth import StreamToken
    from kandev_lsp.stream.server import StreamServer
    from kandev_lsp.taskenv import Task, TaskEnvironment

    spec = LanguageSpec("echo", "Echo", "echo-lsp", install=ManualInstall("bench only"))

    class EchoPlugin:
        @hookimpl
        def kandev_lsp_languages(self) -> list[LanguageSpec]:
            return [spec]

        @hookimpl
        def kandev_lsp_discover(self, language: LanguageSpec) -> list[Candidate] | None:
            return [Candidate(echo, "bench")] if language.id == "echo" else None

    async def main() -> None:
        plugins = PluginHost.load()
        plugins.register(EchoPlugin(), "bench-echo")
        task = Task(workspace, TaskEnvironment.from_agent())

        async def echo_ws(ws: Any) -> None:
            async for data in ws:
                await ws.send(data)

        from websockets.asyncio.server import serve

        async with (
            StreamServer(plugins=plugins, task=task, token=StreamToken(TOKEN)) as server,
            serve(echo_ws, "127.0.0.1", 0, compression=None, max_size=None) as floor,
        ):
            floor_url = f"ws://127.0.0.1:{floor.sockets[0].getsockname()[1]}/"
            print(json.dumps({"url": server.url, "floor": floor_url}), flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

    run_loop(main(), loop)


# The client side ---------------------------------------------------------------------------------------------
Send = Callable[[bytes], Awaitable[None]]
Receive = Callable[[], Awaitable[bytes]]


def message(size: int) -> bytes:
    head = b'{"jsonrpc":"2.0","method":"bench","params":"'
    tail = b'"}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


async def open_direct(echo: str, workspace: str) -> tuple[Send, Receive, Callable[[], Awaitable[None]]]:
    process = await asyncio.create_subprocess_exec(
        echo, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=workspace, limit=4 * MIB
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    async def send(body: bytes) -> None:
        stdin.write(b"Content-Length: %d\r\n\r\n" % len(body))
        stdin.write(body)
        await stdin.drain()

    async def receive() -> bytes:
        header = await stdout.readuntil(b"\r\n\r\n")
        return await stdout.readexactly(int(header.split(b":")[1].split(b"\r\n")[0]))

    async def close() -> None:
        stdin.close()
        await process.wait()

    return send, receive, close


async def open_bridge(
    url: str, *, floor: bool = False
) -> tuple[Send, Receive, Callable[[], Awaitable[None]]]:
    """A WebSocket to the stream's echo language, or (``floor``) to a plain websockets echo server."""
    from websockets.asyncio.client import connect

    ws = await connect(
        url if floor else url + "?language=echo",
        additional_headers={"Authorization": f"Bearer {TOKEN}"},
        compression=None,
        max_size=None,
    )
    if not floor:
        ready = json.loads(await ws.recv())
        assert ready["status"] == "ready", ready

    async def send(body: bytes) -> None:
        await ws.send(body, text=True)

    async def receive() -> bytes:
        return await ws.recv(decode=False)

    async def close() -> None:
        await ws.close()

    return send, receive, close


async def latencies(send: Send, receive: Receive, body: bytes, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        await send(body)
        echoed = await receive()
        times.append(time.perf_counter() - started)
        assert len(echoed) == len(body)
    return times


async def throughput(send: Send, receive: Receive, body: bytes, count: int, window: int) -> float:
    """Bytes per second of echoed payload with up to ``window`` messages in flight."""
    slots = asyncio.Semaphore(window)

    async def writer() -> None:
        for _ in range(count):
            await slots.acquire()
            await send(body)

    started = time.perf_counter()
    task = asyncio.ensure_future(writer())
    for _ in range(count):
        echoed = await receive()
        assert len(echoed) == len(body)
        slots.release()
    await task
    return len(body) * count / (time.perf_counter() - started)


@dataclass
class Result:
    p50: float
    p99: float
    rate: float


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def measure(
    opener: Callable[[], Awaitable[tuple[Send, Receive, Any]]], size: int, plan: dict[str, int]
) -> Result:
    send, receive, close = await opener()
    try:
        body = message(size)
        await latencies(send, receive, body, max(5, plan["latency"] // 10))  # warm up
        times = await latencies(send, receive, body, plan["latency"])
        rate = await throughput(send, receive, body, plan["throughput"], plan["window"])
    finally:
        await close()
    return Result(statistics.median(times), percentile(times, 0.99), rate)


def rss_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


async def idle_rss(url: str, pid: int, connections: int) -> tuple[int, int]:
    from websockets.asyncio.client import connect

    before = rss_of(pid)
    opened = []
    for _ in range(connections):
        ws = await connect(url + "?language=echo", additional_headers={"Authorization": f"Bearer {TOKEN}"})
        assert json.loads(await ws.recv())["status"] == "ready"
        opened.append(ws)
    await asyncio.sleep(1.0)
    during = rss_of(pid)
    for ws in opened:
        await ws.close()
    return before, during


PLANS = {
    KIB: {"latency": 3000, "throughput": 20000, "window": 32},
    MIB: {"latency": 60, "throughput": 300, "window": 4},
}
QUICK = {
    KIB: {"latency": 300, "throughput": 2000, "window": 32},
    MIB: {"latency": 10, "throughput": 30, "window": 4},
}


async def run(quick: bool, loop: str) -> dict[str, Any]:
    plans = QUICK if quick else PLANS
    with tempfile.TemporaryDirectory(prefix="kandev-bridge-bench-") as root:
        echo = Path(root) / "echo-lsp"
        echo.write_text(f"#!{sys.executable} -IS\n{ECHO}", encoding="utf-8")
        echo.chmod(0o755)
        workspace = Path(root) / "workspace"
        workspace.mkdir()
        server = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--loop",
            loop,
            "--serve-child",
            str(echo),
            str(workspace),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert server.stdout is not None and server.stdin is not None
        urls = json.loads(await server.stdout.readline())
        url, floor_url = urls["url"], urls["floor"]
        report: dict[str, Any] = {"loop": loop}
        try:
            before, during = await idle_rss(url, server.pid, 8)
            report["rss"] = {"idle_server": before, "with_8_idle_connections": during}
            for size, label in ((KIB, "1KiB"), (MIB, "1MiB")):
                direct = await measure(lambda: open_direct(str(echo), str(workspace)), size, plans[size])
                bridged = await measure(lambda: open_bridge(url), size, plans[size])
                floor = await measure(lambda: open_bridge(floor_url, floor=True), size, plans[size])
                report[label] = {
                    "direct": vars(direct),
                    "bridge": vars(bridged),
                    "websocket_floor": vars(floor),
                    "added_p50_ms": (bridged.p50 - direct.p50) * 1000,
                    "p50_ratio": bridged.p50 / direct.p50,
                    "throughput_ratio": bridged.rate / direct.rate,
                }
        finally:
            server.stdin.close()
            await server.wait()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few iterations only (smoke run)")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    parser.add_argument(
        "--loop", choices=["asyncio", "uvloop"], default="asyncio", help="event loop of both processes"
    )
    parser.add_argument("--serve-child", nargs=2, metavar=("ECHO", "WORKSPACE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_child:
        serve_child(*args.serve_child, args.loop)
        return 0
    started = time.perf_counter()
    report = run_loop(run(args.quick, args.loop), args.loop)
    if args.json:
        print(json.dumps(report, indent=2))
    for label in ("1KiB", "1MiB"):
        row = report[label]
        direct, bridge = row["direct"], row["bridge"]
        print(
            f"{label}: round trip p50 direct {direct['p50'] * 1000:.3f} ms, bridge {bridge['p50'] * 1000:.3f} ms "
            f"(+{row['added_p50_ms']:.3f} ms, x{row['p50_ratio']:.2f}); p99 direct {direct['p99'] * 1000:.3f} ms, "
            f"bridge {bridge['p99'] * 1000:.3f} ms"
        )
        print(
            f"{label}: throughput direct {direct['rate'] / MIB:.1f} MiB/s, bridge {bridge['rate'] / MIB:.1f} MiB/s "
            f"({row['throughput_ratio'] * 100:.0f} % of direct)"
        )
        floor = row["websocket_floor"]
        print(
            f"{label}: plain websockets echo between two processes (the floor of any WebSocket hop): "
            f"p50 {floor['p50'] * 1000:.3f} ms, {floor['rate'] / MIB:.1f} MiB/s; the bridge (with its extra "
            f"pipe hop to the server) adds {(bridge['p50'] - floor['p50']) * 1000:+.3f} ms to it"
        )
    rss = report["rss"]
    print(
        f"server RSS: {rss['idle_server'] / MIB:.1f} MiB idle, {rss['with_8_idle_connections'] / MIB:.1f} MiB "
        "with 8 idle connections"
    )
    kib, mib = report["1KiB"], report["1MiB"]
    goals = [
        (f"1 KiB p50 added < 0.2 ms ({kib['added_p50_ms']:.3f} ms)", kib["added_p50_ms"] < 0.2),
        (
            f"1 MiB throughput >= 50 % of direct ({mib['throughput_ratio'] * 100:.0f} %)",
            mib["throughput_ratio"] >= 0.5,
        ),
    ]
    for text, met in goals:
        print(f"goal {'met' if met else 'MISSED'}: {text}")
    print(f"event loop: {report['loop']}; took {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
