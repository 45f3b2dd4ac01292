"""The stream contract's pure parts: query parsing, tokens, status frames, close codes, log lines, and the
framing pump fed whole and byte by byte."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
from kandev_lsp.protocol import FrameLimits, ReceivedFrameTooLarge, TruncatedFrame
from kandev_lsp.session import log_event, read_frames
from kandev_lsp.stream import contract
from kandev_lsp.stream.auth import TOKEN_ENV, StreamToken, TokenError, check_bearer, load_token
from kandev_lsp.stream.contract import CLOSE_REASONS, BadStreamRequest, CloseCode, parse_stream_query


@pytest.mark.parametrize(
    ("target", "language", "auto"),
    [
        ("/api/v1/lsp/stream?language=go", "go", False),
        ("/api/v1/lsp/stream?language=go&autoInstall=1", "go", True),
        ("/api/v1/lsp/stream?language=go&autoInstall=true", "go", True),
        ("/api/v1/lsp/stream?language=go&autoInstall=TRUE", "go", True),
        ("/api/v1/lsp/stream?autoInstall=0&language=go", "go", False),
        ("/api/v1/lsp/stream?language=go&autoInstall=false", "go", False),
        ("/api/v1/lsp/stream?language=go&autoInstall=", "go", False),
    ],
)
def test_stream_queries(target: str, language: str, auto: bool) -> None:
    assert parse_stream_query(target) == contract.StreamRequest(language, auto)


@pytest.mark.parametrize(
    "target",
    [
        "/api/v1/lsp/stream",
        "/api/v1/lsp/stream?language=",
        "/api/v1/lsp/stream?language=a&language=b",
        "/api/v1/lsp/stream?language=go&autoInstall=yes",
        "/api/v1/lsp/stream?language=go&autoInstall=1&autoInstall=1",
    ],
)
def test_bad_stream_queries(target: str) -> None:
    with pytest.raises(BadStreamRequest) as caught:
        parse_stream_query(target)
    body = caught.value.to_json()
    assert body["error"] in ("missing_language", "bad_auto_install")
    assert body["message"]


def test_route_ignores_the_query() -> None:
    assert contract.route_of("/api/v1/lsp/stream?language=go") == contract.ROUTE


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        ("Bearer secret-token-0123456789", True),
        ("bearer secret-token-0123456789", True),
        ("  Bearer   secret-token-0123456789  ", True),
        ("Bearer secret-token-012345678", False),
        ("Bearer secret-token-0123456789x", False),
        ("Basic secret-token-0123456789", False),
        ("secret-token-0123456789", False),
        ("Bearer", False),
        ("", False),
        (None, False),
        ("Bearer sécret", False),
    ],
)
def test_bearer_check(header: str | None, ok: bool) -> None:
    assert check_bearer(header, "secret-token-0123456789") is ok


def test_token_from_file_then_environment_then_generated(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("from-file-0123456789abcdef\n", encoding="utf-8")
    assert (
        load_token(str(token_file), {TOKEN_ENV: "from-env-0123456789abcdef"}).value
        == "from-file-0123456789abcdef"
    )
    assert load_token(None, {TOKEN_ENV: "from-env-0123456789abcdef"}) == StreamToken(
        "from-env-0123456789abcdef"
    )
    first, second = load_token(None, {}), load_token(None, {})
    assert first.generated and second.generated and first.value != second.value
    assert len(first.value) >= 32
    assert first.value not in repr(first)


@pytest.mark.parametrize("value", ["short", "", "has space in-it-0123456789"])
def test_unusable_tokens_are_refused(value: str) -> None:
    with pytest.raises(TokenError):
        load_token(None, {TOKEN_ENV: value})


def test_unreadable_token_file_says_which_file() -> None:
    with pytest.raises(TokenError, match="nope"):
        load_token("/nonexistent/nope", {})


def test_status_frames_match_the_contract() -> None:
    assert json.loads(contract.installing_frame("go")) == {"status": "installing", "language": "go"}
    assert json.loads(contract.installed_frame("go")) == {"status": "installed", "language": "go"}
    assert json.loads(contract.install_failed_frame("go", "why")) == {
        "status": "install_failed",
        "language": "go",
        "error": "why",
    }
    assert json.loads(contract.ready_frame("go", "/w", "file:///w")) == {
        "status": "ready",
        "language": "go",
        "workspacePath": "/w",
        "workspaceUri": "file:///w",
        "controls": ["settings", "stop"],  # the control frames serve acts on (issue 18 items 8-9)
    }


def test_a_settings_request_is_recognised_like_the_stop_frame() -> None:
    request = contract.settings_request
    assert request(b'{"control":"settings"}') == contract.SettingsRequest(None)
    assert request(b'{"control":"settings","settings":{"a":1}}') == contract.SettingsRequest({"a": 1})
    assert request(contract.settings_frame({"b": [2]}).encode()) == contract.SettingsRequest({"b": [2]})
    for body in (
        b'{"control":"settings","settings":[1]}',  # not an object
        b'{"control":"settings","jsonrpc":"2.0"}',  # JSON-RPC that mentions control
        b' {"control":"settings"}',  # does not start with the prefix
        b'{"control":"stop"}',
        b'{"control":"settings","settings":{"x":"' + b"y" * contract.MAX_SETTINGS_FRAME + b'"}}',
    ):
        assert request(body) is None, body
    assert json.loads(contract.settings_ack(True)) == {"ack": "settings", "changed": True}
    # Nested past json's depth (RecursionError, not ValueError): no control frame, and no exception.
    deep = b'{"control":"settings","settings":' + b"[" * 5000 + b"]" * 5000 + b"}"
    assert request(deep) is None and contract.control_object(deep, 1 << 20) is None


def test_close_codes_and_reasons() -> None:
    assert {int(code) for code in CloseCode} == {
        1000, 1001, 1002, 1007, 1009, 4001, 4003, 4005, 4006, 4007, 4008, 4009
    }  # fmt: skip
    assert CLOSE_REASONS[4009] == "transport failed"  # K9.12: never "client too slow"
    for code in CloseCode:
        assert len(CLOSE_REASONS[code].encode()) <= 32  # short and generic; details go to the log


def test_log_event_quotes_values_and_keeps_lines_single(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("kandev_lsp.test")
    with caplog.at_level(logging.INFO, logger="kandev_lsp.test"):
        log_event(
            logger, "thing", plain="abc", spaced="a b", quote='say "hi"', multi="one\ntwo", empty="", number=3
        )
    assert caplog.messages == [
        'event=thing plain=abc spaced="a b" quote="say \\"hi\\"" multi="one\\ntwo" empty="" number=3'
    ]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="kandev_lsp.test"):  # no forged line, no terminal control
        log_event(logger, "thing", cr="a\rb", esc="\x1b[31mred", sep="x\u2028y", tab="a\tb", ok="é")
    assert caplog.messages == [
        'event=thing cr="a\\x0db" esc="\\x1b[31mred" sep="x\\u2028y" tab="a\\x09b" ok=é'
    ]


def _frames(stream: bytes, chunk: int, limits: FrameLimits | None = None) -> list[bytes]:
    async def collect() -> list[bytes]:
        reader = asyncio.StreamReader()
        for start in range(0, len(stream), chunk):
            reader.feed_data(stream[start : start + chunk])
        reader.feed_eof()
        return [body async for body in read_frames(reader, limits or FrameLimits(), chunk=7)]

    return asyncio.run(collect())


@pytest.mark.parametrize("chunk", [1, 3, 1000])
def test_pump_yields_every_frame_whole_or_byte_by_byte(chunk: int) -> None:
    bodies = [b"{}", b'{"a":"' + b"x" * 100 + b'"}', '{"é":1}'.encode()]
    stream = b"".join(b"Content-Length: %d\r\n\r\n" % len(body) + body for body in bodies)
    assert _frames(stream, chunk) == bodies


def test_pump_reports_a_stream_cut_mid_frame() -> None:
    with pytest.raises(TruncatedFrame):
        _frames(b"Content-Length: 10\r\n\r\n{}", 5)


def test_pump_rejects_an_oversized_frame_from_its_header() -> None:
    with pytest.raises(ReceivedFrameTooLarge):
        _frames(b"Content-Length: 101\r\n\r\n{", 4, FrameLimits(body=100))


@pytest.mark.parametrize(
    ("end", "status", "exit_requested", "stopping", "expected"),
    [
        ("server_exited", 0, True, False, (1000, "")),  # shutdown + exit, then status 0
        ("server_exited", 0, False, False, (4006, "server stopped")),  # exited unasked, even with 0
        ("server_exited", 1, True, False, (4006, "server stopped")),  # asked, but failed on the way out
        ("server_exited", None, False, False, (4006, "server stopped")),
        ("client_stalled", None, False, False, (4006, "client too slow")),  # never 4009 (K9.12)
        ("client_closed", None, False, False, (1000, "")),
        ("client_input_malformed", None, False, False, (1007, "invalid UTF-8")),
        ("client_message_too_large", None, False, False, (1009, "message too big")),
        ("server_stdin_stalled", None, False, False, (4006, "server stopped")),
        ("client_closed", None, False, True, (1001, "going away")),  # teardown, whatever ended first
        ("server_exited", 0, True, True, (1001, "going away")),
    ],
)
def test_bridge_close_decisions(
    end: str, status: int | None, exit_requested: bool, stopping: bool, expected: tuple[int, str]
) -> None:
    from kandev_lsp.stream.bridge import BridgeEnd
    from kandev_lsp.stream.connection import bridge_close

    code, reason = bridge_close(BridgeEnd(end), status, exit_requested=exit_requested, stopping=stopping)
    assert (int(code), reason) == expected
    assert code != 4009
