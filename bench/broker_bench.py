"""Broker benchmark: what a lease costs and what it buys, against baselines measured in the same run.

Run: ``.venv/bin/python bench/broker_bench.py`` (about 75 s; ``--quick`` for a smoke run,
``--rounds N`` for more or fewer rounds, ``--reloads N`` for the soak). Needs Debian's gopls at /usr/bin/gopls.

Everything runs as the real processes a deployment runs: ``kandev-lsp serve`` (one task host, gopls on
a tiny Go module) and ``kandev-lsp broker`` with browser continuity on, over 127.0.0.1 WebSockets.

* **reattach vs cold start** (the reason leases exist): the time from connecting to the broker until
  the client's ``initialize`` is answered, for a new lease (serve starts gopls, gopls initializes)
  against a reattach to the warm detached lease by its hint (the broker answers ``initialize`` from the
  retained result). In each round: one cold start, then several reattaches (their median); ratio
  cold / warm per round.
* **round trip through broker + serve vs serve alone**: ``textDocument/documentSymbol`` p50 (one request
  in flight) on a connection through the broker's lease, and on a direct connection to serve; measured
  back to back in each round, in alternating order, so the ratio compares two figures taken under the
  same machine load.
* **memory per idle lease**: the broker process's RSS growth with N detached leases (each with its
  upstream WebSocket and retained LSP state), and, for scale, the growth of serve's process tree (the
  warm gopls each lease keeps alive), divided by N; measured once, after a warm-up lease.
* **first complete hover, reload vs cold page** (issue 18): what a page waits for, from connecting to
  the first hover that answers with contents: a cold page (new lease: gopls starts, initializes, loads
  the package) against a reloaded page (reattach by its hint, reopen the file, ``attachment-ready``, no
  second initialize); ratio per round.
* **soak: reloads with requests in flight** (issue 18): one lease, reloaded N times (200 by default).
  Each reload reattaches, reopens a file with a type error, sends ``attachment-ready``, waits for that
  file's diagnostics (for the page's own version 1: a reload that gets none within 10 s is a *lost*
  diagnostics), sends three requests and leaves at once, half the time with a close frame, half by
  dropping the connection (a killed tab), with the three still in flight. Printed: lost diagnostics,
  how many gopls processes ran (one, the same, throughout), how many are left after the final stop, and
  the broker's RSS growth over the soak.

Printed: medians over the rounds with the spread (lowest-highest). Goals: a reattach at least 5x faster
than a cold start (median), a reloaded page's first hover at least 4x sooner than a cold page's (the
issue measured 4-15x for the first marker), a soak with no lost diagnostics, one server throughout and
none left, and the broker adding under 1 ms to the median documentSymbol round trip.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

CLI = [sys.executable, "-m", "kandev_lsp.cli"]
SERVE_TOKEN = "broker-bench-serve-token-0123456789"
BROKER_TOKEN = "broker-bench-broker-token-0123456789"
MAIN_GO = "package main\n\nfunc main() {}\n\nfunc helper() int { return 1 }\n\ntype T struct{ A int }\n"
#: A file gopls always reports an error in: every reload of the soak expects its diagnostics.
BAD_GO = 'package main\n\nfunc bad() int { return "no" }\n'
HELPER = {"line": 4, "character": 6}  # `helper` in MAIN_GO
GOPLS = "/usr/bin/gopls"


# --- processes ------------------------------------------------------------------------------------


def _environ(**extra: str) -> dict[str, str]:
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("KANDEV_LSP_", "KANDEV_FEATURES_"))
    }
    environ.update(extra)
    return environ


async def _start(
    args: list[str], environ: dict[str, str]
) -> tuple[asyncio.subprocess.Process, dict[str, Any]]:
    process = await asyncio.create_subprocess_exec(
        *CLI, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=environ
    )
    assert process.stdout is not None
    async with asyncio.timeout(30):
        line = await process.stdout.readline()
    if not line:
        raise SystemExit(f"kandev-lsp {args[0]} did not start")
    return process, json.loads(line)


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            await process.wait()


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def _tree_rss_kib(pid: int) -> int:
    return sum(_rss_kib(member) for member in _tree(pid))


# --- a client -------------------------------------------------------------------------------------


class Client:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.next_id = 1

    async def ready(self) -> dict[str, Any]:
        while True:
            frame = json.loads(await self.ws.recv())
            if frame.get("status") == "ready":
                return dict(frame)

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        number = self.next_id
        self.next_id += 1
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params}))
        while True:
            message = json.loads(await self.ws.recv())
            if message.get("id") == number and "method" not in message:
                return dict(message)

    async def notify(self, method: str, params: Any) -> None:
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    async def initialize(self, root: str) -> None:
        await self.request("initialize", {"processId": None, "rootUri": root, "capabilities": {}})

    async def open(self, uri: str) -> None:
        document = {"uri": uri, "languageId": "go", "version": 1, "text": MAIN_GO}
        await self.notify("textDocument/didOpen", {"textDocument": document})

    async def stop(self) -> None:
        await self.ws.send(json.dumps({"control": "stop", "id": 1}))
        while "ack" not in json.loads(await self.ws.recv()):
            pass

    async def reopen(self, uri: str, text: str) -> None:
        """A reloaded page: reopen its file at its own version 1, then attachment-ready (K17.5)."""
        document = {"uri": uri, "languageId": "go", "version": 1, "text": text}
        await self.notify("textDocument/didOpen", {"textDocument": document})
        await self.ws.send(json.dumps({"control": "attachment-ready", "id": "r"}))

    async def first_hover(self, uri: str) -> None:
        """Hover until the server answers with contents (a cold gopls answers null while loading)."""
        params = {"textDocument": {"uri": uri}, "position": HELPER}
        while not (await self.request("textDocument/hover", params)).get("result"):
            await asyncio.sleep(0.02)

    async def diagnostics(self, uri: str, version: int | None, timeout: float) -> bool:
        """Whether non-empty diagnostics for ``uri`` at the page's ``version`` (any: ``None``) arrive
        within ``timeout``."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    message = json.loads(await self.ws.recv())
                    params = message.get("params") or {}
                    if (
                        message.get("method") == "textDocument/publishDiagnostics"
                        and params.get("uri") == uri
                        and (version is None or params.get("version") == version)
                        and params.get("diagnostics")
                    ):
                        return True
        except TimeoutError:
            return False


@asynccontextmanager
async def _client(url: str, token: str) -> AsyncIterator[Client]:
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}, max_size=None) as ws:
        yield Client(ws)


# --- the measurements -----------------------------------------------------------------------------


async def _round_trip(client: Client, uri: str, count: int) -> float:
    params = {"textDocument": {"uri": uri}}
    for _ in range(10):  # warm-up
        await client.request("textDocument/documentSymbol", params)
    times = []
    for _ in range(count):
        started = time.perf_counter()
        await client.request("textDocument/documentSymbol", params)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def _direct_round_trip(serve_url: str, root: str, uri: str, count: int) -> float:
    async with _client(f"{serve_url}?language=go", SERVE_TOKEN) as client:
        await client.ready()
        await client.initialize(root)
        await client.notify("initialized", {})
        await client.open(uri)
        return await _round_trip(client, uri, count)


async def _one_round(
    broker_url: str, serve_url: str, root: str, uri: str, reattaches: int, count: int, direct_first: bool
) -> dict[str, float]:
    url = f"{broker_url}/lsp/bench?language=go"
    # Cold: a new lease, so serve starts gopls and gopls initializes.
    started = time.perf_counter()
    async with _client(url, BROKER_TOKEN) as client:
        ready = await client.ready()
        await client.initialize(root)
        cold = time.perf_counter() - started
        assert ready["resumed"] is False, "a cold round found a live lease"
        lease = ready["lease"]
        await client.notify("initialized", {})
        await client.open(uri)
        await client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    # Warm: reattach to the detached lease; a generic client sends initialize again.
    warms = []
    for _ in range(reattaches):
        started = time.perf_counter()
        async with _client(f"{url}&lease={lease}", BROKER_TOKEN) as client:
            ready = await client.ready()
            await client.initialize(root)
            warms.append(time.perf_counter() - started)
            assert ready["resumed"] is True, "a reattach did not resume"
            await client.notify("initialized", {})
    direct = await _direct_round_trip(serve_url, root, uri, count) if direct_first else 0.0
    async with _client(f"{url}&lease={lease}", BROKER_TOKEN) as client:
        await client.ready()
        await client.initialize(root)
        await client.notify("initialized", {})
        await client.open(uri)  # the broker closed the documents on detach; the client reopens
        via = await _round_trip(client, uri, count)
        await client.stop()  # the next round starts cold
    if not direct_first:
        direct = await _direct_round_trip(serve_url, root, uri, count)
    warm = statistics.median(warms)
    return {"cold": cold, "warm": warm, "via": via, "direct": direct}


async def _hover_round(broker_url: str, root: str, uri: str) -> dict[str, float]:
    """The first complete hover: a cold page against a reloaded one (see the module docstring)."""
    url = f"{broker_url}/lsp/bench?language=go"
    started = time.perf_counter()
    async with _client(url, BROKER_TOKEN) as client:
        ready = await client.ready()
        assert ready["resumed"] is False, "a cold page found a live lease"
        await client.initialize(root)
        await client.notify("initialized", {})
        await client.open(uri)
        await client.first_hover(uri)
        cold = time.perf_counter() - started
        lease = ready["lease"]
    started = time.perf_counter()
    async with _client(f"{url}&lease={lease}", BROKER_TOKEN) as client:
        ready = await client.ready()
        assert ready["resumed"] is True, "a reload did not resume"
        await client.reopen(uri, MAIN_GO)
        await client.first_hover(uri)
        warm = time.perf_counter() - started
        await client.stop()
    return {"cold_hover": cold, "warm_hover": warm}


def _servers(serve_pid: int) -> list[int]:
    """The gopls processes in serve's tree (its `go list` children are not servers)."""
    found = []
    for pid in _tree(serve_pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv0 = handle.read().split(b"\0", 1)[0]
        except OSError:
            continue
        if argv0.endswith(b"gopls"):
            found.append(pid)
    return found


async def _soak(
    broker_url: str, broker_pid: int, serve_pid: int, root: str, bad_uri: str, reloads: int
) -> dict[str, Any]:
    """One lease reloaded ``reloads`` times with requests in flight (see the module docstring)."""
    url = f"{broker_url}/lsp/bench?language=go"
    async with _client(url, BROKER_TOKEN) as client:
        ready = await client.ready()
        lease = ready["lease"]
        await client.initialize(root)
        await client.notify("initialized", {})
        await client.reopen(bad_uri, BAD_GO)
        if not await client.diagnostics(bad_uri, None, 30.0):  # a fresh gopls: from its first load
            raise SystemExit("broker_bench: gopls published no diagnostics for the soak's file")
    servers = set(_servers(serve_pid))
    await asyncio.sleep(1.0)
    rss_before = _rss_kib(broker_pid)
    lost = 0
    other_lease = 0
    hover = {"textDocument": {"uri": bad_uri}, "position": {"line": 2, "character": 6}}
    for number in range(reloads):
        async with _client(f"{url}&lease={lease}", BROKER_TOKEN) as client:
            ready = await client.ready()
            other_lease += int(ready["lease"] != lease or not ready["resumed"])
            await client.reopen(bad_uri, BAD_GO)
            lost += int(not await client.diagnostics(bad_uri, 1, 10.0))
            for index, method in enumerate(
                ("textDocument/hover", "textDocument/documentSymbol", "textDocument/completion")
            ):
                params = (
                    hover if method != "textDocument/documentSymbol" else {"textDocument": {"uri": bad_uri}}
                )
                await client.ws.send(
                    json.dumps({"jsonrpc": "2.0", "id": 1000 + index, "method": method, "params": params})
                )
            if number % 2:
                client.ws.transport.abort()  # a killed tab: no close frame, three requests in flight
        servers.update(_servers(serve_pid))
    await asyncio.sleep(1.0)
    rss_after = _rss_kib(broker_pid)
    async with _client(f"{url}&lease={lease}", BROKER_TOKEN) as client:
        await client.ready()
        await client.stop()
    left = _servers(serve_pid)
    for _ in range(50):  # gopls' own `go list` children go with it; give the tree a moment
        if len(_tree(serve_pid)) == 1:
            break
        await asyncio.sleep(0.1)
    return {
        "reloads": reloads,
        "lost_diagnostics": lost,
        "other_lease": other_lease,
        "servers_seen": len(servers),
        "servers_left": len(left),
        "tree_left": len(_tree(serve_pid)) - 1,
        "broker_rss_growth_kib": rss_after - rss_before,
    }


async def _memory(
    broker_url: str, broker_pid: int, serve_pid: int, root: str, leases: int
) -> dict[str, float]:
    url = f"{broker_url}/lsp/bench?language=go"

    async def open_lease(client: Client) -> str:
        ready = await client.ready()
        await client.initialize(root)
        await client.notify("initialized", {})
        return str(ready["lease"])

    async with _client(url, BROKER_TOKEN) as client:  # warm-up: one lease created and stopped
        await open_lease(client)
        await client.stop()
    await asyncio.sleep(1.0)
    broker_before, serve_before = _rss_kib(broker_pid), _tree_rss_kib(serve_pid)
    async with AsyncExitStack() as stack:  # N clients at once: N leases; leaving detaches them all
        clients = [await stack.enter_async_context(_client(url, BROKER_TOKEN)) for _ in range(leases)]
        hints = await asyncio.gather(*(open_lease(client) for client in clients))
    await asyncio.sleep(2.0)  # every lease detached and idle
    broker_after, serve_after = _rss_kib(broker_pid), _tree_rss_kib(serve_pid)
    for hint in hints:  # the soak that follows starts with no other server
        async with _client(f"{url}&lease={hint}", BROKER_TOKEN) as client:
            await client.ready()
            await client.stop()
    return {
        "leases": leases,
        "broker_kib_per_lease": (broker_after - broker_before) / leases,
        "serve_tree_mib_per_lease": (serve_after - serve_before) / leases / 1024,
        "broker_rss_mib": broker_after / 1024,
    }


async def run(rounds: int, reattaches: int, count: int, leases: int, reloads: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="broker-bench-") as tmp:
        root_dir = Path(tmp)
        workspace = root_dir / "workspace"
        workspace.mkdir()
        (workspace / "go.mod").write_text("module example.com/bench\n\ngo 1.19\n")
        (workspace / "main.go").write_text(MAIN_GO)
        (workspace / "bad.go").write_text(BAD_GO)
        root, uri = workspace.as_uri(), (workspace / "main.go").as_uri()
        bad_uri = (workspace / "bad.go").as_uri()
        serve, serve_line = await _start(
            [
                "serve",
                "--workspace",
                str(workspace),
                "--env=PATH=/usr/bin:/bin",
                f"--env=HOME={tmp}",
                "--log-level",
                "warning",
            ],
            _environ(KANDEV_LSP_TOKEN=SERVE_TOKEN),
        )
        broker = None
        try:
            directory = root_dir / "directory.json"
            execution = {
                "executor": "local",
                "streamUrl": serve_line["url"],
                "token": SERVE_TOKEN,
                "workspace": str(workspace),
            }
            directory.write_text(json.dumps({"sessions": {"bench": "x1"}, "executions": {"x1": execution}}))
            broker, broker_line = await _start(
                ["broker", "--directory", str(directory), "--log-level", "warning"],
                _environ(
                    KANDEV_LSP_BROKER_TOKEN=BROKER_TOKEN,
                    KANDEV_FEATURES_LSP_BROWSER_CONTINUITY="1",
                    KANDEV_LSP_MAX_CONNECTIONS=str(max(8, leases)),
                ),
            )
            results = []
            for index in range(rounds):
                figures = await _one_round(
                    broker_line["url"], serve_line["url"], root, uri, reattaches, count, index % 2 == 1
                )
                figures.update(await _hover_round(broker_line["url"], root, uri))
                results.append(figures)
            memory = await _memory(broker_line["url"], broker.pid, serve.pid, root, leases)
            soak = await _soak(broker_line["url"], broker.pid, serve.pid, root, bad_uri, reloads)
        finally:
            if broker is not None:
                await _stop(broker)
            await _stop(serve)
    return {"rounds": results, "memory": memory, "soak": soak}


def _spread(values: list[float], scale: float = 1.0, digits: int = 2) -> str:
    return (
        f"{statistics.median(values) * scale:.{digits}f} "
        f"({min(values) * scale:.{digits}f}-{max(values) * scale:.{digits}f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and requests (smoke run)")
    parser.add_argument("--rounds", type=int, help="rounds (default: 5; 2 with --quick)")
    parser.add_argument(
        "--leases", type=int, default=6, help="idle leases for the memory figure (default: 6)"
    )
    parser.add_argument("--reloads", type=int, help="reloads in the soak (default: 200; 20 with --quick)")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    args = parser.parse_args()
    if not os.access(GOPLS, os.X_OK):
        print(f"broker_bench: needs gopls at {GOPLS}", file=sys.stderr)
        return 1
    rounds = args.rounds or (2 if args.quick else 5)
    started = time.perf_counter()
    reloads = args.reloads or (20 if args.quick else 200)
    report = asyncio.run(
        run(rounds, 3 if args.quick else 5, 50 if args.quick else 300, max(3, args.leases), reloads)
    )
    if args.json:
        print(json.dumps(report, indent=2))
    per_round = report["rounds"]
    cold = [r["cold"] for r in per_round]
    warm = [r["warm"] for r in per_round]
    via = [r["via"] for r in per_round]
    direct = [r["direct"] for r in per_round]
    speedup = [r["cold"] / r["warm"] for r in per_round]
    overhead = [r["via"] / r["direct"] for r in per_round]
    added = [r["via"] - r["direct"] for r in per_round]
    memory = report["memory"]
    soak = report["soak"]
    cold_hover = [r["cold_hover"] for r in per_round]
    warm_hover = [r["warm_hover"] for r in per_round]
    hover_speedup = [r["cold_hover"] / r["warm_hover"] for r in per_round]
    print(f"{rounds} rounds; medians over the rounds, (lowest-highest) in brackets")
    print(f"cold start (new lease, gopls starts) to initialize answered: {_spread(cold, 1000, 1)} ms")
    print(f"reattach to the warm lease to initialize answered:          {_spread(warm, 1000, 1)} ms")
    print(f"  cold / reattach: {_spread(speedup, digits=1)}x")
    print(f"documentSymbol p50, serve alone:    {_spread(direct, 1000, 3)} ms")
    print(f"documentSymbol p50, broker + serve: {_spread(via, 1000, 3)} ms")
    print(f"  broker + serve / serve alone: {_spread(overhead)}x; added {_spread(added, 1000, 3)} ms")
    print(
        f"memory per idle lease ({memory['leases']} detached leases): broker "
        f"{memory['broker_kib_per_lease']:.0f} KiB; serve's tree (the warm gopls it keeps) "
        f"{memory['serve_tree_mib_per_lease']:.1f} MiB; broker RSS {memory['broker_rss_mib']:.1f} MiB"
    )
    print(f"first complete hover, cold page (new lease):   {_spread(cold_hover, 1000, 1)} ms")
    print(f"first complete hover, reloaded page (resumes): {_spread(warm_hover, 1000, 1)} ms")
    print(f"  cold / reload: {_spread(hover_speedup, digits=1)}x")
    print(
        f"soak, {soak['reloads']} reloads with 3 requests in flight at each departure (half of them "
        f"dropped connections): {soak['lost_diagnostics']} lost diagnostics, "
        f"{soak['other_lease']} reloads on another lease, {soak['servers_seen']} gopls process(es) "
        f"throughout, {soak['servers_left']} left after stop ({soak['tree_left']} processes in serve's "
        f"tree); broker RSS {soak['broker_rss_growth_kib']:+d} KiB over the soak"
    )
    goals = [
        (statistics.median(speedup) >= 5, "a reattach at least 5x faster than a cold start (median)"),
        (statistics.median(hover_speedup) >= 4, "a reloaded page's first hover at least 4x sooner (median)"),
        (
            soak["lost_diagnostics"] == 0 and soak["servers_seen"] == 1 and soak["servers_left"] == 0,
            "the soak loses no diagnostics, keeps one server and leaves none",
        ),
        (
            statistics.median(added) < 0.001,
            "the broker adds under 1 ms to the documentSymbol round trip (median)",
        ),
    ]
    for met, text in goals:
        print(f"goal {'met' if met else 'MISSED'}: {text}")
    print(f"took {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
