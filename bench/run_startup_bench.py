"""Time-to-initialized through ``kandev-lsp run LANG`` against the same server started directly.

An editor that runs ``kandev-lsp run python`` instead of ``pyright-langserver --stdio`` waits for
kandev-lsp's own start-up (interpreter, imports, plugins, resolution, spawning) on top of the server's.
Both are started the same way an editor does: spawn the command with stdin/stdout pipes in the
workspace, write ``initialize`` at once, and time until its response has been read. Rounds alternate
direct and ``run`` so that machine noise hits both; the medians, their difference (what ``run`` adds)
and ratio, and each side's spread are printed. Goal (issue 7 item 25): under 50 ms added, warm (the
server already installed, bytecode cached).

The direct command is the one ``kandev-lsp resolve LANG --json`` returns, so both sides run the same
executable. Servers must be installed in the task's HOME already (``--home``; e.g.
``HOME=/tmp/bench-home kandev-lsp install python``); gopls from Debian on PATH works out of the box.

Run: ``.venv/bin/python bench/run_startup_bench.py [--rounds N] [--home DIR] [LANG ...]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_LANGUAGES = ("go", "python", "typescript")
RESPONSE_TIMEOUT = 30.0


def frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_message(stream: object) -> dict[str, object]:
    """One LSP message from a binary pipe (blocking)."""
    length = None
    while True:
        line = stream.readline()  # type: ignore[attr-defined]
        if not line:
            raise EOFError("the server closed its stdout before answering initialize")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    assert length is not None, "a frame without Content-Length"
    data: dict[str, object] = json.loads(stream.read(length))  # type: ignore[attr-defined]
    return data


def initialize(workspace: Path) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "processId": os.getpid(),
            "rootUri": workspace.as_uri(),
            "workspaceFolders": [{"uri": workspace.as_uri(), "name": workspace.name}],
            "capabilities": {"workspace": {"configuration": True}, "window": {"workDoneProgress": True}},
        },
    }


def time_to_initialized(argv: list[str], workspace: Path, env: dict[str, str]) -> float:
    """Seconds from spawning ``argv`` to reading its ``initialize`` response; then stop it."""
    start = time.perf_counter()
    process = subprocess.Popen(
        argv, cwd=workspace, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(frame(initialize(workspace)))
        process.stdin.flush()
        while True:
            message = read_message(process.stdout)
            if message.get("id") == 1 and "method" not in message:
                elapsed = time.perf_counter() - start
                break
            if "id" in message and "method" in message:  # a server request (e.g. progress create): answer it
                process.stdin.write(frame({"jsonrpc": "2.0", "id": message["id"], "result": None}))
                process.stdin.flush()
        process.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        process.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        process.stdin.close()
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return elapsed


def make_workspace(root: Path) -> Path:
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / "go.mod").write_text("module example.com/bench\n\ngo 1.19\n")
    (workspace / "main.go").write_text('package main\n\nfunc main() { println("hi") }\n')
    (workspace / "main.py").write_text("def main() -> None:\n    print('hi')\n")
    (workspace / "main.ts").write_text("export const hi: string = 'hi';\n")
    (workspace / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}}\n')
    return workspace


def kandev_lsp_command() -> list[str]:
    script = Path(sys.executable).parent / "kandev-lsp"
    return [str(script)] if script.exists() else [shutil.which("kandev-lsp") or "kandev-lsp"]


def bench_language(language: str, workspace: Path, env: dict[str, str], rounds: int) -> None:
    cli = kandev_lsp_command()
    resolved = subprocess.run(
        [*cli, "resolve", language, "--json", "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    data = json.loads(resolved.stdout or "{}")
    if data.get("status") != "found":
        print(f"{language:<11} skipped: {data.get('message', resolved.stderr.strip())}")
        return
    direct = list(data["argv"])
    run = [*cli, "run", language, "--workspace", str(workspace)]
    for argv in (direct, run):  # warm-up: file caches, bytecode, the server's own caches
        time_to_initialized(argv, workspace, env)
    direct_times: list[float] = []
    run_times: list[float] = []
    for _ in range(rounds):
        direct_times.append(time_to_initialized(direct, workspace, env))
        run_times.append(time_to_initialized(run, workspace, env))
    d, r = statistics.median(direct_times), statistics.median(run_times)
    print(
        f"{language:<11} direct {d * 1e3:7.1f} ms [{min(direct_times) * 1e3:.0f}-{max(direct_times) * 1e3:.0f}]"
        f"   run {r * 1e3:7.1f} ms [{min(run_times) * 1e3:.0f}-{max(run_times) * 1e3:.0f}]"
        f"   added {(r - d) * 1e3:+6.1f} ms   ratio {r / d:4.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("languages", nargs="*", default=list(DEFAULT_LANGUAGES))
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--home", help="the task's HOME (where `kandev-lsp install` put the servers)")
    args = parser.parse_args()
    env = dict(os.environ)
    # Measure what an installed kandev-lsp does: bytecode cached (a wheel install compiles it).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.home:
        env["HOME"] = os.path.abspath(args.home)
    print(f"Time to the initialize response, median of {args.rounds} alternating rounds [min-max]")
    with tempfile.TemporaryDirectory() as root:
        workspace = make_workspace(Path(root))
        for language in args.languages:
            bench_language(language, workspace, env, args.rounds)


if __name__ == "__main__":
    main()
