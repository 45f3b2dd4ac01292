"""TransactionStore: unguessable, expiring, single-use, bounded ids for previewed mutations (B2.4, B3.6)."""

from __future__ import annotations

from typing import Any

import pytest
from kandev_lsp.intel.edits.transactions import PendingMutation, TransactionError, TransactionStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _pending(tool: str = "code_rename") -> PendingMutation:
    plan: Any = object()  # the store never looks inside the plan
    return PendingMutation(tool=tool, plan=plan, digests={"/w/a.py": "00"}, bound={"file:///w/a.py": 3})


def test_put_then_take_returns_the_pending_mutation_once() -> None:
    store = TransactionStore()
    pending = _pending()
    transaction_id = store.put(pending)
    assert len(transaction_id) >= 32  # 24 random bytes, url-safe
    assert store.take(transaction_id) is pending
    assert len(store) == 0


def test_ids_are_distinct_and_not_sequential() -> None:
    store = TransactionStore(max_pending=500)
    ids = {store.put(_pending()) for _ in range(200)}
    assert len(ids) == 200


@pytest.mark.parametrize(
    ("outcome", "words"),
    [
        ("applied", "already applied"),
        ("declined", "already declined"),
        ("conflict", "found a conflict"),
        (None, "already taken"),
    ],
)
def test_a_replayed_id_fails_and_says_what_became_of_it(outcome: str | None, words: str) -> None:
    store = TransactionStore()
    transaction_id = store.put(_pending())
    store.take(transaction_id)
    if outcome is not None:
        store.settle(transaction_id, outcome)
    with pytest.raises(TransactionError) as caught:
        store.take(transaction_id)
    assert caught.value.reason == "used"
    assert words in caught.value.message and "Nothing more was applied" in caught.value.message
    assert caught.value.to_result()["ok"] is False


def test_an_expired_id_fails_even_though_it_was_never_used() -> None:
    clock = Clock()
    store = TransactionStore(ttl=300, clock=clock)
    transaction_id = store.put(_pending())
    clock.now += 299
    assert store.peek(transaction_id) is not None
    clock.now += 2
    assert store.peek(transaction_id) is None
    with pytest.raises(TransactionError) as caught:
        store.take(transaction_id)
    assert caught.value.reason == "expired" and "expired" in caught.value.message
    assert "run the mutation again" in caught.value.message
    with pytest.raises(TransactionError) as again:  # and it stays expired, never "unknown"
        store.take(transaction_id)
    assert again.value.reason == "expired"


def test_expired_ids_are_purged_when_new_ones_come() -> None:
    clock = Clock()
    store = TransactionStore(ttl=10, clock=clock)
    old = store.put(_pending())
    clock.now += 11
    store.put(_pending())
    assert len(store) == 1
    with pytest.raises(TransactionError) as caught:
        store.take(old)
    assert caught.value.reason == "expired"


def test_unknown_ids_fail_without_echoing_the_whole_id() -> None:
    store = TransactionStore()
    forged = "x" * 200
    with pytest.raises(TransactionError) as caught:
        store.take(forged)
    assert caught.value.reason == "unknown"
    assert forged not in caught.value.message


def test_the_store_is_bounded_and_says_an_id_was_dropped() -> None:
    store = TransactionStore(max_pending=2)
    first = store.put(_pending("a"))
    store.put(_pending("b"))
    third = store.put(_pending("c"))
    assert len(store) == 2
    with pytest.raises(TransactionError) as caught:
        store.take(first)
    assert caught.value.reason == "dropped"
    assert store.take(third).tool == "c"


def test_replay_memory_is_bounded() -> None:
    store = TransactionStore(max_finished=2)
    ids = [store.put(_pending()) for _ in range(3)]
    for transaction_id in ids:
        store.take(transaction_id)
    with pytest.raises(TransactionError) as caught:
        store.take(ids[0])
    assert caught.value.reason == "unknown"  # forgotten: still refused, nothing applied
    with pytest.raises(TransactionError) as recent:
        store.take(ids[2])
    assert recent.value.reason == "used"
