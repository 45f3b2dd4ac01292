"""A small Chrome DevTools Protocol client over ``websockets`` (not a test module).

One WebSocket to the browser; each page is a target attached in *flat* mode, so its commands and events
carry a ``sessionId`` on that one connection. Events are kept per session in arrival order, so a test
waits for "the next event like this" without racing a callback. Written from the protocol's documented
messages (``{"id", "method", "params", "sessionId"}`` out, ``{"id", "result"|"error"}`` and
``{"method", "params", "sessionId"}`` back).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

Event = dict[str, Any]


class CdpError(Exception):
    """A command the browser answered with an error, or a page script that threw."""


class EventLog:
    """The events of one session, in order, with a way to wait for the next one that matches."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._changed = asyncio.Condition()
        self.listeners: list[Callable[[Event], None]] = []

    async def append(self, event: Event) -> None:
        self.events.append(event)
        for listener in self.listeners:
            listener(event)
        async with self._changed:
            self._changed.notify_all()

    def matching(self, method: str, want: Callable[[dict[str, Any]], bool] = lambda _: True) -> list[Event]:
        return [event for event in self.events if event["method"] == method and want(event["params"])]

    async def wait(
        self,
        method: str,
        want: Callable[[dict[str, Any]], bool] = lambda _: True,
        *,
        after: int = 0,
        timeout: float = 60,
    ) -> Event:
        """The first event at index ``after`` or later with this method for which ``want(params)`` holds."""
        async with asyncio.timeout(timeout), self._changed:
            while True:
                for event in self.events[after:]:
                    if event["method"] == method and want(event["params"]):
                        return event
                await self._changed.wait()


class Cdp:
    """The browser connection: commands with ids, and an event log per session (``None``: the browser)."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.logs: dict[str | None, EventLog] = {None: EventLog()}
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, url: str) -> AsyncIterator[Cdp]:
        async with connect(url, max_size=256 * 2**20, ping_interval=None) as ws:
            cdp = cls(ws)
            try:
                yield cdp
            finally:
                cdp._reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await cdp._reader

    def log(self, session: str | None) -> EventLog:
        return self.logs.setdefault(session, EventLog())

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 60,
    ) -> dict[str, Any]:
        message_id = next(self._ids)
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        answer = asyncio.get_running_loop().create_future()
        self._pending[message_id] = answer
        await self._ws.send(json.dumps(message))
        try:
            async with asyncio.timeout(timeout):
                reply = await answer
        finally:
            self._pending.pop(message_id, None)
        if "error" in reply:
            raise CdpError(f"{method}: {reply['error']}")
        return dict(reply.get("result", {}))

    async def _read(self) -> None:
        async for raw in self._ws:
            message = json.loads(raw)
            if "id" in message:
                waiter = self._pending.get(message["id"])
                if waiter is not None and not waiter.done():
                    waiter.set_result(message)
            elif "method" in message:
                await self.log(message.get("sessionId")).append(message)


class Page:
    """One tab in a browser context of its own (its own cookies and storage), attached in flat mode."""

    def __init__(self, cdp: Cdp, session: str, target: str, context: str) -> None:
        self.cdp = cdp
        self.session = session
        self.target = target
        self.context = context

    @property
    def log(self) -> EventLog:
        return self.cdp.log(self.session)

    @classmethod
    async def open(cls, cdp: Cdp) -> Page:
        context = (await cdp.send("Target.createBrowserContext"))["browserContextId"]
        target = (await cdp.send("Target.createTarget", {"url": "about:blank", "browserContextId": context}))[
            "targetId"
        ]
        session = (await cdp.send("Target.attachToTarget", {"targetId": target, "flatten": True}))[
            "sessionId"
        ]
        page = cls(cdp, session, target, context)
        for domain in ("Page", "Runtime", "Network"):
            await page.send(f"{domain}.enable")
        return page

    async def close(self) -> None:
        with contextlib.suppress(CdpError, TimeoutError):
            await self.cdp.send(
                "Target.disposeBrowserContext", {"browserContextId": self.context}, timeout=15
            )

    async def send(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 60
    ) -> dict[str, Any]:
        return await self.cdp.send(method, params, self.session, timeout)

    async def goto(self, url: str) -> None:
        mark = len(self.log.events)
        await self.send("Page.navigate", {"url": url})
        await self.log.wait("Page.loadEventFired", after=mark)

    async def reload(self) -> None:
        mark = len(self.log.events)
        await self.send("Page.reload")
        await self.log.wait("Page.loadEventFired", after=mark)

    async def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` in the page (awaited when it is a promise), as JSON."""
        reply = await self.send(
            "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}
        )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            raise CdpError(details.get("exception", {}).get("description") or details.get("text"))
        return reply["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 60, interval: float = 0.1) -> Any:
        """Poll ``expression`` until its value is truthy; that value. A script error is raised at once."""
        async with asyncio.timeout(timeout):
            while not (value := await self.evaluate(expression)):
                await asyncio.sleep(interval)
        return value

    def sockets(self) -> list[str]:
        """The URL of every WebSocket this tab opened, as the browser reported them."""
        return [event["params"]["url"] for event in self.log.matching("Network.webSocketCreated")]
