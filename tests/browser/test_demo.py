"""web/README.md's second command, ``web/demo.py``, as a user runs it: it prints the page's URL, the page
shows pyright's marker in Chromium, and Ctrl-C (SIGINT) stops everything it started (issue 18 item 12);
so does a closed terminal (SIGHUP), and Ctrl-C when the demo inherited SIGINT ignored."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import pytest
from cdp import Cdp, Page
from chromium import Chromium
from kandev_lsp.testing import processes_tagged
from pagekit import ERROR_LINE, TAG, WEB, markers, reap, state
from stream_testkit import RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry]


@contextlib.contextmanager
def demo(
    environ: dict[str, str], launch: Sequence[str] = (), arguments: Sequence[str] = ()
) -> Iterator[subprocess.Popen[str]]:
    """``web/demo.py --quiet [arguments]`` as a user starts it (behind ``launch``), its output piped;
    killed, and everything carrying its tag reaped, whatever the test did."""
    with subprocess.Popen(
        [*launch, sys.executable, str(WEB / "demo.py"), "--quiet", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ,
        text=True,
    ) as process:
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            reap(environ[TAG])


def demo_environment(tag: str, extra: dict[str, str]) -> dict[str, str]:
    """This process's environment less kandev-lsp's own variables, with ``extra`` and the tag every
    process the demo starts inherits."""
    kept = {key: value for key, value in os.environ.items() if not key.startswith("KANDEV_")}
    return {**kept, **extra, TAG: tag}


def listening(process: subprocess.Popen[str]) -> dict[str, str]:
    """The demo's first line, its ``listening`` event with the page's URL (its stderr when it is not)."""
    assert process.stdout is not None and process.stderr is not None
    line = json.loads(process.stdout.readline() or "{}")
    assert line.get("event") == "listening", process.stderr.read()
    return dict(line)


@contextlib.asynccontextmanager
async def _ready_page(chromium: Chromium, url: str) -> AsyncIterator[Page]:
    """A tab of the demo's page at ``url`` once it says ready; closed on the way out."""
    async with Cdp.connect(chromium.devtools_url) as cdp:
        page = await Page.open(cdp)
        try:
            await page.goto(url)
            assert await state(page, "ready") == "ready"
            yield page
        finally:
            await page.close()


def test_the_demo_prints_a_url_whose_page_shows_a_marker_and_ctrl_c_stops_everything(
    chromium: Chromium, real_servers: RealServers
) -> None:
    tag = uuid.uuid4().hex
    environ = demo_environment(tag, real_servers.overrides())  # the installed pyright, in its HOME's cache
    with demo(environ) as process:
        _run_the_demo(process, chromium, tag)


def _run_the_demo(demo: subprocess.Popen[str], chromium: Chromium, tag: str) -> None:
    line = listening(demo)

    async def scenario() -> None:
        async with _ready_page(chromium, line["url"]) as page:
            [[marked, _]] = await markers(page)
            assert marked == ERROR_LINE

    asyncio.run(scenario())
    started = processes_tagged(TAG, tag)
    assert len(started) >= 5  # the demo, serve, the broker, the backend, pyright
    demo.send_signal(signal.SIGINT)  # Ctrl-C
    _, errors = demo.communicate(timeout=60)
    assert demo.returncode == 0 and "Traceback" not in errors, errors
    assert processes_tagged(TAG, tag) == []


@pytest.mark.parametrize(
    ("launch", "signum"),
    [
        ([], signal.SIGHUP),  # the terminal closed
        (["bash", "-c", 'trap "" INT; exec "$@"', "bash"], signal.SIGINT),  # a script's background job
    ],
    ids=["sighup", "sigint-inherited-ignored"],
)
def test_a_closed_terminal_or_an_ignored_sigint_still_stops_everything_the_demo_started(
    launch: list[str], signum: signal.Signals, tmp_path: Path
) -> None:
    """Before, SIGHUP killed the demo alone (serve, the broker and the backend ran on, their tokens left
    in the temporary folder), and with SIGINT inherited ignored (``scripts/test &`` from a script) Ctrl-C
    never reached it: the first test of this module then failed after its 60 s wait."""
    tag = uuid.uuid4().hex
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    environ = demo_environment(tag, {"TMPDIR": str(temporary)})  # where the demo keeps the tokens
    with demo(environ, launch) as process:
        listening(process)
        assert len(processes_tagged(TAG, tag)) >= 4  # the demo, serve, the broker, the backend
        assert list(temporary.glob("kandev-lsp-demo-*"))
        process.send_signal(signum)
        _, errors = process.communicate(timeout=60)
        assert process.returncode == 0 and "Traceback" not in errors, errors
        assert processes_tagged(TAG, tag) == []
        assert list(temporary.glob("kandev-lsp-demo-*")) == []


def test_a_typescript_file_shows_each_marker_once_the_servers_not_monacos_too(
    chromium: Chromium, real_servers: RealServers, tmp_path: Path
) -> None:
    """``demo.py --language typescript --file main.ts``: Monaco runs a TypeScript worker of its own for
    a typescript model, so every marker came twice (owner ``typescript``, the worker's, next to the
    server's) and the hover and completion twice too. The page now turns off the built-ins the
    attached server makes redundant (K2.3), diagnostics included."""
    workspace = tmp_path / "task"
    workspace.mkdir()
    (workspace / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}}\n')
    (workspace / "main.ts").write_text(
        'export function greet(name: string): string {\n  return "hi " + name;\n}\n'
        'export const n: number = greet("a");\n'
    )
    tag = uuid.uuid4().hex
    environ = demo_environment(tag, real_servers.overrides())  # the installed typescript-language-server
    arguments = ["--workspace", str(workspace), "--file", "main.ts", "--language", "typescript"]
    with demo(environ, arguments=arguments) as process:
        line = listening(process)

        async def scenario() -> None:
            async with _ready_page(chromium, line["url"]) as page:
                [[marked, message]] = await markers(page)  # the server's, on the last line
                assert marked == 4 and "not assignable to type 'number'" in message
                await asyncio.sleep(1.5)  # Monaco's worker validates 0.5 s after a change
                owners = await page.evaluate("monaco.editor.getModelMarkers({}).map(m => m.owner)")
                assert owners == ["kandev-lsp"], owners
                # What the page registers from the server replaces the worker's; the rest stays
                # (references, rename, outline: the page has no provider of its own for them).
                modes = await page.evaluate(
                    "monaco.languages.typescript.typescriptDefaults.modeConfiguration"
                )
                replaced = {"hovers", "definitions", "completionItems", "diagnostics"}
                kept = {"references", "rename", "documentSymbols", "signatureHelp", "codeActions"}
                assert {mode for mode in replaced | kept if modes[mode]} == kept, modes

        asyncio.run(scenario())
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=60)
        assert process.returncode == 0, errors
        assert processes_tagged(TAG, tag) == []
