"""Server requests a client leaves unanswered when it goes (issue 8; K15.9, K6.2): a request the session
forwarded to an attached client that detaches (or is dropped as too slow) before answering it gets the
headless endpoint's default answer, exactly as if nobody had been attached, so the server never waits for a
client that is gone (gopls 0.5.0 stalls on an unanswered ``window/workDoneProgress/create``, FACTS). A
client that answers in time is not answered twice.

The fake server (``fake_lsp.py echo``) sends the requests itself (``test/ask``) and records every answer it
gets to them (``test/answers``), so each test checks what the server received.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import pytest
from kandev_lsp.lifecycle import InstallPolicy, Lifecycle
from kandev_lsp.session import BridgeLimits, ServerSession
from stream_testkit import StreamKit

METHOD_NOT_FOUND = -32601


def _body(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


async def _ask(session: ServerSession, *requests: dict[str, Any]) -> None:
    """Make the fake server send ``requests`` (``{"id", "method", "params"}``) to the client side."""
    await session.send(_body({"jsonrpc": "2.0", "method": "test/ask", "params": list(requests)}))


async def _next(messages: AsyncGenerator[bytes, None], timeout: float = 10.0) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        return json.loads(await anext(messages))  # type: ignore[no-any-return]


async def _server_got(session: ServerSession) -> list[dict[str, Any]]:
    """Every answer the fake server received to its ``ask-`` requests, in order (through a new client)."""
    observer = session.attach("observer")
    async with aclosing(observer.messages()) as messages:
        await session.send(_body({"jsonrpc": "2.0", "method": "test/answers"}))
        while (message := await _next(messages)).get("method") != "test/answers":
            pass
    return message["params"]  # type: ignore[no-any-return]


CASES = [
    pytest.param(
        "window/workDoneProgress/create",
        {"token": "load-1"},
        {"result": None},
        id="create-null",
    ),
    pytest.param(
        "client/registerCapability",
        {"registrations": [{"id": "watch-1", "method": "workspace/didChangeWatchedFiles"}]},
        {"result": None},
        id="register-applied",
    ),
    pytest.param(
        "custom/unknownQuestion",
        {"x": 1},
        {"error": {"code": METHOD_NOT_FOUND}},
        id="unknown-32601",
    ),
]


@pytest.mark.parametrize(("method", "params", "expected"), CASES)
def test_a_request_the_client_leaves_unanswered_is_answered_by_default_when_it_detaches(
    kit: StreamKit, method: str, params: dict[str, Any], expected: dict[str, Any]
) -> None:
    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await lifecycle.launch("fake-echo", kit.task(), InstallPolicy())
            try:
                client = session.attach("editor")
                async with aclosing(client.messages()) as messages:
                    await _ask(session, {"id": "ask-1", "method": method, "params": params})
                    forwarded = await _next(messages)
                    assert (forwarded["id"], forwarded["method"]) == ("ask-1", method)
                    assert session.unanswered_server_requests == 1
                    session.detach(client)  # a reload: gone without answering
                assert session.unanswered_server_requests == 0
                answers = await _server_got(session)
                assert [answer["id"] for answer in answers] == ["ask-1"]
                (answer,) = answers
                if "error" in expected:
                    assert answer["error"]["code"] == expected["error"]["code"]
                    assert "result" not in answer
                else:
                    assert answer["result"] == expected["result"] and "error" not in answer
                endpoint = session.headless_endpoint()
                if method == "window/workDoneProgress/create":
                    assert endpoint.progress.is_known("load-1")  # tracked, as headless
                if method == "client/registerCapability":
                    assert [r.id for r in endpoint.registrations.snapshot()] == ["watch-1"]
            finally:
                await session.aclose()

    asyncio.run(scenario())


def test_a_client_that_answers_before_detaching_is_not_answered_twice(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await lifecycle.launch("fake-echo", kit.task(), InstallPolicy())
            try:
                client = session.attach("editor")
                async with aclosing(client.messages()) as messages:
                    await _ask(
                        session,
                        {"id": "ask-1", "method": "window/workDoneProgress/create", "params": {"token": 7}},
                        {"id": 2, "method": "custom/unknownQuestion"},  # not an ask- id: not recorded
                        {"id": "ask-3", "method": "custom/unknownQuestion"},
                    )
                    assert [(await _next(messages))["id"] for _ in range(3)] == ["ask-1", 2, "ask-3"]
                    assert session.unanswered_server_requests == 3
                    await session.send(_body({"jsonrpc": "2.0", "id": "ask-1", "result": None}))
                    await session.send(_body({"jsonrpc": "2.0", "id": 2, "result": None}))
                    error = {"code": -32000, "message": "the editor's own answer"}
                    await session.send(_body({"jsonrpc": "2.0", "id": "ask-3", "error": error}))
                    assert session.unanswered_server_requests == 0
                    session.detach(client)
                answers = await _server_got(session)
                assert answers == [
                    {"jsonrpc": "2.0", "id": "ask-1", "result": None},
                    {"jsonrpc": "2.0", "id": "ask-3", "error": error},
                ]
                # The client answered create: the headless endpoint never saw it, so it tracks no token.
                assert not session.headless_endpoint().progress.is_known(7)
            finally:
                await session.aclose()

    asyncio.run(scenario())


def test_a_client_dropped_as_too_slow_leaves_nothing_unanswered(kit: StreamKit) -> None:
    """K15.11: the reader drops a client that does not read; what it was given is answered by default."""

    async def scenario() -> None:
        limits = BridgeLimits(attachment_queue_bytes=64 * 1024)
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await lifecycle.launch("fake-echo", kit.task(), InstallPolicy(), limits=limits)
            try:
                idle = session.attach("idle")
                await _ask(
                    session,
                    {"id": "ask-1", "method": "window/workDoneProgress/create", "params": {"token": 1}},
                )
                flood = {"jsonrpc": "2.0", "method": "test/flood", "params": {"count": 20, "size": 10_000}}
                await session.send(_body(flood))
                async with asyncio.timeout(10):
                    while not idle.ended:
                        await asyncio.sleep(0.02)
                assert session.attachments == 0 and session.unanswered_server_requests == 0
                assert await _server_got(session) == [{"jsonrpc": "2.0", "id": "ask-1", "result": None}]
            finally:
                await session.aclose()

    asyncio.run(scenario())


def test_a_request_is_answered_when_the_last_client_it_reached_leaves(kit: StreamKit) -> None:
    """With two clients: a request both received waits for either to answer until both are gone; one only
    the leaving client received is answered at once, even though another client stays attached."""

    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await lifecycle.launch("fake-echo", kit.task(), InstallPolicy())
            try:
                first = session.attach("first")
                async with aclosing(first.messages()) as first_messages:
                    await _ask(session, {"id": "ask-1", "method": "custom/onlyFirst"})
                    assert (await _next(first_messages))["id"] == "ask-1"
                    second = session.attach("second")
                    async with aclosing(second.messages()) as second_messages:
                        await _ask(session, {"id": "ask-2", "method": "custom/both"})
                        assert (await _next(first_messages))["id"] == "ask-2"
                        assert (await _next(second_messages))["id"] == "ask-2"
                        session.detach(first)
                        assert session.unanswered_server_requests == 1  # ask-2: second may answer
                        session.detach(second)
                assert session.unanswered_server_requests == 0
                answers = await _server_got(session)
                assert [(a["id"], a["error"]["code"]) for a in answers] == [
                    ("ask-1", METHOD_NOT_FOUND),
                    ("ask-2", METHOD_NOT_FOUND),
                ]
            finally:
                await session.aclose()

    asyncio.run(scenario())


def test_tracking_is_bounded_the_oldest_is_answered_at_once_and_a_late_answer_dropped(kit: StreamKit) -> None:
    """256 requests are tracked; the 257th makes the session answer the oldest by default at once. The
    client's late answer to that one is dropped: the server gets one answer per request, never two."""

    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await lifecycle.launch("fake-echo", kit.task(), InstallPolicy())
            try:
                client = session.attach("editor")
                async with aclosing(client.messages()) as messages:
                    await _ask(session, *({"id": f"ask-{n}", "method": "custom/unknown"} for n in range(257)))
                    for n in range(257):
                        assert (await _next(messages))["id"] == f"ask-{n}"
                    assert session.unanswered_server_requests == 256
                    await session.send(_body({"jsonrpc": "2.0", "id": "ask-0", "result": "late"}))
                    await session.send(_body({"jsonrpc": "2.0", "id": "ask-1", "result": "in time"}))
                    assert session.unanswered_server_requests == 255
                    session.detach(client)
                answers = await _server_got(session)
                assert [a["id"] for a in answers] == [f"ask-{n}" for n in range(257)]
                assert answers[0]["error"]["code"] == METHOD_NOT_FOUND  # at once, not the late "late"
                assert answers[1]["result"] == "in time"
                assert all(a["error"]["code"] == METHOD_NOT_FOUND for a in answers[2:])
            finally:
                await session.aclose()

    asyncio.run(scenario())


def test_a_large_request_with_its_id_after_the_params_is_tracked(kit: StreamKit) -> None:
    """gopls's jsonrpc2 writes ``jsonrpc, method, params, id``: with large params the keys are checked at
    both ends of the body (not all of it), and the request is still found."""

    async def scenario() -> None:
        async with Lifecycle(kit.plugins()) as lifecycle:
            session = await lifecycle.launch("fake-echo", kit.task(), InstallPolicy())
            try:
                client = session.attach("editor")
                async with aclosing(client.messages()) as messages:
                    watchers = [{"globPattern": f"**/dir{n}/*.go"} for n in range(2000)]  # ~50 KiB
                    registration = {  # no "id" key in the body's first KiB
                        "method": "workspace/didChangeWatchedFiles",
                        "registerOptions": {"watchers": watchers},
                        "id": "watch-big",
                    }
                    request = {
                        "method": "client/registerCapability",
                        "params": {"registrations": [registration]},
                        "id": "ask-1",
                    }
                    await _ask(session, request)
                    assert (await _next(messages))["id"] == "ask-1"
                    assert session.unanswered_server_requests == 1
                    session.detach(client)
                assert await _server_got(session) == [{"jsonrpc": "2.0", "id": "ask-1", "result": None}]
                assert [r.id for r in session.headless_endpoint().registrations.snapshot()] == ["watch-big"]
            finally:
                await session.aclose()

    asyncio.run(scenario())
