"""The reference page (web/) in headless Chromium, against the shipped ``kandev-lsp broker`` (continuity
on) and ``kandev-lsp serve`` running a real pyright, through the demo embedder backend's tickets
(issue 18 items 12-13; K2.1, K12.8, K12.12, K14.2, K16.1, K17.4-K17.7, K18.4).

Oracles, never the page's word about itself: Monaco's own markers and widgets for what the user sees;
Chromium's network records for the sockets and tickets the tab used; the wiretap in front of pyright for
what the server received; the process table for which server runs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from cdp import Cdp, Page
from chromium import Chromium
from pagekit import (
    CALL_COLUMN,
    CALL_LINE,
    DEFINITION_LINE,
    ERROR_LINE,
    STATUS,
    Stack,
    TicketGate,
    answer_tickets_with,
    frames_received,
    frames_sent,
    markers,
    offered_tickets,
    refuse_tickets_with,
    running_stack,
    sockets_opened,
    state,
    tickets_asked,
)
from stream_testkit import RealServers

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry]

#: Longer than the page's first two reconnect delays together (0.5 s + 1 s): a page that retries
#: a refusal has opened a second socket by then.
NO_RETRY_WINDOW_S = 2.5


@pytest.fixture
def stack(tmp_path: Path, real_servers: RealServers) -> Iterator[Stack]:
    with running_stack(tmp_path, real_servers.home) as running:
        yield running


def run(chromium: Chromium, scenario: Callable[[Cdp, Page], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Cdp.connect(chromium.devtools_url) as cdp:
            page = await Page.open(cdp)
            try:
                await scenario(cdp, page)
                assert not page.log.matching("Runtime.exceptionThrown")  # the page's scripts never threw
            finally:
                await page.close()

    asyncio.run(main())


async def hover_text(page: Page, line: int, column: int) -> str:
    await page.evaluate(
        f"kandevLsp.editor.setPosition({{lineNumber: {line}, column: {column}}}); kandevLsp.editor.focus();"
        "kandevLsp.editor.trigger('test', 'editor.action.showHover', {})"
    )
    return str(await page.wait_for("document.querySelector('.monaco-hover-content')?.textContent"))


UNFINISHED_WORD_MARKED = (
    "monaco.editor.getModelMarkers({owner: kandevLsp.markerOwner}).some(m => m.message.includes('gree'))"
)


async def type_at_the_end(page: Page, text: str) -> None:
    """An edit at the end of the file, as typing makes one: the model's next version, sent as didChange."""
    await page.evaluate(
        "(() => { const m = kandevLsp.model, end = m.getFullModelRange().getEndPosition();"
        "kandevLsp.editor.executeEdits('test', [{range: new monaco.Range(end.lineNumber, end.column,"
        f" end.lineNumber, end.column), text: {json.dumps(text)}}}]);"
        "kandevLsp.editor.setPosition(m.getFullModelRange().getEndPosition()); })()"
    )


async def stop_and_check_nothing_runs(page: Page, stack: Stack) -> None:
    mark = len(page.log.events)
    await page.evaluate("document.getElementById('power').click()")
    ack = await page.log.wait(
        "Network.webSocketFrameReceived", lambda p: '"ack":"stop"' in p["response"]["payloadData"], after=mark
    )
    assert json.loads(ack["params"]["response"]["payloadData"])["confirmed"] is True
    assert stack.servers() == []  # the ack comes after the task host reaped the tree (K16.1)
    assert await state(page, "off") == "stopped"
    assert (
        await page.evaluate("Object.keys(sessionStorage).filter(k => k.startsWith('kandev-lsp.lease'))") == []
    )


def test_markers_hover_definition_completion_and_a_reload_resumes_the_same_pyright(
    chromium: Chromium, stack: Stack
) -> None:
    async def scenario(cdp: Cdp, page: Page) -> None:
        await page.goto(stack.page_url)
        assert await state(page, "ready") == "ready"
        [[line, message]] = await markers(page)
        assert line == ERROR_LINE and '"str" is not assignable to declared type "int"' in message
        await page.wait_for("document.querySelector('.squiggly-error') !== null")  # drawn, not only held
        assert "def greeting(name: str) -> str" in await hover_text(page, CALL_LINE, CALL_COLUMN)

        await page.evaluate(
            f"kandevLsp.editor.setPosition({{lineNumber: {CALL_LINE}, column: {CALL_COLUMN}}});"
            "kandevLsp.editor.trigger('test', 'editor.action.revealDefinition', {})"
        )
        assert await page.wait_for(f"kandevLsp.editor.getPosition().lineNumber === {DEFINITION_LINE}")

        await type_at_the_end(page, "\ngree")  # the start of a name on a new last line ...
        await page.evaluate(
            "kandevLsp.editor.trigger('test', 'editor.action.triggerSuggest', {})"
        )  # ... completed
        labels = await page.wait_for(
            "[...document.querySelectorAll('.suggest-widget .monaco-list-row .label-name')].map(e => e.textContent)"
            ".filter(t => t.length)"
        )
        assert "greeting" in labels
        await page.wait_for(UNFINISHED_WORD_MARKED)  # the edit reached pyright, its diagnostics the page

        servers = stack.pyright()
        [initialize] = stack.received("initialize")
        assert servers == [initialize["pid"]] and len(stack.received("initialized")) == 1

        await page.reload()  # sessionStorage keeps the lease hint; the page comes back to the same server
        assert await state(page, "ready") == "ready (resumed)"
        assert "lease=" in page.log.matching("Network.webSocketCreated")[-1]["params"]["url"]
        [[line, _]] = await markers(page)  # diagnostics for the reopened text (K17.5-K17.7, item 5)
        assert line == ERROR_LINE
        assert "def greeting(name: str) -> str" in await hover_text(page, CALL_LINE, CALL_COLUMN)
        await type_at_the_end(page, "\ngree")  # the reopened tab's versions 2, 3: its own (item 5)
        await type_at_the_end(page, "t")
        assert await page.evaluate("kandevLsp.model.getVersionId()") == 3
        await page.wait_for(
            "monaco.editor.getModelMarkers({owner: kandevLsp.markerOwner}).some(m => m.message.includes('greet'))"
        )
        assert stack.pyright() == servers  # the same pyright ...
        assert len(stack.received("initialize")) == 1  # ... never initialized twice (K14.2, K17.4)
        assert len(stack.received("initialized")) == 1

        await stop_and_check_nothing_runs(page, stack)
        await page.reload()  # an explicit Stop holds for the tab (K4.3): no socket, no server
        assert await state(page, "off") == "stopped in this tab; Start to connect"
        assert sockets_opened(page) == 2 and stack.servers() == []

    run(chromium, scenario)


def test_a_reload_during_a_cold_initialize_still_gets_diagnostics(chromium: Chromium, stack: Stack) -> None:
    async def scenario(cdp: Cdp, page: Page) -> None:
        stack.hold.touch()  # pyright gets nothing until the hold ends: its initialize stays pending
        await page.goto(stack.page_url)
        async with asyncio.timeout(60):
            while not stack.received("initialize"):
                await asyncio.sleep(0.05)
        assert await state(page, "initializing")
        await page.reload()  # detach between initialize and initialized (item 3)
        await state(page, "initializing")
        first, second = (
            event["params"]["requestId"] for event in page.log.matching("Network.webSocketCreated")
        )
        [ready] = [f for f in frames_received(page) if f["socket"] == second and f.get("status") == "ready"]
        assert ready["resumed"] is True and ready["capabilities"] is None and ready["initialized"] is False
        stack.hold.unlink()
        assert await state(page, "ready") == "ready (resumed)"
        [[line, _]] = await markers(page)
        assert line == ERROR_LINE
        received = frames_received(page)
        assert not [f for f in received if f["socket"] == first and f.get("id") == 1]  # no answer in time
        assert [f for f in received if f["socket"] == second and f.get("status") == "initialized"]  # item 4
        assert not [
            f for f in frames_sent(page) if f["socket"] == second and "initialize" in f.get("method", "")
        ]
        assert len(stack.received("initialize")) == 1
        assert len(stack.received("initialized")) == 1  # sent by the broker, the stable peer (K14)
        await stop_and_check_nothing_runs(page, stack)

    run(chromium, scenario)


def test_a_page_of_another_origin_and_a_page_with_a_spent_ticket_are_refused_for_good(
    chromium: Chromium, stack: Stack
) -> None:
    async def scenario(cdp: Cdp, page: Page) -> None:
        await page.goto(stack.foreign_url)
        text = await state(page, "refused")
        assert "(4403)" in text and "origin" in text
        assert stack.servers() == [] and not stack.received("initialize")  # nothing started for it
        assert "error=forbidden_origin" in stack.log("broker")

        owner = await Page.open(cdp)  # a tab that connects, spending its ticket
        try:
            await owner.goto(stack.page_url)
            await state(owner, "ready")
            [spent] = offered_tickets(owner)
            replay = await Page.open(cdp)  # its ticket replayed by another tab
            try:
                answered = await answer_tickets_with(replay, spent)
                await replay.goto(stack.page_url)
                text = await state(replay, "refused")
                assert "(4401)" in text and "credential" in text
                # One window for both refused tabs (the foreign one has had longer): told once, never
                # retried, and nothing started for either (the one initialize is the owner's).
                await asyncio.sleep(NO_RETRY_WINDOW_S)
                assert sockets_opened(page) == 1 and tickets_asked(page) == 1
                assert sockets_opened(replay) == 1 and len(answered) == 1
                assert offered_tickets(replay) == [spent]
                assert len(stack.received("initialize")) == 1
            finally:
                await replay.close()
            await stop_and_check_nothing_runs(owner, stack)
        finally:
            await owner.close()
        log = stack.log("broker")
        assert "credential=ticket" in log  # the replay's refusal, logged without the ticket
        assert spent not in log and stack.broker_token not in log

    run(chromium, scenario)


def test_a_broker_restart_is_retried_with_a_fresh_ticket_and_the_page_comes_back(
    chromium: Chromium, stack: Stack
) -> None:
    async def scenario(cdp: Cdp, page: Page) -> None:
        await page.goto(stack.page_url)
        await state(page, "ready")
        await markers(page)
        [first] = stack.received("initialize")
        assert await asyncio.to_thread(stack.stop, "broker") == 0  # every lease ends: backend_stop
        assert "reconnecting" in await state(page, "reconnecting")
        # the browser's close event: 1001, the broker going away (docs/broker-contract.md, close codes)
        assert await page.evaluate("kandevLsp.client.closes[0].code") == 1001
        await asyncio.to_thread(stack.start_broker)  # the same port: the page's retries find it
        assert await state(page, "ready") == "ready"  # a fresh lease: the old one died with the broker
        [[line, _]] = await markers(page)
        assert line == ERROR_LINE
        _, second = stack.received("initialize")  # a new pyright, initialized by the page
        assert second["pid"] != first["pid"]
        tickets = offered_tickets(page)
        assert len(set(tickets)) == len(tickets) >= 2  # a fresh ticket for every attempt
        await stop_and_check_nothing_runs(page, stack)

    run(chromium, scenario)


def test_a_backend_that_mints_no_ticket_is_named_while_the_page_retries(
    chromium: Chromium, stack: Stack
) -> None:
    """The backend's own reason reaches the status line: before, the page said only "the connection was
    lost (1006)" (then "reconnecting, attempt 1 of 5"), as for a network failure, and dropped why."""

    async def scenario(cdp: Cdp, page: Page) -> None:
        answered = await refuse_tickets_with(page, 403, "your session has ended: sign in again")
        await page.goto(stack.page_url)
        text = await state(page, "reconnecting")
        assert "no ticket from the backend: your session has ended: sign in again" in text, text
        assert answered and sockets_opened(page) == 0  # no ticket, no socket
        assert stack.servers() == []

    run(chromium, scenario)


def test_stop_while_the_tab_reconnects_stops_its_detached_server_and_says_stopped_only_on_the_ack(
    chromium: Chromium, stack: Stack
) -> None:
    """A tab that lost its connection (here: reloaded while its backend mints no ticket) is reconnecting
    while its lease, and pyright, live on detached in the broker. Before, Stop then said "stopped" at
    once, sent nothing (there was no socket) and kept the hint: pyright ran on for the detached lifetime
    (an hour by default) and the next Start resumed it. Stop now connects with the hint to stop the lease,
    and says stopped on the broker's ack (K16.1, K4.3)."""

    async def scenario(cdp: Cdp, page: Page) -> None:
        await page.goto(stack.page_url)
        assert await state(page, "ready") == "ready"
        assert await markers(page)
        running = stack.pyright()
        assert running
        gate = await TicketGate(page).enable()
        await page.reload()
        # The third failed attempt is followed by a 4 s wait: Stop comes within it, not after a reconnect.
        await page.wait_for(f"{STATUS}.includes('attempt 3 of 5')", timeout=30)
        assert gate.refused >= 3 and stack.pyright() == running  # the lease lives on, detached
        gate.refusing = False  # the backend is back
        mark = len(page.log.events)
        await page.evaluate("document.getElementById('power').click()")
        ack = await page.log.wait(
            "Network.webSocketFrameReceived",
            lambda p: '"ack":"stop"' in p["response"]["payloadData"],
            after=mark,
            timeout=30,
        )
        assert json.loads(ack["params"]["response"]["payloadData"])["confirmed"] is True
        assert stack.servers() == []
        assert await state(page, "off") == "stopped"
        # The socket Stop opened carried the stop and nothing else: no second initialize, no didOpen.
        assert [f.get("method") for f in frames_sent(page)].count("initialize") == 1

    run(chromium, scenario)


def test_a_page_that_offers_only_its_ticket_as_subprotocol_reads_4400_not_1006(
    chromium: Chromium, stack: Stack
) -> None:
    """An embedder's own glue that offers ``kandev-lsp.ticket.<T>`` alone: Chromium fails a handshake that
    selects none of the offered values, so the page saw 1006 (a network failure, retried) and the
    ticket's lease started a server nobody could use. Now Chromium reads 4400 ``bad_subprotocol``."""

    async def scenario(cdp: Cdp, page: Page) -> None:
        await page.goto(stack.page_url)
        assert await state(page, "ready") == "ready"
        running, initializes = stack.pyright(), len(stack.received("initialize"))
        outcome = await page.evaluate(
            """(async () => {
              const config = await (await fetch('api/config')).json();
              const minted = await (await fetch('api/ticket', {method: 'POST',
                headers: {'Content-Type': 'application/json'},
                body: JSON.stringify({sessionId: config.sessionId, language: config.language})})).json();
              const url = `${config.brokerUrl}/lsp/${config.sessionId}?language=${config.language}`;
              const ws = new WebSocket(url, ['kandev-lsp.ticket.' + minted.ticket]);
              return await new Promise((resolve) => {
                ws.onclose = (event) => resolve([event.code, event.reason]);
              });
            })()"""
        )
        assert outcome == [4400, "bad_subprotocol"]
        # Nothing was started for it: no other pyright and no second initialize at the server. (Not the
        # whole process list: a short-lived child, such as the python pyright runs for its search paths,
        # may be listed in one look and gone in the next; the list lost one such pid in 2 of 4 runs here.)
        assert stack.pyright() == running
        assert len(stack.received("initialize")) == initializes
        await stop_and_check_nothing_runs(page, stack)

    run(chromium, scenario)
