"""Request id mapping and the lease's bounds (K15.1-K15.8), as plain values."""

from __future__ import annotations

import pytest
from kandev_lsp.broker.requests import (
    Forward,
    Refuse,
    RequestBounds,
    RequestMap,
    cancel_notification,
    id_size,
    with_id,
)
from kandev_lsp.protocol.jsonrpc import ErrorCode, RequestId
from leasekit import FakeClock


def _map(**bounds: float) -> tuple[RequestMap, FakeClock]:
    clock = FakeClock()
    return RequestMap(RequestBounds(**bounds), clock=clock), clock  # type: ignore[arg-type]


def _forwarded(result: Forward | Refuse) -> int:
    assert isinstance(result, Forward), result
    return result.server_id


def _refusal(result: Forward | Refuse) -> dict[str, object]:
    assert isinstance(result, Refuse), result
    error = result.error["error"]
    assert isinstance(error, dict)
    return error


def test_server_facing_ids_are_fresh_across_generations_and_map_back() -> None:
    requests, _ = _map()
    first = _forwarded(requests.admit(1, 1, "textDocument/hover"))
    second = _forwarded(requests.admit(2, 1, "textDocument/hover"))  # the reloaded tab reuses id 1
    same_text = _forwarded(requests.admit(2, "1", "textDocument/hover"))  # "1" is not 1
    assert len({first, second, same_text}) == 3
    entry = requests.complete(second)
    assert entry is not None and (entry.generation, entry.client_id) == (2, 1)
    assert requests.complete(second) is None  # answered once


@pytest.mark.parametrize(
    ("request_id", "size"),
    [(7, 1), (-12, 3), (10**30, 31), ("", 0), ("abc", 3), ("é", 2), ("€" * 3, 9)],
)
def test_id_size_counts_utf8_bytes_and_digits(request_id: RequestId, size: int) -> None:
    assert id_size(request_id) == size


@pytest.mark.parametrize(
    ("request_id", "accepted"),
    [("x" * 256, True), ("x" * 257, False), ("é" * 128, True), ("é" * 128 + "x", False), (10**255, True)],
)
def test_an_id_over_256_bytes_is_refused_before_forwarding(request_id: RequestId, accepted: bool) -> None:
    requests, _ = _map()
    result = requests.admit(1, request_id, "textDocument/hover")
    assert isinstance(result, Forward) is accepted
    if not accepted:
        error = _refusal(result)
        assert error["code"] == ErrorCode.REQUEST_FAILED and "256" in str(error["message"])
        assert requests.pending == 0 and requests.tracked_bytes == 0


def test_the_257th_pending_request_is_refused_and_an_answer_makes_room() -> None:
    requests, _ = _map()
    ids = [_forwarded(requests.admit(1, n, "a")) for n in range(256)]
    error = _refusal(requests.admit(1, 256, "a"))
    assert error["code"] == ErrorCode.REQUEST_FAILED and "256 requests" in str(error["message"])
    assert requests.pending == 256
    requests.complete(ids[0])
    _forwarded(requests.admit(1, 256, "a"))


def test_tracked_state_over_64_kib_is_refused_before_forwarding() -> None:
    requests, _ = _map()
    method = "m" * 100
    per_entry = 128 + 256 + 100
    fits = (64 * 1024) // per_entry
    for n in range(fits):
        _forwarded(requests.admit(1, f"{n:0>256}", method))
    assert requests.tracked_bytes == fits * per_entry <= 64 * 1024
    error = _refusal(requests.admit(1, f"{fits:0>256}", method))
    assert "65536 bytes" in str(error["message"])
    assert requests.pending == fits < 256  # the byte bound bit first, not the count


def test_a_duplicate_pending_id_in_one_generation_is_refused() -> None:
    requests, _ = _map()
    _forwarded(requests.admit(1, 5, "a"))
    assert _refusal(requests.admit(1, 5, "b"))["code"] == ErrorCode.INVALID_REQUEST
    _forwarded(requests.admit(2, 5, "b"))


def test_a_client_cancel_maps_to_the_server_facing_id_of_its_own_generation() -> None:
    requests, _ = _map()
    server_id = _forwarded(requests.admit(3, "r1", "textDocument/references"))
    assert requests.cancel(3, "r1") == server_id
    assert requests.cancel(2, "r1") is None
    assert requests.cancel(3, "r2") is None
    assert requests.pending == 1  # the server still answers it
    assert cancel_notification(server_id) == {
        "jsonrpc": "2.0",
        "method": "$/cancelRequest",
        "params": {"id": server_id},
    }


def test_a_detach_drops_its_generation_and_late_replies_are_unknown() -> None:
    requests, _ = _map()
    old = [_forwarded(requests.admit(1, n, "a")) for n in range(3)]
    kept = _forwarded(requests.admit(2, 0, "a"))
    ended = requests.end_generation(1)
    assert sorted(entry.server_id for entry in ended) == old
    assert all(requests.complete(server_id) is None for server_id in old)
    assert requests.pending == 1 and requests.complete(kept) is not None
    assert requests.tracked_bytes == 0


def test_after_30_s_a_request_is_cancelled_and_answered_with_an_error() -> None:
    requests, clock = _map()
    first = _forwarded(requests.admit(1, "slow", "workspace/symbol"))
    clock.advance(10)
    second = _forwarded(requests.admit(1, "later", "workspace/symbol"))
    assert requests.next_deadline() == clock.now + 20
    clock.advance(19.9)
    assert requests.expire() == []
    clock.advance(0.1)
    [timed_out] = requests.expire()
    assert timed_out.request.server_id == first
    assert timed_out.cancel == cancel_notification(first)
    assert timed_out.error["id"] == "slow"
    assert timed_out.error["error"]["code"] == ErrorCode.REQUEST_FAILED
    assert "30 s" in timed_out.error["error"]["message"]
    assert requests.complete(first) is None  # its late reply is dropped
    assert requests.next_deadline() == clock.now + 10
    assert requests.complete(second) is not None


def test_reject_all_empties_the_map() -> None:
    requests, _ = _map()
    for n in range(4):
        requests.admit(n % 2, n, "a")
    assert len(requests.reject_all()) == 4
    assert requests.pending == 0 and requests.tracked_bytes == 0


@pytest.mark.parametrize("reply_id", ["1", True, None, 1.5])
def test_a_reply_with_an_id_the_broker_never_sent_is_unknown(reply_id: object) -> None:
    requests, _ = _map()
    _forwarded(requests.admit(1, 1, "a"))
    assert requests.complete(reply_id) is None  # type: ignore[arg-type]
    assert requests.pending == 1


def test_with_id_replaces_only_the_id() -> None:
    message = {"jsonrpc": "2.0", "id": "c1", "method": "m", "params": {"x": 1}}
    assert with_id(message, 9) == {"jsonrpc": "2.0", "id": 9, "method": "m", "params": {"x": 1}}
    assert message["id"] == "c1"
