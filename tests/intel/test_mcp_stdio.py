"""``kandev-lsp mcp``'s stdio on the event loop (:mod:`kandev_lsp.cli.mcp_stdio`): lines read as the SDK
reads them, an oversized message dropped without losing the next, the wire kept apart from stray output,
and the SDK's own transport where the loop cannot serve (a regular file)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from intel_projects import PYTHON, write
from kandev_lsp.cli.mcp_stdio import WireLines, loop_can_serve
from stream_testkit import TAG_VARIABLE, RealServers

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the event-loop transport is POSIX only")

KANDEV_LSP = str(Path(sys.executable).parent / "kandev-lsp")


async def _lines(chunks: list[bytes], limit: int) -> list[str]:
    """What :class:`WireLines` yields for ``chunks`` arriving one by one (the stream then ends)."""
    reader = asyncio.StreamReader(limit=limit)
    lines = WireLines(reader, limit)

    async def feed() -> None:
        for chunk in chunks:
            reader.feed_data(chunk)
            await asyncio.sleep(0)
        reader.feed_eof()

    feeding = asyncio.ensure_future(feed())
    got = [line async for line in lines]
    await feeding
    return got


def test_lines_come_whole_however_the_bytes_arrive() -> None:
    chunks = [b'{"a":', b' 1}\n{"b": "\xc3', b'\xa9"}\n\n', b'{"c": 3}']  # a split UTF-8 character too
    got = asyncio.run(_lines(chunks, limit=1024))
    assert got == ['{"a": 1}\n', '{"b": "é"}\n', "\n", '{"c": 3}']  # the last one without its newline


def test_a_message_over_the_bound_is_dropped_and_the_next_one_still_comes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    big = b'{"x": "' + b"y" * 5000 + b'"}\n'
    # the oversized line arrives in pieces, some after the bound was passed
    chunks = [b'{"first": 1}\n', big[:700], big[700:3000], big[3000:], b'{"next": 2}\n']
    with caplog.at_level("WARNING", logger="kandev_lsp.mcp"):
        got = asyncio.run(_lines(chunks, limit=1024))
    assert got == ['{"first": 1}\n', '{"next": 2}\n']
    assert [r.getMessage() for r in caplog.records] == [
        "dropped a message from the MCP client longer than kandev-lsp's bound (1024 bytes)"
    ]


def test_an_oversized_message_cut_by_the_end_of_input_is_not_returned() -> None:
    got = asyncio.run(_lines([b'{"ok": 1}\n', b"z" * 4000], limit=1024))
    assert got == ['{"ok": 1}\n']


def test_the_loop_serves_pipes_and_sockets_only(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    left, right = socket.socketpair()
    plain = os.open(tmp_path / "file", os.O_CREAT | os.O_RDWR)
    terminal, other = os.openpty()
    try:
        assert loop_can_serve(read_end) and loop_can_serve(write_end)
        assert loop_can_serve(left.fileno())
        assert not loop_can_serve(plain)  # a regular file: the loop cannot watch it
        assert not loop_can_serve(terminal)  # a terminal: non-blocking mode would reach the shell
        assert not loop_can_serve(10_000)  # not open
    finally:
        for fd in (read_end, write_end, plain, terminal, other):
            os.close(fd)
        left.close()
        right.close()


CLAIM_SCRIPT = """
import os, sys
from kandev_lsp.cli.mcp_stdio import claimed_stdio
with claimed_stdio() as (wire_in, wire_out):
    print("stray print", flush=True)
    os.write(1, b"stray write\\n")
    stdin_now = os.read(0, 100)
    received = os.read(wire_in, 100)
    os.write(wire_out, b"wire: " + received)
    assert os.get_blocking(wire_in)
    os.set_blocking(wire_in, False)  # as the event loop leaves it
print("after", len(stdin_now), os.get_blocking(0), flush=True)
"""


def test_the_wire_is_kept_apart_from_stray_output_and_put_back_after() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CLAIM_SCRIPT], input=b"request\n", capture_output=True, timeout=60, check=True
    )
    # On the wire: only what was written to it, then (restored) the later print.
    assert done.stdout == b"wire: request\nafter 0 True\n"
    # Stray output went to stderr; fd 0 read the null device meanwhile (0 bytes, not the request).
    assert done.stderr == b"stray print\nstray write\n"


def _answer(answers: Any, wanted_id: int) -> dict[str, Any]:
    """The server's answer to request ``wanted_id``, read from its stdout (a pipe, or a file it writes)."""
    deadline = time.monotonic() + 60
    seen = b""
    while time.monotonic() < deadline:
        line = answers.readline()
        if not line.endswith(b"\n"):  # a file not yet written further (a pipe's lines come whole)
            answers.seek(-len(line), os.SEEK_CUR)
            time.sleep(0.05)
            continue
        seen += line
        message = json.loads(line)
        if message.get("id") == wanted_id:
            return message  # type: ignore[no-any-return]
    raise AssertionError(f"no answer to request {wanted_id}: {seen!r}")


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})}


@contextlib.contextmanager
def _mcp(
    folder: Path, overrides: dict[str, str], *flags: str, stdout: Any = subprocess.PIPE
) -> Iterator[subprocess.Popen[bytes]]:
    """``kandev-lsp mcp`` on ``folder`` with stdin and stderr piped (``stdout`` as given), the test's
    environment plus ``overrides``; killed if still running when the test leaves, its pipes closed."""
    env = {**os.environ, **overrides}
    env.pop("KANDEV_LSP_SETTINGS", None)
    process = subprocess.Popen(
        [KANDEV_LSP, "mcp", "--workspace", str(folder), *flags],
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(BrokenPipeError):  # stdin, when the server left first
                    stream.close()


def _send(process: subprocess.Popen[bytes], *messages: dict[str, Any]) -> None:
    assert process.stdin is not None
    for message in messages:
        process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def _stderr(process: subprocess.Popen[bytes]) -> str:
    assert process.stderr is not None
    return process.stderr.read().decode()


@pytest.mark.parametrize(
    ("stdout", "served"),
    [
        ("pipe", "stdio served on the event loop"),
        ("file", "stdio served by the MCP SDK's transport (stdin or stdout is not a pipe or socket)"),
        ("sdk", "stdio served by the MCP SDK's transport (--stdio sdk)"),
    ],
)
def test_each_stdout_is_served_by_the_transport_that_can(tmp_path: Path, stdout: str, served: str) -> None:
    folder = write(tmp_path / "py", PYTHON)
    flags = ["--log-level", "info", *(["--stdio", "sdk"] if stdout == "sdk" else [])]
    answers_file = tmp_path / "answers.jsonl"
    with (
        answers_file.open("wb") as out,
        _mcp(
            folder,
            {"HOME": str(tmp_path / "home")},
            *flags,
            stdout=out if stdout == "file" else subprocess.PIPE,
        ) as process,
        process.stdout or answers_file.open("rb") as answers,
    ):
        _send(process, INITIALIZE)
        assert _answer(answers, 1)["result"]["serverInfo"]["name"] == "kandev-lsp"
        _send(process, INITIALIZED, _request(2, "tools/list"))
        assert "code_navigate" in {tool["name"] for tool in _answer(answers, 2)["result"]["tools"]}
        assert process.stdin is not None
        process.stdin.close()  # the client leaves: the server ends cleanly
        assert process.wait(timeout=60) == 0
        logged = _stderr(process)
        assert served in logged, logged


def test_one_socket_for_stdin_and_stdout_takes_the_sdks_transport(tmp_path: Path) -> None:
    folder = write(tmp_path / "py", PYTHON)
    client, server = socket.socketpair()
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    env.pop("KANDEV_LSP_SETTINGS", None)
    with client, server:
        process = subprocess.Popen(
            [KANDEV_LSP, "mcp", "--workspace", str(folder), "--log-level", "info"],
            stdin=server.fileno(),
            stdout=server.fileno(),
            stderr=subprocess.PIPE,
            env=env,
        )
        server.close()
        try:
            with client.makefile("rb") as answers:
                client.sendall(json.dumps(INITIALIZE).encode() + b"\n")
                assert _answer(answers, 1)["result"]["serverInfo"]["name"] == "kandev-lsp"
                # the next message on the same socket: the loop's writer would have taken it for a close
                for message in (INITIALIZED, _request(2, "tools/list")):
                    client.sendall(json.dumps(message).encode() + b"\n")
                assert "code_navigate" in {tool["name"] for tool in _answer(answers, 2)["result"]["tools"]}
            client.shutdown(socket.SHUT_WR)
            assert process.wait(timeout=60) == 0
            logged = _stderr(process)
            assert "stdio served by the MCP SDK's transport (stdin and stdout are one socket)" in logged
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            assert process.stderr is not None
            process.stderr.close()


@pytest.mark.parametrize("stdio", ["loop", "sdk"])
def test_a_client_that_stops_reading_ends_the_server_cleanly(tmp_path: Path, stdio: str) -> None:
    folder = write(tmp_path / "py", PYTHON)
    with _mcp(folder, {"HOME": str(tmp_path / "home")}, "--stdio", stdio) as process:
        assert process.stdout is not None
        _send(process, INITIALIZE)
        assert _answer(process.stdout, 1)["result"]["serverInfo"]["name"] == "kandev-lsp"
        process.stdout.close()  # the client stops reading, without closing the server's stdin
        with contextlib.suppress(BrokenPipeError):  # the server may be gone before the last request
            for request_id in range(2, 6):
                _send(process, _request(request_id, "tools/list"))
                time.sleep(0.2)
        assert process.wait(timeout=60) == 0
        logged = _stderr(process)
        assert "the MCP client stopped reading (its end of stdout is closed): stopping" in logged, logged
        assert "Traceback" not in logged, logged


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (from /proc: this test runs on Linux CI)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/stat") as stat:
                if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
    return found


@pytest.mark.real_server
@pytest.mark.network_registry
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads children from /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stop_signal_shuts_the_language_servers_down_and_exits_0(
    tmp_path: Path, real_servers: RealServers, tag: str, signum: int
) -> None:
    folder = write(tmp_path / "py", PYTHON)
    overrides = {**real_servers.overrides(), TAG_VARIABLE: tag}
    with _mcp(folder, overrides, "--deadline", "90") as process:
        assert process.stdout is not None
        symbols = {"name": "code_symbols", "arguments": {"path": "lib.py"}}
        _send(process, INITIALIZE, INITIALIZED, _request(2, "tools/call", symbols))
        assert not _answer(process.stdout, 2)["result"]["isError"]
        servers = _children(process.pid)
        assert servers, "pyright runs as a child of kandev-lsp"
        process.send_signal(signum)
        assert process.wait(timeout=60) == 0
        # Shut down, not orphaned: the servers are gone when kandev-lsp is (the parent-death signal
        # would only get them later, and without LSP's shutdown).
        assert [pid for pid in servers if os.path.exists(f"/proc/{pid}")] == []
        logged = _stderr(process)
        name = signal.Signals(signum).name
        assert f"stopping on {name}: the language servers are shut down first" in logged, logged
        assert "Traceback" not in logged, logged


NODE_CLIENT = r"""
const { spawn } = require("child_process");
const [command, ...args] = JSON.parse(process.argv[1]);
const server = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"] });
let buffered = "", logged = "";
const waiting = {};
server.stdout.on("data", (data) => {
  buffered += data.toString();
  for (let end; (end = buffered.indexOf("\n")) >= 0; buffered = buffered.slice(end + 1)) {
    const message = JSON.parse(buffered.slice(0, end));
    if (waiting[message.id]) waiting[message.id](message);
  }
});
server.stderr.on("data", (data) => { logged += data.toString(); });
const call = (id, method, params) => new Promise((answered) => {
  waiting[id] = answered;
  server.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
});
(async () => {
  const init = await call(1, "initialize", {
    protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "node", version: "0" },
  });
  server.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
  const listed = await call(2, "tools/list", {});
  server.stdin.end();
  server.on("exit", (code) => console.log(JSON.stringify({
    name: init.result.serverInfo.name, tools: listed.result.tools.map((tool) => tool.name), code, logged,
  })));
})();
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_node_client_is_served_on_the_event_loop(tmp_path: Path) -> None:
    """Node's child processes get a socket per stdio stream (libuv), as from most MCP clients."""
    folder = write(tmp_path / "py", PYTHON)
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    env.pop("KANDEV_LSP_SETTINGS", None)
    argv = [KANDEV_LSP, "mcp", "--workspace", str(folder), "--log-level", "info"]
    done = subprocess.run(
        ["node", "-e", NODE_CLIENT, json.dumps(argv)],
        capture_output=True,
        env=env,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout)
    assert report["name"] == "kandev-lsp" and "code_navigate" in report["tools"], report
    assert report["code"] == 0, report
    assert "stdio served on the event loop" in report["logged"], report["logged"]
