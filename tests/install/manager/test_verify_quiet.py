"""``install`` says what failed and nothing else: a staged server that exits before answering ``initialize``
fails the verification with that message, and no asyncio noise (``Future exception was never retrieved
... ServerClosed``) follows it (issue 17 item 2). The server is a real download from a real HTTP server on
127.0.0.1; the deterministic case (a request written to a pipe nobody reads) is in
tests/lsp/test_client_faults.py."""

from __future__ import annotations

import asyncio
import gc
import gzip
import hashlib
from typing import Any

import pytest
from kandev_lsp import ReleaseAsset
from kandev_lsp.install import InstallManager, VerificationError

#: Closes its input and exits at once: kandev-lsp's initialize meets a closed pipe, or an ended stream.
QUITTER = b"#!/bin/sh\nexec 0<&-\necho 'bye' >&2\nexit 3\n"


def test_a_staged_server_that_exits_before_initialize_fails_quietly(
    world: Any, kit: Any, release_server: Any
) -> None:
    data = gzip.compress(QUITTER)
    release_server.publish("1.0.0", "fakerel.gz", data)
    spec = kit.release_spec(
        release_server.url,
        asset=ReleaseAsset("fakerel.gz", sha256=hashlib.sha256(data).hexdigest()),
        version_args=(),  # verified by an LSP initialize, as pyright-langserver is
    )
    host = kit.plugin_host(spec)

    async def attempts() -> list[str]:
        loop = asyncio.get_running_loop()
        reported: list[str] = []
        loop.set_exception_handler(lambda _loop, context: reported.append(str(context.get("message"))))
        async with InstallManager(host) as manager:
            for _ in range(5):  # the race (write first, or the exit first) goes both ways: try it a few times
                with pytest.raises(VerificationError, match="exited before answering an LSP initialize"):
                    await manager.install("fakerel", world.task())
                gc.collect()
                await asyncio.sleep(0)
        return reported

    assert asyncio.run(attempts()) == []
