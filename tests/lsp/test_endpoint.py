"""The sans-io endpoint, driven with plain values: ids, bounds, deadlines, cancel, the router's defaults,
the initialize exchange, generations and garbage."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kandev_lsp.lsp.endpoint import (
    APPLY_EDIT_REFUSED,
    Endpoint,
    EndpointLimits,
    MessageRejected,
    NotificationReceived,
    RequestTimedOut,
    ResponseReceived,
    ServerCancelledRequest,
    ServerRequestReceived,
    UnmatchedResponse,
    configuration_handler,
)
from kandev_lsp.lsp.errors import HandlerError, RequestRefused
from kandev_lsp.lsp.positions import PositionEncoding
from kandev_lsp.protocol.jsonrpc import ErrorCode


def sent(endpoint: Endpoint) -> list[dict[str, Any]]:
    return [json.loads(body) for body in endpoint.data_to_send()]


def server_request(request_id: Any, method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def answer(endpoint: Endpoint, request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    events = endpoint.receive(server_request(request_id, method, params), 0.0)
    assert events == [ServerRequestReceived(request_id, method, params, True)]
    (reply,) = sent(endpoint)
    assert reply["id"] == request_id
    return reply


def test_prefixed_ids_never_match_a_clients_integer_ids() -> None:
    """A session's own endpoint shares the server with clients: a late answer to a client's id 1 must
    not be taken for the answer to the endpoint's own first request (its ``shutdown``)."""
    endpoint = Endpoint(id_prefix="kandev-lsp:")
    shutdown = endpoint.send_request("shutdown", now=0.0)
    assert shutdown.id == "kandev-lsp:1"
    assert sent(endpoint) == [{"jsonrpc": "2.0", "id": "kandev-lsp:1", "method": "shutdown"}]
    assert endpoint.receive(b'{"jsonrpc":"2.0","id":1,"result":{"late":true}}', 1.0) == [UnmatchedResponse(1)]
    (event,) = endpoint.receive(b'{"jsonrpc":"2.0","id":"kandev-lsp:1","result":null}', 1.0)
    assert event == ResponseReceived(shutdown, None, None)


def test_requests_get_increasing_ids_and_their_responses_resolve_them() -> None:
    endpoint = Endpoint()
    first = endpoint.send_request("textDocument/hover", {"x": 1}, now=0.0)
    second = endpoint.send_request("shutdown", now=0.0)
    assert (first.id, second.id) == (1, 2)
    assert sent(endpoint) == [
        {"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": {"x": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},  # no "params": null (TypeScript 7 rejects it)
    ]
    (event,) = endpoint.receive(b'{"jsonrpc":"2.0","id":2,"result":null}', 1.0)
    assert event == ResponseReceived(second, None, None)
    (event,) = endpoint.receive(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32801,"message":"modified"}}', 1.0)
    assert isinstance(event, ResponseReceived) and event.error == {"code": -32801, "message": "modified"}
    assert endpoint.pending == {} and endpoint.tracked_bytes == 0
    assert endpoint.receive(b'{"jsonrpc":"2.0","id":1,"result":1}', 2.0) == [UnmatchedResponse(1)]


def test_bounds_refuse_before_anything_is_queued() -> None:
    endpoint = Endpoint(limits=EndpointLimits(max_pending=2))
    endpoint.send_request("a", now=0.0)
    endpoint.send_request("b", now=0.0)
    endpoint.data_to_send()
    with pytest.raises(RequestRefused, match="2 requests are already waiting"):
        endpoint.send_request("c", now=0.0)
    assert endpoint.data_to_send() == [] and len(endpoint.pending) == 2
    small = Endpoint(limits=EndpointLimits(max_tracked_bytes=200))
    small.send_request("m" * 100, now=0.0)
    with pytest.raises(RequestRefused, match="tracked bytes"):
        small.send_request("m" * 100, now=0.0)


def test_deadlines_expire_and_cancel_toward_the_server() -> None:
    endpoint = Endpoint(limits=EndpointLimits(default_timeout=30.0))
    slow = endpoint.send_request("workspace/symbol", now=0.0, timeout=5.0)
    default = endpoint.send_request("textDocument/references", now=1.0)
    forever = endpoint.send_request("x", now=0.0, timeout=None)
    endpoint.data_to_send()
    assert endpoint.next_deadline() == 5.0
    assert endpoint.expire(4.9) == []
    assert endpoint.expire(5.0) == [RequestTimedOut(slow)]
    assert sent(endpoint) == [{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": slow.id}}]
    assert endpoint.next_deadline() == 31.0
    assert endpoint.expire(100.0) == [RequestTimedOut(default)]
    assert set(endpoint.pending) == {forever.id} and endpoint.next_deadline() is None
    # the server's late answer is dropped
    assert endpoint.receive(json.dumps({"jsonrpc": "2.0", "id": slow.id, "result": []}).encode(), 101.0) == [
        UnmatchedResponse(slow.id)
    ]


def test_cancel_and_cancel_tagged() -> None:
    endpoint = Endpoint()
    a = endpoint.send_request("a", now=0.0, tag="attachment-1")
    b = endpoint.send_request("b", now=0.0, tag="attachment-2")
    c = endpoint.send_request("c", now=0.0, tag="attachment-1")
    endpoint.data_to_send()
    assert endpoint.cancel_tagged("attachment-1") == [a, c]
    assert [m["params"]["id"] for m in sent(endpoint)] == [a.id, c.id]
    assert endpoint.cancel(a.id) is None  # already cancelled: nothing sent twice
    assert endpoint.data_to_send() == []
    assert endpoint.cancel(b.id) == b


def test_initialize_is_recorded_and_the_encoding_negotiated() -> None:
    endpoint = Endpoint()
    params = {
        "processId": 1,
        "capabilities": {"general": {"positionEncodings": ["utf-8", "utf-16"]}},
        "workspaceFolders": [{"uri": "file:///ws", "name": "ws"}],
        "workDoneToken": "init",
    }
    request = endpoint.send_initialize(params, now=12.5)
    endpoint.data_to_send()
    assert endpoint.initialize_sent_at == 12.5 and endpoint.initializing
    assert endpoint.initialize_params == params
    result = {
        "capabilities": {"positionEncoding": "utf-8", "hoverProvider": True},
        "serverInfo": {"name": "s"},
    }
    endpoint.receive(json.dumps({"jsonrpc": "2.0", "id": request.id, "result": result}).encode(), 13.0)
    assert (
        endpoint.initialize_result == result and endpoint.initialized_at == 13.0 and not endpoint.initializing
    )
    assert endpoint.server_capabilities["hoverProvider"] is True
    assert endpoint.position_encoding is PositionEncoding.UTF8
    # $/progress for the initialize token is tracked (K6.2)
    endpoint.receive(
        b'{"jsonrpc":"2.0","method":"$/progress","params":{"token":"init","value":{"kind":"begin","title":"Load"}}}',
        14.0,
    )
    assert [item.title for item in endpoint.progress.active] == ["Load"]
    assert answer(endpoint, 1, "workspace/workspaceFolders")["result"] == [
        {"uri": "file:///ws", "name": "ws"}
    ]


def test_a_failed_initialize_is_recorded_without_a_result() -> None:
    endpoint = Endpoint()
    request = endpoint.send_initialize({"capabilities": {}}, now=0.0)
    endpoint.receive(
        json.dumps({"jsonrpc": "2.0", "id": request.id, "error": {"code": 1, "message": "no"}}).encode(), 1.0
    )
    assert endpoint.initialize_result is None and endpoint.initialized_at == 1.0
    assert endpoint.position_encoding is PositionEncoding.UTF16


@pytest.mark.parametrize(
    ("method", "params", "result"),
    [
        ("window/workDoneProgress/create", {"token": "t"}, None),
        ("window/workDoneProgress/create", {"token": 4}, None),
        ("client/registerCapability", {"registrations": [{"id": "r", "method": "m"}]}, None),
        ("client/unregisterCapability", {"unregisterations": [{"id": "r", "method": "m"}]}, None),
        ("window/showMessageRequest", {"type": 1, "message": "Reload?", "actions": [{"title": "Yes"}]}, None),
        ("workspace/workspaceFolders", None, None),
        ("workspace/codeLens/refresh", None, None),
        ("workspace/semanticTokens/refresh", None, None),
        ("workspace/inlayHint/refresh", None, None),
        ("workspace/diagnostic/refresh", None, None),
        ("workspace/configuration", {"items": [{"section": "python"}, {"section": "x"}]}, [None, None]),
        ("workspace/configuration", {}, [None]),
        ("workspace/applyEdit", {"edit": {}}, {"applied": False, "failureReason": APPLY_EDIT_REFUSED}),
    ],
)
def test_default_answers(method: str, params: Any, result: Any) -> None:
    endpoint = Endpoint()
    reply = answer(endpoint, 7, method, params)
    assert reply == {"jsonrpc": "2.0", "id": 7, "result": result}


def test_defaults_apply_state() -> None:
    endpoint = Endpoint()
    answer(endpoint, 1, "window/workDoneProgress/create", {"token": "t"})
    assert endpoint.progress.is_known("t")
    answer(
        endpoint,
        2,
        "client/registerCapability",
        {"registrations": [{"id": "r", "method": "workspace/didChangeWatchedFiles"}]},
    )
    assert [reg.id for reg in endpoint.registrations.snapshot()] == ["r"]
    answer(endpoint, 3, "client/unregisterCapability", {"unregisterations": [{"id": "r", "method": "x"}]})
    assert endpoint.registrations.snapshot() == ()


@pytest.mark.parametrize(
    ("method", "params", "code"),
    [
        ("workspace/somethingNew", None, ErrorCode.METHOD_NOT_FOUND),
        ("workspace/refresh", None, ErrorCode.METHOD_NOT_FOUND),  # not workspace/<feature>/refresh
        ("window/workDoneProgress/create", {"token": True}, ErrorCode.INVALID_PARAMS),
        ("window/workDoneProgress/create", None, ErrorCode.INVALID_PARAMS),
    ],
)
def test_errors_for_unknown_methods_and_bad_params(method: str, params: Any, code: int) -> None:
    reply = answer(Endpoint(), "s-1", method, params)
    assert reply["error"]["code"] == code and "result" not in reply


def test_owner_handlers_answerers_and_deferred_requests() -> None:
    class Answerer:
        def answer(self, settings: Any, params: Any) -> list[Any]:
            return [settings["k"]] * len(params["items"])

    current = {"k": 1}
    endpoint = Endpoint(
        configuration=configuration_handler(Answerer(), lambda: current),
        apply_edit=lambda p: {"applied": True},
    )  # type: ignore[arg-type]
    assert answer(endpoint, 1, "workspace/configuration", {"items": [{}, {}]})["result"] == [1, 1]
    current = {"k": 2}
    assert answer(endpoint, 2, "workspace/configuration", {"items": [{}]})["result"] == [2]  # live settings
    assert answer(endpoint, 3, "workspace/applyEdit", {"edit": {}})["result"] == {"applied": True}

    def refuse(params: Any) -> Any:
        raise HandlerError(ErrorCode.REQUEST_FAILED, "no", {"why": 1})

    endpoint.set_handler("window/showMessageRequest", refuse)
    assert answer(endpoint, 4, "window/showMessageRequest", {})["error"] == {
        "code": -32803,
        "message": "no",
        "data": {"why": 1},
    }
    endpoint.set_handler("custom/boom", lambda params: 1 / 0)
    error = answer(endpoint, 5, "custom/boom")["error"]
    assert error["code"] == ErrorCode.INTERNAL_ERROR and "ZeroDivisionError" in error["message"]
    endpoint.set_handler("window/showMessageRequest", None)
    assert answer(endpoint, 6, "window/showMessageRequest", {})["result"] is None

    endpoint.defer("workspace/applyEdit")
    events = endpoint.receive(server_request(8, "workspace/applyEdit", {"edit": {}}), 0.0)
    assert events == [ServerRequestReceived(8, "workspace/applyEdit", {"edit": {}}, False)]
    assert endpoint.data_to_send() == [] and dict(endpoint.deferred) == {8: "workspace/applyEdit"}
    assert endpoint.receive(b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":8}}', 0.0) == [
        ServerCancelledRequest(8)
    ]
    assert endpoint.respond(8, {"applied": True}) and not endpoint.respond(8, {})
    assert sent(endpoint) == [{"jsonrpc": "2.0", "id": 8, "result": {"applied": True}}]
    endpoint.receive(server_request(9, "workspace/applyEdit", {}), 0.0)
    assert endpoint.respond_error(9, ErrorCode.REQUEST_CANCELLED, "cancelled")
    assert sent(endpoint)[0]["error"]["code"] == ErrorCode.REQUEST_CANCELLED


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "not valid JSON"),
        (b"[]", "JSON object"),
        (b'{"id":1,"result":1}', "jsonrpc"),
        (b'{"jsonrpc":"2.0","method":5}', "not a string"),
        (b'{"jsonrpc":"2.0","id":1}', "exactly one"),
        (b"\xff\xfe", "UTF-8"),
    ],
)
def test_garbage_is_rejected_and_nothing_else_changes(body: bytes, reason: str) -> None:
    endpoint = Endpoint()
    request = endpoint.send_request("x", now=0.0)
    endpoint.data_to_send()
    (event,) = endpoint.receive(body, 0.0)
    assert isinstance(event, MessageRejected) and reason in event.reason
    assert dict(endpoint.pending) == {request.id: request}


def test_a_server_request_with_an_unusable_id_is_answered_with_id_null() -> None:
    endpoint = Endpoint(limits=EndpointLimits(max_id_bytes=8))
    for bad_id in ("x" * 9, [1], True, 1.5):
        (event,) = endpoint.receive(json.dumps({"jsonrpc": "2.0", "id": bad_id, "method": "m"}).encode(), 0.0)
        assert isinstance(event, MessageRejected)
        (reply,) = sent(endpoint)
        assert reply["id"] is None and reply["error"]["code"] == ErrorCode.INVALID_REQUEST


def test_notifications_feed_progress_and_diagnostics() -> None:
    endpoint = Endpoint()
    answer(endpoint, 1, "window/workDoneProgress/create", {"token": 5})
    params = {"token": 5, "value": {"kind": "begin", "title": "Analyzing"}}
    assert endpoint.receive(
        json.dumps({"jsonrpc": "2.0", "method": "$/progress", "params": params}).encode(), 1.0
    ) == [NotificationReceived("$/progress", params)]
    assert endpoint.progress.snapshot().primary is not None
    diagnostics = {"uri": "file:///a.py", "version": 2, "diagnostics": [{"message": "x"}]}
    endpoint.receive(
        json.dumps(
            {"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": diagnostics}
        ).encode(),
        2.0,
    )
    entry = endpoint.diagnostics.get("file:///a.py")
    assert entry is not None and (entry.version, entry.generation, entry.received_at) == (2, 1, 2.0)


def test_connection_lost_fails_everything_and_a_new_generation_starts_clean() -> None:
    endpoint = Endpoint()
    first = endpoint.send_request("a", now=0.0)
    endpoint.data_to_send()
    answer(endpoint, 1, "window/workDoneProgress/create", {"token": "t"})
    endpoint.documents.open("file:///a", "python")
    assert endpoint.connection_lost() == [first]
    with pytest.raises(RequestRefused, match="closed"):
        endpoint.send_request("b", now=0.0)
    with pytest.raises(RequestRefused):
        endpoint.send_notification("n")
    assert endpoint.new_generation() == 2
    assert not endpoint.closed and endpoint.progress.generation == 2 and not endpoint.progress.is_known("t")
    assert endpoint.documents.open_documents() == () and endpoint.diagnostics.generation == 2
    assert endpoint.send_request("c", now=0.0).id > first.id  # an old id never names a new request


actions = st.lists(
    st.one_of(
        st.tuples(
            st.just("send"),
            st.sampled_from(["a", "textDocument/references", "m" * 40]),
            st.sampled_from([None, 1.0, 5.0]),
        ),
        st.tuples(st.just("answer"), st.integers(0, 12), st.booleans()),
        st.tuples(st.just("cancel"), st.integers(0, 12), st.just(None)),
        st.tuples(st.just("expire"), st.floats(0, 10), st.just(None)),
    ),
    max_size=60,
)


@settings(max_examples=100, deadline=None)
@given(actions)
def test_the_pending_table_stays_consistent(sequence: list[tuple[str, Any, Any]]) -> None:
    endpoint = Endpoint(limits=EndpointLimits(max_pending=4, default_timeout=None))
    now = 0.0
    answered: set[int] = set()
    for kind, first, second in sequence:
        now += 0.5
        if kind == "send":
            try:
                endpoint.send_request(first, now=now, timeout=second)
            except RequestRefused:
                assert len(endpoint.pending) == 4
        elif kind == "answer":
            was_pending = first in endpoint.pending
            message = {"jsonrpc": "2.0", "id": first, "result": second}
            events = endpoint.receive(json.dumps(message).encode(), now)
            assert isinstance(events[0], ResponseReceived) == was_pending
            if was_pending:
                answered.add(first)
        elif kind == "cancel":
            endpoint.cancel(first)
        else:
            for event in endpoint.expire(first + now):
                assert event.request.deadline is not None and event.request.deadline <= first + now
        assert len(endpoint.pending) <= 4
        assert endpoint.tracked_bytes == sum(request.size for request in endpoint.pending.values())
        assert not answered & set(endpoint.pending)  # an answered id is never pending again
