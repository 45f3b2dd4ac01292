"""Stop during an auto-install (issue 18 item 7, K8.14): the broker reads the client's ``stop`` while serve
is still installing (a real npm install of pyright behind a real ``serve``), serve cancels and reaps the
install, and the stop is acknowledged at once, ``confirmed``, with nothing left running and the install
never finished.

Before the fix the broker read no client frame before serve's ``ready``: the stop waited for the whole
install (``installed`` reached the client first), then the server was started only to be stopped."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from kandev_lsp.testing import processes_tagged
from routekit import TAG, SpyDirectory, broker, client, execution_for, real_serve

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry]


def test_a_stop_during_the_install_cancels_and_reaps_it_and_is_acknowledged_at_once(
    tmp_path: Path, tag: str
) -> None:
    async def scenario() -> None:
        async with real_serve(tmp_path, tag) as upstream:  # a HOME of its own: pyright must be installed
            directory = SpyDirectory({"s1": execution_for(upstream.url)})
            async with (
                broker(directory, continuity=True) as server,
                client(server, "/lsp/s1?language=python&autoInstall=1") as ws,
            ):
                async with asyncio.timeout(60):
                    assert json.loads(await ws.recv())["status"] == "installing"
                loop = asyncio.get_running_loop()
                asked = loop.time()
                await ws.send(json.dumps({"control": "stop", "id": "s"}))
                seen = []
                async with asyncio.timeout(30):
                    while "ack" not in (frame := json.loads(await ws.recv())):
                        seen.append(frame)
                waited = loop.time() - asked
                assert frame == {"ack": "stop", "id": "s", "ok": True, "confirmed": True}
                assert [f.get("status") for f in seen] == []  # no `installed`, no `ready`: cancelled
                assert waited < 15  # serve's cancel and reap, not the install
                # npm and its children are gone already: the ack follows serve's close, which comes only
                # once the install's tree is reaped (serve's side, issue 17 item 4)
                assert processes_tagged(TAG, tag) == []
                cache = tmp_path / ".kandev" / "lsp-servers"
                assert not list(cache.rglob("pyright-langserver")), "the install finished anyway"

    asyncio.run(scenario())
