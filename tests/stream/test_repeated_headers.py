"""A repeated ``Authorization`` header on serve's route: one clear 401, no 500, no traceback in the log.

Before the fix, websockets' ``MultipleValuesError`` escaped the request check: HTTP 500 and a logged
traceback for every such (unauthenticated) request, which let any caller fill the log.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from stream_testkit import TOKEN, StreamKit, tagged_alive
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

GOOD = f"Bearer {TOKEN}"
BAD = "Bearer wrong-token-0123456789abcdef"


@pytest.mark.parametrize(
    "values",
    [(GOOD, GOOD), (BAD, GOOD), (GOOD, BAD), (GOOD, GOOD, GOOD)],
    ids=["same", "bad-good", "good-bad", "three"],
)
def test_repeated_authorization_is_401_with_a_reason_and_no_traceback(
    kit: StreamKit, values: tuple[str, ...], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> Any:
        async with kit.serve() as server:
            with pytest.raises(InvalidStatus) as caught:
                async with connect(
                    f"{server.url}?language=fake-echo",
                    additional_headers=[("Authorization", value) for value in values],
                ):
                    pass
            return caught.value.response

    caplog.set_level(logging.DEBUG)
    response = asyncio.run(scenario())
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    body = json.loads(response.body)
    assert body["error"] == "unauthorized"
    assert body["message"] == f"send exactly one Authorization header (this request has {len(values)})"
    assert kit.plugin is not None and kit.plugin.discover_calls == 0  # nothing resolved, nothing started
    assert not tagged_alive(kit.tag)
    assert [record for record in caplog.records if record.exc_info] == []
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert any(
        "event=rejected" in record.getMessage() and "status=401" in record.getMessage()
        for record in caplog.records
    )


def test_one_authorization_header_still_connects(kit: StreamKit) -> None:
    """The strict rule costs a normal client nothing (the same request with the header once)."""

    async def scenario() -> None:
        async with (
            kit.serve() as server,
            connect(f"{server.url}?language=fake-echo", additional_headers=[("Authorization", GOOD)]) as ws,
        ):
            assert json.loads(await ws.recv())["status"] == "ready"

    asyncio.run(scenario())
