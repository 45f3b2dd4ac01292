"""The broker's wire contract as plain values: route, query, ready frame, control frames, close codes,
authorizer and switches (docs/broker-contract.md)."""

from __future__ import annotations

import asyncio
import json

import pytest
from kandev_lsp.broker.auth import BearerAuthorizer, Caller, CallerRequest, load_broker_token
from kandev_lsp.broker.closecodes import (
    CLOSE_REASONS,
    BrokerCloseCode,
    client_close_for_lease_end,
    client_close_for_upstream,
    proxy_close_for_upstream,
)
from kandev_lsp.broker.config import continuity_enabled, max_connections
from kandev_lsp.broker.contract import (
    BadBrokerRequest,
    Control,
    ControlError,
    ControlName,
    ReadyInfo,
    ack_frame,
    parse_broker_path,
    parse_broker_query,
    parse_control,
    ready_frame,
)
from kandev_lsp.broker.leases import ReleaseReason
from kandev_lsp.stream.auth import StreamToken, TokenError

# --- route -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "session"),
    [("/lsp/abc", "abc"), ("/lsp/s-1.x_y~z?language=go", "s-1.x_y~z"), ("/lsp/" + "a" * 128, "a" * 128)],
)
def test_the_session_comes_from_the_path(target: str, session: str) -> None:
    assert parse_broker_path(target) == session


@pytest.mark.parametrize(
    "target",
    [
        "/lsp/",
        "/lsp",
        "/lsp/a/b",
        "/api/v1/lsp/stream",
        "/lsp/" + "a" * 129,
        "/lsp/a%2Fb",
        "/lsp/..",
        "/lsp/a b",
    ],
)
def test_other_paths_are_404(target: str) -> None:
    with pytest.raises(BadBrokerRequest) as caught:
        parse_broker_path(target)
    assert caught.value.status == 404


def test_the_query_gives_language_hint_and_auto_install() -> None:
    query = parse_broker_query("/lsp/s?language=python&lease=Zk3_-x&autoInstall=TRUE")
    assert (query.language, query.lease_hint, query.auto_install) == ("python", "Zk3_-x", True)
    assert "Zk3" not in repr(query)
    plain = parse_broker_query("/lsp/s?language=go")
    assert (plain.lease_hint, plain.auto_install) == (None, False)


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("", "missing_language"),
        ("language=", "missing_language"),
        ("language=go&language=python", "missing_language"),
        ("language=go&lease=", "bad_lease_hint"),
        ("language=go&lease=a/b", "bad_lease_hint"),
        ("language=go&lease=" + "x" * 129, "bad_lease_hint"),
        ("language=go&lease=a&lease=b", "bad_lease_hint"),
        ("language=go&autoInstall=yes", "bad_auto_install"),
    ],
)
def test_bad_queries_are_400_and_never_echo_the_hint(query: str, error: str) -> None:
    with pytest.raises(BadBrokerRequest) as caught:
        parse_broker_query(f"/lsp/s?{query}")
    assert (caught.value.status, caught.value.error) == (400, error)
    assert "a/b" not in json.dumps(caught.value.to_json())


# --- frames ------------------------------------------------------------------------------------------


def test_the_ready_frame_extends_serves_ready_frame() -> None:
    info = ReadyInfo(
        language="python",
        workspace_path="/work/task",
        workspace_uri="file:///work/task",
        lease_id="Zk3",
        resumed=True,
        server_generation=2,
        capabilities={"hoverProvider": True},
        registrations=[{"id": "r1", "method": "workspace/didChangeWatchedFiles"}],
        suppressed_providers=["hover"],
        initialize_sent_at_ms=1_796_032_812_345,
        initialized=True,
    )
    frame = json.loads(ready_frame(info))
    assert frame["status"] == "ready" and "jsonrpc" not in frame
    assert {key: frame[key] for key in ("language", "workspacePath", "workspaceUri")} == {
        "language": "python",
        "workspacePath": "/work/task",
        "workspaceUri": "file:///work/task",
    }
    assert frame["lease"] == "Zk3" and frame["resumed"] is True and frame["serverGeneration"] == 2
    assert frame["capabilities"] == {"hoverProvider": True} and frame["serverInfo"] is None
    assert frame["progress"] == {"active": [], "lastEnded": None}
    assert frame["registrations"][0]["id"] == "r1" and frame["suppressedProviders"] == ["hover"]
    assert frame["initializeSentAt"] == 1_796_032_812_345 and frame["initialized"] is True
    assert "Zk3" not in repr(info)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"jsonrpc": "2.0", "method": "initialized", "control": "stop"}, None),
        ({"status": "ready"}, None),
        ({"control": "stop", "id": 7}, Control(ControlName.STOP, 7)),
        ({"control": "stop"}, Control(ControlName.STOP, None)),
        ({"control": "release", "reason": "editor_idle", "id": "a"}, Control(ControlName.RELEASE, "a")),
        ({"control": "release"}, Control(ControlName.RELEASE, None)),
        ({"control": "attachment-ready", "id": "r"}, Control(ControlName.ATTACHMENT_READY, "r")),
        ({"control": "reboot", "id": 1}, ControlError("reboot", 1, "unknown_control")),
        ({"control": "release", "reason": "tab_closed"}, ControlError("release", None, "unknown_reason")),
        ({"control": "stop", "id": True}, ControlError("stop", None, "bad_id")),
        ({"control": "stop", "id": "x" * 65}, ControlError("stop", None, "bad_id")),
        ({"control": 5}, ControlError("?", None, "unknown_control")),
    ],
)
def test_control_frames_are_told_from_lsp_and_checked(
    message: dict[str, object], expected: Control | ControlError | None
) -> None:
    assert parse_control(message) == expected


def test_acks_echo_the_id_and_say_whether_cleanup_was_confirmed() -> None:
    assert json.loads(ack_frame("stop", 7, confirmed=True)) == {
        "ack": "stop",
        "id": 7,
        "ok": True,
        "confirmed": True,
    }
    assert json.loads(ack_frame("attachment-ready", "r")) == {
        "ack": "attachment-ready",
        "id": "r",
        "ok": True,
    }
    error = ControlError("reboot", 1, "unknown_control").ack()
    assert json.loads(error) == {"ack": "reboot", "id": 1, "ok": False, "error": "unknown_control"}


# --- close codes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("upstream", "client"),
    [
        (4001, 4001),
        (4003, 4003),
        (4007, 4007),
        (4008, 4008),
        (4006, 4006),
        (1000, 4006),  # the server exited with status 0 by itself: a confirmed exit
        (1009, 4006),
        (1001, 4002),
        (4009, 4009),
        (1011, 4009),
        (1005, 4009),
        (1006, 4009),
        (None, 4009),
        (4321, 4009),
    ],
)
def test_an_upstream_end_becomes_a_client_close(upstream: int | None, client: int) -> None:
    assert client_close_for_upstream(upstream) == client


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        (ReleaseReason.RUNTIME_STOP, 4002),
        (ReleaseReason.BACKEND_STOP, 1001),
        (ReleaseReason.STOP, 1000),
        (ReleaseReason.EDITOR_IDLE, 1000),
    ],
)
def test_a_lease_end_becomes_a_client_close(reason: ReleaseReason, code: int) -> None:
    assert client_close_for_lease_end(reason) == code


def test_a_server_exit_uses_the_upstream_code() -> None:
    assert client_close_for_lease_end(ReleaseReason.SERVER_EXIT, 4006) == 4006
    assert client_close_for_lease_end(ReleaseReason.SERVER_EXIT, 1006) == 4009


@pytest.mark.parametrize(
    ("upstream", "forwarded"),
    [
        (1000, 1000),
        (1001, 1001),
        (4006, 4006),
        (4009, 4009),
        (1005, 4009),
        (1006, 4009),
        (1015, 4009),
        (None, 4009),
    ],
)
def test_the_proxy_forwards_codes_but_never_reserved_ones(upstream: int | None, forwarded: int) -> None:
    assert proxy_close_for_upstream(upstream) == forwarded


def test_every_code_has_a_short_reason() -> None:
    assert set(CLOSE_REASONS) == set(BrokerCloseCode)
    assert all(len(reason.encode()) <= 123 for reason in CLOSE_REASONS.values())  # a close frame's limit


# --- authorizer and switches -------------------------------------------------------------------------


def test_the_bearer_authorizer_checks_the_token() -> None:
    authorizer = BearerAuthorizer(StreamToken("t" * 24), owner="me")

    def ask(headers: dict[str, str]) -> Caller | None:
        return asyncio.run(authorizer.authorize(CallerRequest("s1", headers)))

    # whoever holds the token is the embedder's backend: it may mint page tickets for any owner
    assert ask({"authorization": "Bearer " + "t" * 24}) == Caller("me", names_owners=True)
    assert ask({"authorization": "bearer " + "t" * 24}) == Caller("me", names_owners=True)
    assert ask({"authorization": "Bearer " + "t" * 23}) is None
    assert ask({}) is None


def test_the_broker_token_comes_from_its_own_variable() -> None:
    assert load_broker_token(
        environ={"KANDEV_LSP_BROKER_TOKEN": "b" * 20, "KANDEV_LSP_TOKEN": "s" * 20}
    ).value == ("b" * 20)
    assert load_broker_token(environ={"KANDEV_LSP_TOKEN": "s" * 20}).generated
    with pytest.raises(TokenError, match=r"\$KANDEV_LSP_BROKER_TOKEN"):
        load_broker_token(environ={"KANDEV_LSP_BROKER_TOKEN": "short"})


@pytest.mark.parametrize(
    ("value", "cap"),
    [(None, 8), ("", 8), ("3", 3), (" 12 ", 12), ("0", 8), ("-2", 8), ("eight", 8), ("2.5", 8), ("1", 1)],
)
def test_max_connections_defaults_to_8_for_invalid_values(value: str | None, cap: int) -> None:
    environ = {} if value is None else {"KANDEV_LSP_MAX_CONNECTIONS": value}
    assert max_connections(environ) == cap


@pytest.mark.parametrize(
    ("value", "enabled"),
    [(None, False), ("", False), ("0", False), ("false", False), ("1", True), ("TRUE", True), ("on", True)],
)
def test_continuity_is_off_unless_turned_on(value: str | None, enabled: bool) -> None:
    environ = {} if value is None else {"KANDEV_FEATURES_LSP_BROWSER_CONTINUITY": value}
    assert continuity_enabled(environ) is enabled
