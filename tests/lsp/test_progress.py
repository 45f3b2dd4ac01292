"""Work-done progress tracker: K6.1-K6.8 as a table, and properties over random notification sequences."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kandev_lsp.lsp.progress import ProgressTracker


def begin(token: Any, title: str = "Indexing", **extra: Any) -> dict[str, Any]:
    return {"token": token, "value": {"kind": "begin", "title": title, **extra}}


def report(token: Any, **extra: Any) -> dict[str, Any]:
    return {"token": token, "value": {"kind": "report", **extra}}


def end(token: Any, **extra: Any) -> dict[str, Any]:
    return {"token": token, "value": {"kind": "end", **extra}}


def test_string_and_number_tokens_are_tracked_booleans_are_not() -> None:
    tracker = ProgressTracker()
    assert tracker.accept("a") and tracker.accept(7)
    assert not tracker.accept(True) and not tracker.accept(None) and not tracker.accept(1.5)
    assert tracker.on_progress(begin("a"), 1.0) and tracker.on_progress(begin(7, "Loading"), 2.0)
    assert [item.token for item in tracker.active] == ["a", 7]
    assert not tracker.on_progress(begin(True), 3.0)


def test_unknown_tokens_are_ignored_and_the_initialize_token_is_accepted() -> None:
    tracker = ProgressTracker()
    assert not tracker.on_progress(begin("never-created"), 1.0)
    assert tracker.snapshot().active == () and not tracker.snapshot().seen_any
    tracker.accept("init-token")  # the client's initialize workDoneToken
    assert tracker.on_progress(begin("init-token"), 1.0)


@pytest.mark.parametrize(
    ("steps", "expected_percentage", "expected_message"),
    [
        ([begin("t", percentage=10)], 10, None),
        ([begin("t", percentage=10), report("t", message="half")], 10, "half"),  # omitted % kept (K6.5)
        ([begin("t", percentage=10), report("t", percentage=60)], 60, None),
        ([begin("t", message="m"), report("t", percentage=5)], 5, "m"),  # omitted message kept
        ([begin("t", percentage=-5)], 0, None),  # clamped (K6.7)
        ([begin("t", percentage=250)], 100, None),
        ([begin("t", percentage=40), report("t", percentage=101.5)], 100, None),
        ([begin("t", percentage="40")], None, None),  # malformed: no percentage
        ([begin("t", percentage=30), report("t", percentage=True)], 30, None),
    ],
)
def test_begin_and_report(
    steps: list[dict[str, Any]], expected_percentage: int | None, expected_message: str | None
) -> None:
    tracker = ProgressTracker()
    tracker.accept("t")
    for number, params in enumerate(steps):
        tracker.on_progress(params, float(number))
    (item,) = tracker.active
    assert (item.percentage, item.message) == (expected_percentage, expected_message)


def test_report_and_end_touch_only_the_matching_active_item() -> None:
    tracker = ProgressTracker()
    for token in ("a", "b"):
        tracker.accept(token)
        tracker.on_progress(begin(token, title=token.upper(), percentage=1), 0.0)
    assert tracker.on_progress(report("b", percentage=50), 1.0)
    assert [item.percentage for item in tracker.active] == [1, 50]
    assert tracker.on_progress(end("a", message="done A"), 2.0)
    snapshot = tracker.snapshot()
    assert [item.token for item in snapshot.active] == ["b"]
    assert snapshot.last_ended is not None
    assert (snapshot.last_ended.title, snapshot.last_ended.message) == ("A", "done A")
    assert not tracker.on_progress(end("a"), 3.0)  # ended: its token is used up
    assert not tracker.on_progress(report("a", percentage=9), 3.0)


def test_begin_replaces_an_item_with_the_same_token_and_it_becomes_the_newest() -> None:
    tracker = ProgressTracker()
    for token in ("a", "b"):
        tracker.accept(token)
        tracker.on_progress(begin(token, title=token), 0.0)
    tracker.on_progress(begin("a", title="again"), 5.0)
    assert [(item.token, item.title, item.started_at) for item in tracker.active] == [
        ("b", "b", 0.0),
        ("a", "again", 5.0),
    ]


@pytest.mark.parametrize(
    "params",
    [
        None,
        [],
        {"token": "t"},
        {"token": "t", "value": "begin"},
        {"token": "t", "value": {"kind": "begin"}},  # no title
        {"token": "t", "value": {"kind": "begin", "title": 3}},
        {"token": "t", "value": {"kind": "pause"}},
        {"value": {"kind": "begin", "title": "x"}},
    ],
)
def test_malformed_payloads_are_ignored_and_valid_items_kept(params: Any) -> None:
    tracker = ProgressTracker()
    tracker.accept("t")
    tracker.accept("ok")
    tracker.on_progress(begin("ok"), 0.0)
    before = tracker.snapshot()
    assert not tracker.on_progress(params, 1.0)
    assert tracker.snapshot() == before


def test_a_new_generation_starts_empty_and_late_notifications_are_ignored() -> None:
    tracker = ProgressTracker(generation=1)
    tracker.accept("t")
    tracker.on_progress(begin("t"), 0.0)
    tracker.reset(2)
    snapshot = tracker.snapshot()
    assert (snapshot.generation, snapshot.active, snapshot.last_ended, snapshot.seen_any) == (
        2,
        (),
        None,
        False,
    )
    assert not tracker.accept("u", generation=1)  # a create from the replaced server
    tracker.accept("u")
    assert not tracker.on_progress(begin("u"), 1.0, generation=1)
    assert tracker.on_progress(begin("u"), 1.0, generation=2)


def test_snapshot_value() -> None:
    tracker = ProgressTracker()
    tracker.accept(1)
    tracker.on_progress(begin(1, percentage=20, message="m"), 1.0)
    assert tracker.snapshot().to_json() == {
        "generation": 1,
        "active": [
            {
                "token": 1,
                "title": "Indexing",
                "message": "m",
                "percentage": 20,
                "startedAt": 1.0,
                "updatedAt": 1.0,
            }
        ],
        "lastEnded": None,
        "seenAny": True,
        "endedCount": 0,
    }
    assert tracker.snapshot().primary is not None


tokens = st.one_of(st.sampled_from(["a", "b", "c"]), st.integers(0, 2))
values = st.one_of(
    st.fixed_dictionaries(
        {"kind": st.just("begin"), "title": st.sampled_from(["T1", "T2"])},
        optional={"percentage": st.integers(-50, 150)},
    ),
    st.fixed_dictionaries(
        {"kind": st.just("report")},
        optional={"percentage": st.floats(-1e3, 1e3), "message": st.text(max_size=3)},
    ),
    st.fixed_dictionaries({"kind": st.just("end")}, optional={"message": st.text(max_size=3)}),
    st.just({"kind": "bogus"}),
    st.none(),
)
events = st.lists(
    st.one_of(
        st.tuples(st.just("create"), tokens),
        st.tuples(st.just("progress"), st.fixed_dictionaries({"token": tokens, "value": values})),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(events)
def test_invariants_over_any_sequence(sequence: list[tuple[str, Any]]) -> None:
    tracker = ProgressTracker()
    created: set[Any] = set()
    ended = 0
    for now, (kind, payload) in enumerate(sequence):
        if kind == "create":
            tracker.accept(payload)
            created.add(payload)
            continue
        before = {item.token for item in tracker.active}
        changed = tracker.on_progress(payload, float(now))
        value = payload["value"]
        if payload["token"] not in created:
            assert not changed  # unknown tokens never change anything
        if changed and isinstance(value, dict) and value.get("kind") == "end":
            ended += 1
            assert payload["token"] in before and payload["token"] not in {i.token for i in tracker.active}
            created.discard(payload["token"])
        snapshot = tracker.snapshot()
        assert snapshot.ended_count == ended
        for item in snapshot.active:
            assert item.percentage is None or 0 <= item.percentage <= 100
        starts = [item.started_at for item in snapshot.active]
        assert starts == sorted(starts)  # oldest first
        assert len({item.token for item in snapshot.active}) == len(snapshot.active)


def test_a_created_token_is_awaited_until_it_begins() -> None:
    """pyright creates a token right after publishing a file it has only bound and begins it once the
    create is answered: until then the created token is the only sign of its work (a trial's stale
    ``current``). A token the client offered in initialize was not created by the server: not awaited."""
    tracker = ProgressTracker()
    assert tracker.accept("offered") and tracker.created_not_begun == ()
    assert tracker.accept("t", created_at=2.0) and tracker.created_not_begun == (2.0,)
    tracker.on_progress({"token": "t", "value": {"kind": "begin", "title": ""}}, 2.5)
    assert tracker.created_not_begun == () and [item.token for item in tracker.active] == ["t"]
    for n in range(70):  # a server that creates tokens and never begins them is remembered boundedly
        tracker.accept(n, created_at=float(n))
    assert len(tracker.created_not_begun) == 64 and min(tracker.created_not_begun) == 6.0
    tracker.reset(2)
    assert tracker.created_not_begun == ()
