"""What ``serve`` and ``broker`` share once their server is built: listen until a stop signal.

Both print one JSON line on stdout when listening (the contract a supervising process reads to learn the
port and, when it was generated, the token) and then wait for SIGINT, SIGTERM or SIGHUP. SIGHUP counts as
a stop: a closed terminal or a quitting parent sends it, and left at its default it would end the process
at once, leaving its servers and their process trees behind. Leaving the server's ``async with`` is what
closes everything (sessions for ``serve``, leases for ``broker``).
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from kandev_lsp.stream.auth import StreamToken

__all__ = ["STOP_SIGNALS", "listen_until_signalled"]

#: The signals that stop a listening ``serve`` or ``broker`` (those this platform has).
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)

_Server = TypeVar("_Server")


def listening_line(fields: dict[str, Any], token: StreamToken) -> str:
    """The JSON listening line; a generated token is shown here once (and never logged)."""
    line = {"event": "listening", **fields}
    if token.generated:
        line["token"] = token.value
    return json.dumps(line) + "\n"


async def listen_until_signalled(
    server: AbstractAsyncContextManager[_Server],
    describe: Callable[[_Server], dict[str, Any]],
    token: StreamToken,
) -> int:
    """Enter ``server``, print its listening line (``describe`` gives the fields after ``event``), and
    stay until a stop signal; returns the exit status (0)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    try:
        async with server as running:
            sys.stdout.write(listening_line(describe(running), token))
            sys.stdout.flush()
            await stop.wait()
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)
    return 0
