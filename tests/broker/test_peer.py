"""The lease's LSP side as plain values: initialize retention and generic resume, request mapping,
server requests answered while detached, documents and diagnostics across detach/reattach, stop
(K6.1, K14, K15, K16.2, K17)."""

from __future__ import annotations

from typing import Any

from kandev_lsp.broker.peer import INITIALIZE_TOKEN, LeasePeer
from kandev_lsp.broker.requests import RequestBounds
from leasekit import FakeClock

URI = "file:///work/task/main.go"
RESULT = {
    "capabilities": {"hoverProvider": True, "positionEncoding": "utf-8"},
    "serverInfo": {"name": "gopls"},
}


def _request(number: int | str, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": number, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _notification(method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def _result(number: int | str, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": number, "result": result}


def _initialized_peer(**options: Any) -> tuple[LeasePeer, FakeClock]:
    clock = FakeClock()
    peer = LeasePeer(clock=clock, **options)
    peer.attach(1)
    out = peer.from_client(_request(1, "initialize", {"rootUri": "file:///work/task", "capabilities": {}}))
    [sent] = out.to_server
    peer.from_server(_result(sent["id"], RESULT))
    peer.from_client(_notification("initialized", {}))
    return peer, clock


# --- initialize and resume -----------------------------------------------------------------------------


def test_the_first_initialize_is_forwarded_with_a_progress_token_and_its_result_retained() -> None:
    clock = FakeClock()
    peer = LeasePeer(clock=clock)
    peer.attach(1)
    out = peer.from_client(_request("c1", "initialize", {"rootUri": "file:///w", "capabilities": {}}))
    [sent] = out.to_server
    assert sent["method"] == "initialize" and sent["id"] != "c1"
    assert sent["params"]["workDoneToken"] == INITIALIZE_TOKEN  # injected (K6.1)
    assert sent["params"]["capabilities"] == {"window": {"workDoneProgress": True}}
    assert peer.initialize_sent_at == clock.now
    begin = {"token": INITIALIZE_TOKEN, "value": {"kind": "begin", "title": "Loading packages"}}
    assert peer.from_server(_notification("$/progress", begin)).to_client  # tracked and shown
    assert peer.progress_snapshot().active[0].title == "Loading packages"
    answer = peer.from_server(_result(sent["id"], RESULT))
    assert answer.to_client == [_result("c1", RESULT)]
    assert peer.capabilities == RESULT["capabilities"] and peer.position_encoding == "utf-8"
    assert peer.from_client(_notification("initialized", {})).to_server == [_notification("initialized", {})]


def test_a_client_token_is_kept() -> None:
    peer = LeasePeer(clock=FakeClock())
    peer.attach(1)
    capabilities = {"window": {"workDoneProgress": False}}
    out = peer.from_client(_request(1, "initialize", {"workDoneToken": 42, "capabilities": capabilities}))
    assert out.to_server[0]["params"]["workDoneToken"] == 42
    assert out.to_server[0]["params"]["capabilities"] == capabilities  # an explicit value is the client's
    assert peer.progress.is_known(42)


def test_a_generic_client_resumes_without_a_second_initialize_reaching_the_server() -> None:
    peer, _ = _initialized_peer()
    peer.detach()
    peer.attach(2)
    assert peer.resumed
    out = peer.from_client(_request(7, "initialize", {"capabilities": {}}))
    assert out.to_server == [] and out.to_client == [_result(7, RESULT)]
    assert peer.from_client(_notification("initialized", {})).to_server == []  # swallowed


def test_a_client_resuming_while_the_first_initialize_is_pending_gets_its_answer() -> None:
    peer = LeasePeer(clock=FakeClock())
    peer.attach(1)
    [sent] = peer.from_client(_request(1, "initialize", {"capabilities": {}})).to_server
    peer.detach()  # the first tab reloads before the server answered
    peer.attach(2)
    assert peer.from_client(_request("again", "initialize", {"capabilities": {}})).to_server == []
    answer = peer.from_server(_result(sent["id"], RESULT))
    assert answer.to_client == [_result("again", RESULT)]
    # The first tab, which began the handshake, is gone: the broker finishes it with the answer (item 3),
    # and the resuming client's own `initialized` is swallowed (the server gets it once, K17.4).
    assert answer.to_server == [_notification("initialized", {})]
    assert not answer.initialize_outcome  # this client asked and got the answer itself
    assert peer.from_client(_notification("initialized", {})).to_server == []
    assert peer.handshake_complete


def test_a_handshake_its_client_left_is_finished_by_the_broker() -> None:
    """Issue 18 item 3: a page that reloads between `initialize` and `initialized` must not leave a server
    that never hears `initialized` (it holds diagnostics and answers until it does)."""
    # Left before the answer: `initialized` follows the answer at once, and the resumed client (told
    # capabilities: null in its ready frame) is told the outcome (item 4).
    peer = LeasePeer(clock=FakeClock())
    peer.attach(1)
    [sent] = peer.from_client(_request(1, "initialize", {"capabilities": {}})).to_server
    assert peer.detach().to_server == []  # nothing to finish yet
    peer.attach(2)
    assert peer.resumed and not peer.handshake_complete and peer.capabilities is None
    answer = peer.from_server(_result(sent["id"], RESULT))
    assert answer.to_server == [_notification("initialized", {})]
    assert answer.to_client == [] and answer.initialize_outcome
    assert peer.handshake_complete and peer.capabilities == RESULT["capabilities"]
    # Left after the answer, before its `initialized`: the detach sends it.
    peer = LeasePeer(clock=FakeClock())
    peer.attach(1)
    [sent] = peer.from_client(_request(1, "initialize", {"capabilities": {}})).to_server
    assert peer.from_server(_result(sent["id"], RESULT)).to_server == []  # its client is still there
    assert not peer.handshake_complete  # answered is not initialized
    assert _notification("initialized", {}) in peer.detach().to_server
    assert peer.handshake_complete
    peer.attach(2)
    assert peer.from_client(_notification("initialized", {})).to_server == []  # once per lease
    # A client that stays sends its own, as always.
    peer, _ = _initialized_peer()
    assert peer.handshake_complete
    assert _notification("initialized", {}) not in peer.detach().to_server


def test_an_initialize_error_is_what_later_clients_get_too() -> None:
    peer = LeasePeer(clock=FakeClock())
    peer.attach(1)
    [sent] = peer.from_client(_request(1, "initialize", {})).to_server
    error = {"jsonrpc": "2.0", "id": sent["id"], "error": {"code": -32603, "message": "no go.mod"}}
    assert peer.from_server(error).to_client[0]["error"]["message"] == "no go.mod"
    peer.detach()
    peer.attach(2)
    assert peer.from_client(_request(3, "initialize", {})).to_client[0]["error"]["message"] == "no go.mod"


def test_a_second_initialize_on_one_connection_is_an_error() -> None:
    peer, _ = _initialized_peer()
    out = peer.from_client(_request(9, "initialize", {}))
    assert out.to_server == [] and out.to_client[0]["error"]["code"] == -32600


def test_shutdown_is_answered_by_the_broker_and_exit_detaches_the_client() -> None:
    peer, _ = _initialized_peer()
    out = peer.from_client(_request(5, "shutdown"))
    assert out.to_server == [] and out.to_client == [_result(5, None)]
    out = peer.from_client(_notification("exit"))
    assert out.client_exit and out.to_server == []


# --- requests ------------------------------------------------------------------------------------------


def test_requests_are_mapped_both_ways_and_a_detach_cancels_them_and_drops_late_replies() -> None:
    peer, _ = _initialized_peer()
    [hover] = peer.from_client(_request(3, "textDocument/hover", {"x": 1})).to_server
    [refs] = peer.from_client(_request(4, "textDocument/references", {})).to_server
    assert hover["params"] == {"x": 1}
    assert peer.from_server(_result(hover["id"], {"contents": "doc"})).to_client == [
        _result(3, {"contents": "doc"})
    ]
    cancel = peer.from_client(_notification("$/cancelRequest", {"id": 4})).to_server
    assert cancel == [_notification("$/cancelRequest", {"id": refs["id"]})]
    out = peer.detach()
    assert _notification("$/cancelRequest", {"id": refs["id"]}) in out.to_server
    peer.attach(2)
    assert peer.from_server(_result(refs["id"], [])).to_client == []  # late: dropped (K15.8)


def test_a_request_over_a_bound_is_refused_and_not_forwarded() -> None:
    peer, _ = _initialized_peer(bounds=RequestBounds(max_pending=1))
    peer.from_client(_request(1, "a"))
    out = peer.from_client(_request(2, "b"))
    assert out.to_server == [] and out.to_client[0]["error"]["code"] == -32803


def test_a_request_past_its_timeout_is_cancelled_and_answered_with_an_error() -> None:
    peer, clock = _initialized_peer()
    [sent] = peer.from_client(_request("slow", "workspace/symbol", {"query": ""})).to_server
    clock.advance(30)
    out = peer.expire()
    assert out.to_server == [_notification("$/cancelRequest", {"id": sent["id"]})]
    assert out.to_client[0]["id"] == "slow" and out.to_client[0]["error"]["code"] == -32803


# --- server requests -------------------------------------------------------------------------------


def test_server_requests_are_answered_while_detached_so_the_server_never_waits() -> None:
    peer, _ = _initialized_peer(configuration=lambda params: [{"ui.semanticTokens": True}])
    peer.detach()
    cases = [
        (_request("s1", "window/workDoneProgress/create", {"token": "t1"}), None),
        (_request("s2", "client/registerCapability", {"registrations": [{"id": "r1", "method": "m"}]}), None),
        (
            _request("s3", "workspace/configuration", {"items": [{"section": "gopls"}]}),
            [{"ui.semanticTokens": True}],
        ),
        (_request("s4", "workspace/workspaceFolders"), [{"uri": "file:///work/task", "name": "task"}]),
        (_request("s5", "workspace/semanticTokens/refresh"), None),
        (_request("s6", "window/showMessageRequest", {"message": "reload?"}), None),
        (
            _request("s7", "workspace/applyEdit", {"edit": {}}),
            {"applied": False, "failureReason": "no editor is attached"},
        ),
    ]
    for message, expected in cases:
        out = peer.from_server(message)
        assert out.to_server == [_result(message["id"], expected)], message["method"]
        assert out.to_client == []
    assert peer.progress.is_known("t1")
    assert [registration.id for registration in peer.effective_registrations()] == ["r1"]
    unknown = peer.from_server(_request("s8", "custom/thing"))
    assert unknown.to_server[0]["error"]["code"] == -32601


def test_registrations_are_applied_and_shown_to_an_attached_client_whose_reply_is_dropped() -> None:
    peer, _ = _initialized_peer()
    out = peer.from_server(
        _request(11, "client/registerCapability", {"registrations": [{"id": "r", "method": "m"}]})
    )
    assert out.to_server == [_result(11, None)]
    [shown] = out.to_client
    assert shown["method"] == "client/registerCapability" and shown["id"] != 11
    assert peer.from_client(_result(shown["id"], None)).to_server == []
    peer.from_server(
        _request(12, "client/unregisterCapability", {"unregisterations": [{"id": "r", "method": "m"}]})
    )
    assert peer.effective_registrations() == ()


def test_a_request_only_a_client_can_answer_goes_to_it_and_is_answered_for_it_when_it_leaves() -> None:
    peer, _ = _initialized_peer()
    message = _request(21, "window/showMessageRequest", {"message": "?", "actions": [{"title": "Yes"}]})
    out = peer.from_server(message)
    assert out.to_client == [message] and out.to_server == []
    assert peer.from_client(_result(21, {"title": "Yes"})).to_server == [_result(21, {"title": "Yes"})]
    peer.from_server(_request(22, "workspace/applyEdit", {"edit": {}}))
    left = peer.detach()
    assert _result(22, {"applied": False, "failureReason": "no editor is attached"}) in left.to_server


# --- documents and diagnostics -------------------------------------------------------------------------


def _open(peer: LeasePeer, version: int = 1) -> dict[str, Any]:
    params = {"textDocument": {"uri": URI, "languageId": "go", "version": version, "text": "package main"}}
    [sent] = peer.from_client(_notification("textDocument/didOpen", params)).to_server
    return sent


def _diagnostics(version: int | None) -> dict[str, Any]:
    params: dict[str, Any] = {"uri": URI, "diagnostics": [{"message": "unused"}]}
    if version is not None:
        params["version"] = version
    return _notification("textDocument/publishDiagnostics", params)


def test_server_facing_versions_increase_for_the_lease_whatever_the_clients_send() -> None:
    peer, _ = _initialized_peer()
    assert _open(peer, version=7)["params"]["textDocument"]["version"] == 1
    change = {"textDocument": {"uri": URI, "version": 8}, "contentChanges": [{"text": "package x"}]}
    [sent] = peer.from_client(_notification("textDocument/didChange", change)).to_server
    assert sent["params"]["textDocument"]["version"] == 2 and sent["params"]["contentChanges"] == [
        {"text": "package x"}
    ]
    out = peer.detach()
    assert _notification("textDocument/didClose", {"textDocument": {"uri": URI}}) in out.to_server
    peer.attach(2)
    assert _open(peer, version=1)["params"]["textDocument"]["version"] == 3  # the reloaded tab starts at 1


def test_a_change_to_a_document_the_server_never_saw_open_is_dropped() -> None:
    peer, _ = _initialized_peer()
    change = {"textDocument": {"uri": URI, "version": 2}, "contentChanges": []}
    assert peer.from_client(_notification("textDocument/didChange", change)).to_server == []


def test_a_fresh_lease_shows_every_publication() -> None:
    peer, _ = _initialized_peer()
    assert peer.from_server(_diagnostics(None)).to_client == [_diagnostics(None)]


def test_a_resumed_lease_shows_only_publications_for_the_current_version_after_sync() -> None:
    peer, _ = _initialized_peer()
    _open(peer)
    peer.detach()
    assert peer.from_server(_diagnostics(1)).to_client == []  # nobody attached
    peer.attach(2)
    version = _open(peer)["params"]["textDocument"]["version"]
    assert peer.from_server(_diagnostics(version)).to_client == []  # not in sync yet
    peer.attachment_ready()
    assert peer.from_server(_diagnostics(version - 1)).to_client == []  # an older text
    assert peer.from_server(_diagnostics(None)).to_client == []  # unversioned: hidden (K17.8)
    # shown, in the client's own numbering: it reopened at 1, the server has 2 (item 5)
    assert version == 2
    assert peer.from_server(_diagnostics(version)).to_client == [_diagnostics(1)]
    peer.from_client(_notification("textDocument/didClose", {"textDocument": {"uri": URI}}))
    assert peer.from_server(_diagnostics(version)).to_client == []  # closed: dropped


def test_diagnostics_carry_the_clients_own_versions() -> None:
    """Issue 18 item 5: a client that drops diagnostics for versions it never had keeps these."""
    peer, _ = _initialized_peer()
    assert _open(peer, version=7)["params"]["textDocument"]["version"] == 1
    assert peer.from_server(_diagnostics(1)).to_client == [_diagnostics(7)]
    for client_version in (8, 9):
        change = {"textDocument": {"uri": URI, "version": client_version}, "contentChanges": [{"text": "x"}]}
        peer.from_client(_notification("textDocument/didChange", change))
    assert peer.from_server(_diagnostics(3)).to_client == [_diagnostics(9)]
    assert peer.from_server(_diagnostics(None)).to_client == [_diagnostics(None)]
    peer.detach()
    peer.attach(2)  # a reload: the page starts over at 1, the server is at 4
    assert _open(peer, version=1)["params"]["textDocument"]["version"] == 4
    peer.attachment_ready()
    assert peer.from_server(_diagnostics(4)).to_client == [_diagnostics(1)]
    change = {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": "y"}]}
    assert (
        peer.from_client(_notification("textDocument/didChange", change)).to_server[0]["params"][
            "textDocument"
        ]["version"]
        == 5
    )
    assert peer.from_server(_diagnostics(5)).to_client == [_diagnostics(2)]


def test_detach_clears_diagnostics() -> None:
    peer, _ = _initialized_peer()
    _open(peer)
    peer.from_server(_diagnostics(1))
    assert len(peer.diagnostics) == 1
    peer.detach()
    assert len(peer.diagnostics) == 0


# --- stop ----------------------------------------------------------------------------------------------


def test_stop_rejects_outstanding_requests_then_shutdown_then_exit() -> None:
    peer, _ = _initialized_peer()
    [pending] = peer.from_client(_request(8, "textDocument/references", {})).to_server
    out = peer.begin_stop()
    assert out.to_client[0]["id"] == 8 and out.to_client[0]["error"]["code"] == -32800
    assert out.to_server[0] == _notification("$/cancelRequest", {"id": pending["id"]})
    shutdown = out.to_server[-1]
    assert shutdown["method"] == "shutdown" and "params" not in shutdown
    done = peer.from_server(_result(shutdown["id"], None))
    assert done.shutdown_done and done.to_server == [{"jsonrpc": "2.0", "method": "exit"}]
    assert done.to_client == []


def test_a_server_never_initialized_gets_exit_at_once() -> None:
    peer = LeasePeer(clock=FakeClock())
    peer.attach(1)
    out = peer.begin_stop()
    assert out.shutdown_done and out.to_server == [{"jsonrpc": "2.0", "method": "exit"}]


def test_a_registration_beyond_the_state_budget_is_refused_to_the_server() -> None:
    peer, _ = _initialized_peer(state_budget=2048)
    used = peer.state_bytes()
    assert 0 < used < 2048
    small = {"registrations": [{"id": "r1", "method": "workspace/didChangeWatchedFiles"}]}
    assert peer.from_server(_request(1, "client/registerCapability", small)).to_server == [_result(1, None)]
    big = {"registrations": [{"id": "r2", "method": "m", "registerOptions": {"globs": ["x" * 4096]}}]}
    out = peer.from_server(_request(2, "client/registerCapability", big))
    assert (
        out.to_server[0]["error"]["code"] == -32803 and "2048 bytes" in out.to_server[0]["error"]["message"]
    )
    assert out.to_client == []
    assert [registration.id for registration in peer.effective_registrations()] == ["r1"]
    assert peer.state_bytes() <= 2048


def test_the_state_budget_counts_progress_counters_versions_and_diagnostics() -> None:
    """K14.5 (issue 18 item 11): everything the lease keeps is counted, not only initialize and the
    registrations."""
    peer, _ = _initialized_peer()
    base = peer.state_bytes()
    peer.from_server(_request("c", "window/workDoneProgress/create", {"token": "t"}))
    begin = {"token": "t", "value": {"kind": "begin", "title": "Indexing " + "x" * 500}}
    peer.from_server(_notification("$/progress", begin))
    with_progress = peer.state_bytes()
    assert with_progress >= base + 500
    _open(peer)  # a counter for the URI, the client's version
    with_document = peer.state_bytes()
    assert with_document >= with_progress + len(URI) + 8 + 16
    peer.from_server(_diagnostics(1))
    assert peer.state_bytes() > with_document  # the held diagnostics
    peer.detach()
    assert peer.state_bytes() < with_document  # cleared with the attachment; the counter stays


def test_an_initialize_result_beyond_the_budget_is_refused_and_not_kept() -> None:
    peer = LeasePeer(clock=FakeClock(), state_budget=4096)
    peer.attach(1)
    [sent] = peer.from_client(_request(1, "initialize", {"capabilities": {}})).to_server
    huge = {"capabilities": {"experimental": {"blob": "x" * 8192}}}
    out = peer.from_server(_result(sent["id"], huge))
    [answer] = out.to_client
    assert answer["id"] == 1 and answer["error"]["code"] == -32803
    assert "initialize result is" in answer["error"]["message"] and "4096 bytes" in answer["error"]["message"]
    assert peer.initialize_result is None and peer.state_bytes() < 4096
    assert peer.initialize_error is not None  # what a resumed client is told too
    peer.detach()
    peer.attach(2)
    assert peer.from_client(_request(3, "initialize", {})).to_client[0]["error"]["code"] == -32803


def test_an_initialize_result_holding_a_lone_surrogate_is_counted_against_the_budget() -> None:
    """A lone surrogate (a JSON escape the server may write) made the size count raise, and the count
    was 0: such a result, however big, passed the budget (K14.5)."""
    peer = LeasePeer(clock=FakeClock(), state_budget=4096)
    peer.attach(1)
    [sent] = peer.from_client(_request(1, "initialize", {"capabilities": {}})).to_server
    huge = {"capabilities": {"experimental": {"blob": "\ud800" + "x" * 8192}}}
    [answer] = peer.from_server(_result(sent["id"], huge)).to_client
    assert answer["error"]["code"] == -32803 and peer.initialize_result is None


def test_the_progress_a_reattaching_client_gets_is_in_elapsed_milliseconds() -> None:
    peer, clock = _initialized_peer()
    peer.from_server(_request("c", "window/workDoneProgress/create", {"token": "t"}))
    peer.from_server(
        _notification(
            "$/progress", {"token": "t", "value": {"kind": "begin", "title": "Index", "percentage": 150}}
        )
    )
    clock.advance(1.25)
    assert peer.progress_for_client() == {
        "active": [{"token": "t", "title": "Index", "message": None, "percentage": 100, "elapsedMs": 1250}],
        "lastEnded": None,
        "seenAny": True,
    }
    peer.from_server(_notification("$/progress", {"token": "t", "value": {"kind": "end", "message": "done"}}))
    assert peer.progress_for_client()["lastEnded"] == {"token": "t", "title": "Index", "message": "done"}
