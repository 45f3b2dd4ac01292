"""A settings change while a lease is detached reaches its server (issue 10, "Done means"; K12.4, K14.8,
K17.3).

With browser continuity on, a client that leaves detaches its lease and the broker keeps serve's stream
open, so serve's session keeps polling the user's settings file and tells the server about a change of
its language's settings (``workspace/didChangeConfiguration``), no client attached. The server here is a
stand-in (``recorder_lsp.py``) that appends every message it receives to a file: that file, written by
the server process, is the oracle, not anything kandev-lsp reports about itself. Its pid is read from
/proc (the test's tag is in its environment) to prove the resumed lease is the same server.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kandev_lsp import hookimpl
from kandev_lsp.discovery import Candidate
from kandev_lsp.host import PluginHost
from kandev_lsp.language import LanguageSpec, ManualInstall
from kandev_lsp.session import BridgeLimits
from kandev_lsp.settings import SettingsFile
from kandev_lsp.taskenv import Task
from kandev_lsp.testing import processes_tagged
from routekit import (
    TAG,
    broker,
    client,
    closed_with,
    frame_with,
    initialize,
    metrics,
    one_session,
    ready,
    real_serve,
    until,
)

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))  # the stand-ins' shared framing, for the recorder's copy
from standin_framing import copied_source  # noqa: E402

LANGUAGE = "recorder"


class RecorderPlugin:
    """A third-party plugin whose one language is served by the recorder script at ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path

    @hookimpl
    def kandev_lsp_languages(self) -> list[LanguageSpec]:
        manual = ManualInstall("The recorder is written by the test.")
        return [LanguageSpec(LANGUAGE, "Recorder", "recorder-lsp", install=manual)]

    @hookimpl
    def kandev_lsp_discover(self, language: LanguageSpec, task: Task) -> Iterable[Candidate] | None:
        return [Candidate(self.path, "test stand-in")] if language.id == LANGUAGE else None


def recorder_executable(folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "recorder-lsp"
    source = copied_source(HERE / "recorder_lsp.py")
    path.write_text(f"#!{sys.executable} -IS\n{source}", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def write_settings(path: Path, data: dict[str, Any]) -> None:
    """Replace the settings file atomically, as an editor saving it would."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data), encoding="utf-8")
    os.replace(temporary, path)


def received(record: Path) -> list[dict[str, Any]]:
    """What the server has read so far, in order (its own record)."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line]


def methods(record: Path) -> list[str]:
    return [message.get("method", f"<answer {message.get('id')}>") for message in received(record)]


def test_a_settings_change_while_detached_reaches_the_server_and_the_lease_resumes_on_it(
    tmp_path: Path, tag: str
) -> None:
    record = tmp_path / "received.jsonl"
    settings_path = tmp_path / "settings.json"
    plugins = PluginHost.load(environ={})
    assert plugins.register(RecorderPlugin(recorder_executable(tmp_path / "bin")), "recorder"), (
        plugins.problems
    )
    write_settings(settings_path, {"lsp_server_configs": {LANGUAGE: {"gopls": {"staticcheck": False}}}})
    settings = SettingsFile(str(settings_path), known=plugins.languages())

    async def scenario() -> None:
        async with (
            real_serve(
                tmp_path,
                tag,
                plugins=plugins,
                settings=settings,
                limits=BridgeLimits(settings_poll_interval=0.05),
                env={"KANDEV_TEST_RECORD": str(record)},
            ) as upstream,
            broker(one_session(upstream.url), continuity=True) as server,
        ):
            async with client(server, f"/lsp/s1?language={LANGUAGE}") as ws:
                first = await ready(ws)
                assert first["resumed"] is False
                assert "result" in await initialize(ws, first["workspaceUri"])
                await until(lambda: "initialized" in methods(record))
                pids = processes_tagged(TAG, tag)
                assert len(pids) == 1
            # The tab is gone: the lease is detached, its server kept.
            async with asyncio.timeout(10):
                while "lsp_lease_detached 1.0" not in await metrics(server):
                    await asyncio.sleep(0.05)
            assert "workspace/didChangeConfiguration" not in methods(record)

            # Another language's settings change: not this server's business.
            write_settings(
                settings_path,
                {
                    "lsp_server_configs": {
                        LANGUAGE: {"gopls": {"staticcheck": False}},
                        "go": {"gopls": {"staticcheck": True}},
                    }
                },
            )
            await asyncio.sleep(0.5)  # ten polls
            assert "workspace/didChangeConfiguration" not in methods(record)

            # This language's settings change: the server hears it, no client attached.
            write_settings(
                settings_path,
                {
                    "lsp_server_configs": {
                        LANGUAGE: {"gopls": {"staticcheck": True}},
                        "go": {"gopls": {"staticcheck": True}},
                    }
                },
            )
            await until(lambda: "<answer pull-1>" in methods(record))
            messages = received(record)
            changes = [m for m in messages if m.get("method") == "workspace/didChangeConfiguration"]
            assert [change["params"] for change in changes] == [
                {"settings": {"gopls": {"staticcheck": True}}}
            ]
            # The server's pull after the change is answered with the new value.
            pulled = next(m for m in messages if m.get("id") == "pull-1" and "method" not in m)
            assert pulled["result"] == [{"staticcheck": True}]
            assert "lsp_lease_detached 1.0" in await metrics(server)  # still no client
            assert processes_tagged(TAG, tag) == pids

            # The tab comes back to the same lease and the same server.
            async with client(server, f"/lsp/s1?language={LANGUAGE}&lease={first['lease']}") as ws:
                again = await ready(ws)
                assert again["resumed"] is True and again["lease"] == first["lease"]
                assert processes_tagged(TAG, tag) == pids
                assert methods(record).count("initialize") == 1  # never started again
                await ws.send(json.dumps({"control": "stop", "id": "s"}))
                assert (await frame_with(ws, "ack"))["ok"] is True
                assert await closed_with(ws) == (1000, "stopped")  # the ack's reason (item 11)
            assert processes_tagged(TAG, tag) == []

    asyncio.run(scenario())
