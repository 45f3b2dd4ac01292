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

``--compare DIR`` adds a third side, alternating with the other two: ``run`` from another checkout's
sources (e.g. ``git worktree add /tmp/before HEAD~1``), so a change is measured before and after in
the same run.

Run: ``.venv/bin/python bench/run_startup_bench.py [--rounds N] [--home DIR] [--compare DIR] [LANG ...]``
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

from benchkit import compare_environment

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


def _row(label: str, times: list[float], direct: float) -> str:
    m = statistics.median(times)
    return (
        f"   {label} {m * 1e3:7.1f} ms [{min(times) * 1e3:.0f}-{max(times) * 1e3:.0f}]"
        f"   added {(m - direct) * 1e3:+6.1f} ms   ratio {m / direct:4.2f}x"
    )


def bench_language(
    language: str,
    workspace: Path,
    env: dict[str, str],
    rounds: int,
    compare_env: dict[str, str] | None = None,
) -> None:
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
    sides = [(direct, env), (run, env)] + ([(run, compare_env)] if compare_env is not None else [])
    for argv, side_env in sides:  # warm-up: file caches, bytecode, the server's own caches
        time_to_initialized(argv, workspace, side_env)
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(rounds):
        for (argv, side_env), side_times in zip(sides, times, strict=True):
            side_times.append(time_to_initialized(argv, workspace, side_env))
    d = statistics.median(times[0])
    print(
        f"{language:<11} direct {d * 1e3:7.1f} ms [{min(times[0]) * 1e3:.0f}-{max(times[0]) * 1e3:.0f}]"
        + _row("run", times[1], d)
        + (_row("compared run", times[2], d) if compare_env is not None else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("languages", nargs="*", default=list(DEFAULT_LANGUAGES))
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--home", help="the task's HOME (where `kandev-lsp install` put the servers)")
    parser.add_argument("--compare", type=Path, help="another checkout whose `run` is measured too")
    args = parser.parse_args()
    env = dict(os.environ)
    # Measure what an installed kandev-lsp does: bytecode cached (a wheel install compiles it).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.home:
        env["HOME"] = os.path.abspath(args.home)
    print(f"Time to the initialize response, median of {args.rounds} alternating rounds [min-max]")
    with tempfile.TemporaryDirectory() as root:
        workspace = make_workspace(Path(root))
        compare_env = compare_environment(args.compare, env, Path(root)) if args.compare else None
        for language in args.languages:
            bench_language(language, workspace, env, args.rounds, compare_env)


if __name__ == "__main__":
    main()
