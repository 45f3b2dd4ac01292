"""JSON-RPC helpers: parsing bodies, classifying messages, building them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kandev_lsp.protocol import (
    NEED_DATA,
    FrameDecoder,
    MalformedMessage,
    RemoteProtocolError,
    encode_frame,
    jsonrpc,
)
from kandev_lsp.protocol.jsonrpc import ErrorCode, MessageKind

# -- parse_message ------------------------------------------------------------------------------------


def test_parse_message_reads_bytes_and_text():
    expected = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"x": "é"}}
    raw = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"é"}}'
    assert jsonrpc.parse_message(raw.encode()) == expected
    assert jsonrpc.parse_message(raw) == expected


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"a":"\xff"}', "not valid UTF-8 (byte 6)"),
        (b'{"a":', "not valid JSON: Expecting value at line 1 column 6"),
        (b"", "not valid JSON: Expecting value at line 1 column 1"),
        (b'{"a":1} {"b":2}', "not valid JSON: Extra data"),
        (b"\xef\xbb\xbf{}", "not valid JSON"),  # a BOM is not part of an LSP body
        (b"[]", "got an array (LSP does not use JSON-RPC batches)"),
        (b'"text"', "got a string"),
        (b"1.5", "got a number"),
        (b"true", "got a boolean"),
        (b"null", "got null"),
        (b'{"a":NaN}', "not acceptable JSON: NaN is not valid JSON"),
        (b'{"a":-Infinity}', "-Infinity is not valid JSON"),
        (b'{"a":1e400}', "not acceptable JSON: the number 1e400 is out of range"),  # reads as inf
        (b'{"a":[-1E400]}', "the number -1E400 is out of range"),
        (b"[" * 200_000 + b"]" * 200_000, "not acceptable JSON"),
        (b'{"a":' + b"1" * 5000 + b"}", "not acceptable JSON"),
    ],
)
def test_parse_message_rejects_what_is_not_a_json_object(body, message):
    with pytest.raises(MalformedMessage) as caught:
        jsonrpc.parse_message(body)
    assert message in str(caught.value)
    assert isinstance(caught.value, RemoteProtocolError)


def test_parse_errors_do_not_quote_the_body():
    with pytest.raises(MalformedMessage) as caught:
        jsonrpc.parse_message(b'{"token": "s3cr3t", oops}')
    assert "s3cr3t" not in str(caught.value)


# -- classify -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}, MessageKind.REQUEST),
        ({"jsonrpc": "2.0", "id": "abc", "method": "shutdown"}, MessageKind.REQUEST),
        ({"jsonrpc": "2.0", "method": "initialized", "params": {}}, MessageKind.NOTIFICATION),
        ({"jsonrpc": "2.0", "method": "exit"}, MessageKind.NOTIFICATION),
        ({"jsonrpc": "2.0", "id": 1, "result": None}, MessageKind.RESPONSE),
        ({"jsonrpc": "2.0", "id": "x", "result": {"capabilities": {}}}, MessageKind.RESPONSE),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}}, MessageKind.RESPONSE),
        ({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad"}}, MessageKind.RESPONSE),
    ],
)
def test_classify(message, kind):
    assert jsonrpc.classify(message) is kind


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ({"id": 1, "method": "initialize"}, '"jsonrpc": "2.0"'),
        ({"jsonrpc": "1.0", "id": 1, "method": "initialize"}, '"jsonrpc": "2.0"'),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, "not a string"),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "m"}, "neither an integer nor a string"),
        ({"jsonrpc": "2.0", "id": True, "method": "m"}, "neither an integer nor a string"),
        ({"jsonrpc": "2.0", "id": None, "method": "m"}, "neither an integer nor a string"),
        ({"jsonrpc": "2.0"}, 'neither "method" nor "id"'),
        ({"jsonrpc": "2.0", "result": 1}, 'neither "method" nor "id"'),
        ({"jsonrpc": "2.0", "id": 1}, 'exactly one of "result" and "error"'),
        ({"jsonrpc": "2.0", "id": 1, "result": 1, "error": {}}, 'exactly one of "result" and "error"'),
        ({"jsonrpc": "2.0", "id": [1], "result": 1}, "neither an integer, a string nor null"),
    ],
)
def test_classify_rejects_what_is_not_json_rpc(message, reason):
    with pytest.raises(MalformedMessage) as caught:
        jsonrpc.classify(message)
    assert reason in str(caught.value)


# -- builders -----------------------------------------------------------------------------------------


def test_request_omits_absent_params():
    # Some servers reject "params": null (e.g. on shutdown), so None means "no member".
    assert jsonrpc.request(1, "shutdown") == {"jsonrpc": "2.0", "id": 1, "method": "shutdown"}
    assert jsonrpc.request("a", "m", {"k": 1}) == {
        "jsonrpc": "2.0",
        "id": "a",
        "method": "m",
        "params": {"k": 1},
    }
    assert jsonrpc.request(2, "m", []) == {"jsonrpc": "2.0", "id": 2, "method": "m", "params": []}


def test_notification():
    assert jsonrpc.notification("exit") == {"jsonrpc": "2.0", "method": "exit"}
    assert jsonrpc.notification("initialized", {}) == {
        "jsonrpc": "2.0",
        "method": "initialized",
        "params": {},
    }


def test_response_always_carries_result():
    assert jsonrpc.response(3, None) == {"jsonrpc": "2.0", "id": 3, "result": None}
    assert jsonrpc.response("x", [{}]) == {"jsonrpc": "2.0", "id": "x", "result": [{}]}


def test_error_response():
    assert jsonrpc.error_response(4, ErrorCode.METHOD_NOT_FOUND, "no such method") == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {"code": -32601, "message": "no such method"},
    }
    assert jsonrpc.error_response(None, ErrorCode.PARSE_ERROR, "bad", {"at": 3}) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "bad", "data": {"at": 3}},
    }
    assert type(jsonrpc.error_response(1, ErrorCode.INTERNAL_ERROR, "x")["error"]["code"]) is int


def test_error_codes_match_the_specifications():
    assert {code.name: code.value for code in ErrorCode} == {
        "PARSE_ERROR": -32700,
        "INVALID_REQUEST": -32600,
        "METHOD_NOT_FOUND": -32601,
        "INVALID_PARAMS": -32602,
        "INTERNAL_ERROR": -32603,
        "SERVER_NOT_INITIALIZED": -32002,
        "UNKNOWN_ERROR_CODE": -32001,
        "REQUEST_FAILED": -32803,
        "SERVER_CANCELLED": -32802,
        "CONTENT_MODIFIED": -32801,
        "REQUEST_CANCELLED": -32800,
    }


def test_built_messages_classify_as_what_they_are():
    assert jsonrpc.classify(jsonrpc.request(1, "m")) is MessageKind.REQUEST
    assert jsonrpc.classify(jsonrpc.notification("m")) is MessageKind.NOTIFICATION
    assert jsonrpc.classify(jsonrpc.response(1, None)) is MessageKind.RESPONSE
    assert jsonrpc.classify(jsonrpc.error_response(None, -32700, "x")) is MessageKind.RESPONSE


# -- dump_message ---------------------------------------------------------------------------------------


def test_dump_message_is_compact_utf8():
    assert jsonrpc.dump_message({"jsonrpc": "2.0", "method": "m", "params": {"t": "é ✓"}}) == (
        '{"jsonrpc":"2.0","method":"m","params":{"t":"é ✓"}}'.encode()
    )


def test_dump_message_refuses_nan():
    with pytest.raises(ValueError):
        jsonrpc.dump_message({"x": float("nan")})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=10,
)


@settings(max_examples=60, deadline=None)
@given(params=json_values, request_id=st.integers() | st.text(max_size=8))
def test_a_request_survives_dump_frame_decode_and_parse(params, request_id):
    sent = jsonrpc.request(request_id, "textDocument/hover", params)
    decoder = FrameDecoder()
    decoder.receive_data(encode_frame(jsonrpc.dump_message(sent)))
    body = decoder.next_frame()
    assert body is not NEED_DATA
    received = jsonrpc.parse_message(body)
    assert received == sent
    assert jsonrpc.classify(received) is MessageKind.REQUEST
    assert decoder.next_frame() is NEED_DATA
