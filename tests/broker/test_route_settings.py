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
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kandev_lsp import hookimpl
from kandev_lsp.broker.owner_settings import SettingsDirectory
from kandev_lsp.discovery import Candidate
from kandev_lsp.host import PluginHost
from kandev_lsp.language import LanguageSpec, ManualInstall
from kandev_lsp.session import BridgeLimits
from kandev_lsp.settings import SettingsFile
from kandev_lsp.stream.server import StreamServer
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


@dataclass(frozen=True)
class RecorderHost:
    """A real serve whose one language is the recorder: its record, its settings file, its URL."""

    record: Path
    settings_path: Path
    upstream: StreamServer


@contextlib.asynccontextmanager
async def recorder_serve(tmp_path: Path, tag: str, *, poll: float = 1.5) -> AsyncIterator[RecorderHost]:
    """serve with the recorder plugin, a settings file (``staticcheck: false`` for the recorder) polled
    every ``poll`` seconds, and the record in the server's environment."""
    record = tmp_path / "received.jsonl"
    settings_path = tmp_path / "settings.json"
    plugins = PluginHost.load(environ={})
    assert plugins.register(RecorderPlugin(recorder_executable(tmp_path / "bin")), "recorder"), (
        plugins.problems
    )
    write_settings(settings_path, {"lsp_server_configs": {LANGUAGE: {"gopls": {"staticcheck": False}}}})
    async with real_serve(
        tmp_path,
        tag,
        plugins=plugins,
        settings=SettingsFile(str(settings_path), known=plugins.languages()),
        limits=BridgeLimits(settings_poll_interval=poll),
        env={"KANDEV_TEST_RECORD": str(record)},
    ) as upstream:
        yield RecorderHost(record, settings_path, upstream)


def test_a_settings_change_while_detached_reaches_the_server_and_the_lease_resumes_on_it(
    tmp_path: Path, tag: str
) -> None:
    async def scenario() -> None:
        async with (
            recorder_serve(tmp_path, tag, poll=0.05) as host,
            broker(one_session(host.upstream.url), continuity=True) as server,
        ):
            record, settings_path = host.record, host.settings_path
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


def _changes(record: Path) -> list[Any]:
    return [m["params"] for m in received(record) if m.get("method") == "workspace/didChangeConfiguration"]


_MARK = "kandev-test/after-ready"


async def _first_thing_after_ready(ws: Any, record: Path) -> None:
    """The resumed page's first message, and the server's record of it."""
    await ws.send(json.dumps({"jsonrpc": "2.0", "method": _MARK, "params": {}}))
    await until(lambda: _MARK in methods(record))


def _before_the_page(record: Path) -> list[Any]:
    """The settings changes the server got before the resumed page's first message."""
    messages = received(record)
    mark = next(i for i, m in enumerate(messages) if m.get("method") == _MARK)
    return [m["params"] for m in messages[:mark] if m.get("method") == "workspace/didChangeConfiguration"]


def test_a_reattach_right_after_a_save_gets_ready_only_once_the_server_has_the_new_settings(
    tmp_path: Path, tag: str
) -> None:
    """Issue 18 item 8 (K14.11), the task host's settings file: serve polls it every 1.5 s (here 30 s,
    so the poll can never be what helps); a reattach right after a save was told ready before the
    server heard of it. Now the broker asks serve to re-read its settings and waits for the answer."""

    async def scenario() -> None:
        async with (
            recorder_serve(tmp_path, tag, poll=30.0) as host,
            broker(one_session(host.upstream.url), continuity=True) as server,
        ):
            record, settings_path = host.record, host.settings_path
            async with client(server, f"/lsp/s1?language={LANGUAGE}") as ws:
                first = await ready(ws)
                await initialize(ws, first["workspaceUri"])
                await until(lambda: "initialized" in methods(record))
            write_settings(
                settings_path, {"lsp_server_configs": {LANGUAGE: {"gopls": {"staticcheck": True}}}}
            )
            async with client(server, f"/lsp/s1?language={LANGUAGE}&lease={first['lease']}") as ws:
                again = await ready(ws)
                assert again["resumed"] is True
                await _first_thing_after_ready(ws, record)
                # the server had the new settings before anything the resumed page sent
                assert _before_the_page(record) == [{"settings": {"gopls": {"staticcheck": True}}}]

    asyncio.run(scenario())


def test_owner_settings_are_pushed_on_save_to_a_detached_lease_and_reconciled_before_ready(
    tmp_path: Path, tag: str
) -> None:
    """Issue 18 items 8-9 (K14.8-K14.11): with owner settings (``--owner-settings DIR``, here
    ``SettingsDirectory``) the lease's server runs with its owner's, not the task host's file; a save
    reaches it within a poll of the broker's, no client attached; a reattach right after a save gets
    ready only once the server has them."""
    owners = tmp_path / "owners"
    owners.mkdir()
    write_settings(owners / "local.json", {"lsp_server_configs": {LANGUAGE: {"gopls": {"hints": 1}}}})

    async def scenario() -> None:
        async with (
            recorder_serve(tmp_path, tag, poll=30.0) as host,
            broker(
                one_session(host.upstream.url), continuity=True, owner_settings=SettingsDirectory(owners)
            ) as server,
        ):
            record = host.record
            async with client(server, f"/lsp/s1?language={LANGUAGE}") as ws:
                first = await ready(ws)
                await initialize(ws, first["workspaceUri"])
                await until(lambda: "initialized" in methods(record))
            # The owner's settings, not the task host's file, answer the server's pulls.
            write_settings(owners / "local.json", {"lsp_server_configs": {LANGUAGE: {"gopls": {"hints": 2}}}})
            await until(lambda: _changes(record) == [{"settings": {"gopls": {"hints": 2}}}], timeout=10)
            await until(lambda: "<answer pull-1>" in methods(record))
            pulled = next(m for m in received(record) if m.get("id") == "pull-1" and "method" not in m)
            assert pulled["result"] == [{"hints": 2}]  # the owner's value, not the file's staticcheck
            assert "lsp_lease_detached 1.0" in await metrics(server)  # pushed with no client attached
            # A save and, at once, a reattach: reconciled before ready.
            write_settings(owners / "local.json", {"lsp_server_configs": {LANGUAGE: {"gopls": {"hints": 3}}}})
            async with client(server, f"/lsp/s1?language={LANGUAGE}&lease={first['lease']}") as ws:
                assert (await ready(ws))["resumed"] is True
                await _first_thing_after_ready(ws, record)
                assert _before_the_page(record)[-1] == {"settings": {"gopls": {"hints": 3}}}

    asyncio.run(scenario())
