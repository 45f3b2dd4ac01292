"""Lease rules as plain values: admission, capacity, deadlines, endings, reclaim fences (K12, K13, K19.5)."""

from __future__ import annotations

import pytest
from kandev_lsp.broker.leases import (
    Acknowledge,
    Admission,
    ArmDeadline,
    CancelDeadline,
    ClaimPolicy,
    CloseUpstream,
    ControlKind,
    EndAttachment,
    LeaseBook,
    LeaseConfig,
    Outcome,
    Phase,
    RejectWaiting,
    ReleaseReason,
    StartUpstream,
    Transition,
)
from leasekit import FakeClock, make_book, of_type


def _created(book: LeaseBook, execution: str = "e1", language: str = "python") -> Admission:
    admission = book.admit(execution, language)
    assert admission.outcome is Outcome.CREATED
    return admission


def _detached(book: LeaseBook, clock: FakeClock, execution: str = "e1", language: str = "python") -> str:
    admission = _created(book, execution, language)
    assert admission.lease_id is not None
    book.detach(admission.lease_id, admission.generation)
    clock.advance(1)
    return admission.lease_id


# --- admission ---------------------------------------------------------------------------------------


def test_a_new_lease_starts_an_upstream_and_takes_a_slot() -> None:
    book, _ = make_book()
    admission = book.admit("e1", "python")
    assert admission.outcome is Outcome.CREATED and not admission.resumed
    assert of_type(admission.actions, StartUpstream) == [StartUpstream("lease-1")]
    assert admission.generation == 1
    assert book.counts().active == 1 and book.counts().detached == 0


def test_a_hint_reattaches_its_detached_lease_without_a_new_slot_and_cancels_its_deadline() -> None:
    book, clock = make_book(capacity=1)
    lease = _detached(book, clock)
    admission = book.admit("e1", "python", lease)
    assert admission.outcome is Outcome.REATTACHED and admission.resumed
    assert admission.lease_id == lease and admission.generation == 2
    assert of_type(admission.actions, StartUpstream) == []
    assert admission.actions[0] == CancelDeadline(lease)  # before anything else is visible (K12.17)
    assert book.counts().active == 1 and book.counts().detached == 0


def test_an_attached_lease_is_never_stolen_by_a_copied_hint() -> None:
    book, _ = make_book()
    first = _created(book)
    second = book.admit("e1", "python", first.lease_id)
    assert second.outcome is Outcome.CREATED and second.lease_id != first.lease_id
    view = book.view("lease-1")
    assert view is not None and view.attached and view.generation == 1


@pytest.mark.parametrize(("execution", "language"), [("e2", "python"), ("e1", "go")])
def test_a_hint_for_another_execution_or_language_is_ignored(execution: str, language: str) -> None:
    book, clock = make_book()
    lease = _detached(book, clock)
    admission = book.admit(execution, language, lease)
    assert admission.outcome is Outcome.CREATED and admission.lease_id != lease
    view = book.view(lease)
    assert view is not None and not view.attached


def _two_closed_windows(policy: ClaimPolicy) -> tuple[LeaseBook, FakeClock, str, str]:
    book, clock = make_book(claim_policy=policy)
    first, second = _created(book), _created(book)  # two windows, then both closed: older first
    _detached(book, clock, language="go")  # another language: not a candidate
    for admission in (first, second):
        book.detach(str(admission.lease_id), admission.generation)
        clock.advance(1)
    assert first.lease_id is not None and second.lease_id is not None
    return book, clock, first.lease_id, second.lease_id


def test_by_default_only_a_client_without_a_hint_claims_the_newest_detached_lease() -> None:
    """K12.9, K12.15 (issue 18 item 10): a new tab may claim; a hint that names no usable lease (expired,
    evicted, from before a restart) is a fresh start, as the seed says, not some other tab's server."""
    book, clock, older, newer = _two_closed_windows(ClaimPolicy.UNHINTED)
    claimed = book.admit("e1", "python")
    assert claimed.outcome is Outcome.CLAIMED and claimed.lease_id == newer
    assert claimed.lease_id is not None
    book.detach(claimed.lease_id, claimed.generation)
    clock.advance(1)
    fresh = book.admit("e1", "python", "an-evicted-lease")
    assert fresh.outcome is Outcome.CREATED and fresh.lease_id not in (older, newer)
    duplicate = book.admit("e1", "python", str(fresh.lease_id))  # a copied hint of an attached lease
    assert duplicate.outcome is Outcome.CREATED and duplicate.lease_id not in (older, newer)
    assert book.view(older) is not None and book.view(newer) is not None  # both still detached


@pytest.mark.parametrize(
    ("policy", "unhinted", "stale_hint"),
    [
        (ClaimPolicy.NEVER, Outcome.CREATED, Outcome.CREATED),
        (ClaimPolicy.ALWAYS, Outcome.CLAIMED, Outcome.CLAIMED),
    ],
)
def test_the_claim_policy_can_be_never_or_always(
    policy: ClaimPolicy, unhinted: Outcome, stale_hint: Outcome
) -> None:
    for hint, expected in ((None, unhinted), ("no-such-lease", stale_hint)):
        book, _, _, newer = _two_closed_windows(policy)
        admission = book.admit("e1", "python", hint)
        assert admission.outcome is expected
        assert (admission.lease_id == newer) is (expected is Outcome.CLAIMED)


def test_another_owner_neither_reattaches_by_a_copied_hint_nor_claims_a_detached_lease() -> None:
    """A lease's server runs with its creator's settings and holds its session: another owner (an
    embedder's authorizer with several users) gets a lease of its own, hint or not."""
    book, clock = make_book()
    created = book.admit("e1", "python", owner="alice")
    assert created.lease_id is not None
    book.detach(created.lease_id, created.generation)
    clock.advance(1)
    for hint in (created.lease_id, None):
        admission = book.admit("e1", "python", hint, owner="bob")
        assert admission.outcome is Outcome.CREATED and admission.lease_id != created.lease_id
    view = book.view(created.lease_id)
    assert view is not None and not view.attached
    again = book.admit("e1", "python", owner="alice")  # the owner itself still claims it
    assert again.outcome is Outcome.CLAIMED and again.lease_id == created.lease_id


def test_at_capacity_with_every_lease_attached_admission_is_rejected_with_4005_and_starts_nothing() -> None:
    book, _ = make_book(capacity=2)
    _created(book)
    _created(book, "e2")
    admission = book.admit("e3", "python")
    assert admission.outcome is Outcome.REJECTED and admission.close_code == 4005
    assert admission.lease_id is None
    assert [type(action) for action in admission.actions] == [Transition]
    assert book.counts().active == 2


def test_at_capacity_the_least_recently_detached_lease_is_evicted_and_the_newcomer_waits_for_its_cleanup() -> (
    None
):
    book, clock = make_book(capacity=3)
    oldest = _detached(book, clock, "e1")
    _detached(book, clock, "e2")
    _created(book, "e3")
    admission = book.admit("e4", "go")
    assert admission.outcome is Outcome.QUEUED
    assert of_type(admission.actions, CloseUpstream) == [CloseUpstream(oldest, ReleaseReason.CAPACITY)]
    assert of_type(admission.actions, CancelDeadline) == [CancelDeadline(oldest)]
    assert of_type(admission.actions, StartUpstream) == []  # not before the victim is cleaned up
    assert book.counts().evicted_total == 1 and book.counts().active == 3

    actions = book.upstream_ended(oldest)
    assert of_type(actions, StartUpstream) == [StartUpstream(str(admission.lease_id))]
    counts = book.counts()
    assert counts.active == 3 and counts.released_total[ReleaseReason.CAPACITY] == 1
    assert book.view(oldest) is None
    view = book.view(str(admission.lease_id))
    assert view is not None and view.phase is Phase.LIVE and view.attached


def test_a_lease_already_closing_frees_its_slot_for_a_newcomer_without_an_eviction() -> None:
    book, clock = make_book(capacity=2)
    stopping = _created(book)
    _detached(book, clock, "e2")
    assert stopping.lease_id is not None
    book.request_stop(stopping.lease_id, stopping.generation, ControlKind.STOP)
    admission = book.admit("e3", "python")
    assert admission.outcome is Outcome.QUEUED
    assert of_type(admission.actions, CloseUpstream) == []
    assert book.counts().evicted_total == 0
    assert of_type(book.upstream_ended(stopping.lease_id), StartUpstream) == [
        StartUpstream(str(admission.lease_id))
    ]


def test_two_newcomers_never_wait_for_the_same_slot() -> None:
    book, clock = make_book(capacity=2)
    _detached(book, clock, "e1")
    _created(book, "e2")
    assert book.admit("e3", "python").outcome is Outcome.QUEUED
    assert book.admit("e4", "python").outcome is Outcome.REJECTED


def test_a_newcomer_that_leaves_while_waiting_takes_no_slot() -> None:
    book, clock = make_book(capacity=1)
    victim = _detached(book, clock)
    admission = book.admit("e2", "python")
    assert admission.lease_id is not None
    book.detach(admission.lease_id, admission.generation)
    actions = book.upstream_ended(victim)
    assert of_type(actions, StartUpstream) == []
    assert book.counts().active == 0 and book.lease_ids() == []


# --- deadlines -----------------------------------------------------------------------------------------


def _deadline(actions: list[object]) -> ArmDeadline:
    [arm] = [action for action in actions if isinstance(action, ArmDeadline)]
    return arm


def test_each_detach_arms_a_full_deadline_and_expiry_releases_the_lease() -> None:
    book, clock = make_book(detach_timeout=60)
    admission = _created(book)
    lease = str(admission.lease_id)
    arm = _deadline(list(book.detach(lease, admission.generation)))
    assert arm.at == clock.now + 60
    clock.now = arm.at
    actions = book.on_deadline(lease, arm.token)
    assert of_type(actions, CloseUpstream) == [CloseUpstream(lease, ReleaseReason.DETACHED_TIMEOUT)]
    book.upstream_ended(lease)
    assert book.counts().released_total[ReleaseReason.DETACHED_TIMEOUT] == 1


def test_a_stale_deadline_never_closes_a_reattached_lease() -> None:
    book, clock = make_book(detach_timeout=60)
    admission = _created(book)
    lease = str(admission.lease_id)
    first = _deadline(list(book.detach(lease, admission.generation)))
    clock.advance(30)
    again = book.admit("e1", "python", lease)
    clock.now = first.at  # the first deadline fires after the reattach: the lease is attached
    assert of_type(book.on_deadline(lease, first.token), CloseUpstream) == []
    second = _deadline(list(book.detach(lease, again.generation)))  # a later detach: a full new hour
    assert second.at == clock.now + 60
    assert (
        of_type(book.on_deadline(lease, first.token), CloseUpstream) == []
    )  # detached, but not from that detach
    clock.now = second.at
    assert of_type(book.on_deadline(lease, second.token), CloseUpstream) != []


def test_a_stale_deadline_with_the_same_detach_time_is_still_stale() -> None:
    book, clock = make_book(detach_timeout=60)
    admission = _created(book)
    lease = str(admission.lease_id)
    first = _deadline(list(book.detach(lease, admission.generation)))
    again = book.admit("e1", "python", lease)
    second = _deadline(list(book.detach(lease, again.generation)))  # same clock reading as the first
    assert first.token != second.token
    clock.now = first.at
    assert of_type(book.on_deadline(lease, first.token), CloseUpstream) == []


def test_a_deadline_that_fires_early_is_armed_again() -> None:
    book, clock = make_book(detach_timeout=60)
    admission = _created(book)
    lease = str(admission.lease_id)
    arm = _deadline(list(book.detach(lease, admission.generation)))
    clock.now = arm.at - 0.5
    assert book.on_deadline(lease, arm.token) == [ArmDeadline(lease, arm.at, arm.token)]


def test_a_detach_from_an_older_generation_changes_nothing() -> None:
    book, clock = make_book()
    lease = _detached(book, clock)
    book.admit("e1", "python", lease)
    assert book.detach(lease, 1) == []
    view = book.view(lease)
    assert view is not None and view.attached


# --- endings -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("control", "reason"),
    [(ControlKind.STOP, ReleaseReason.STOP), (ControlKind.RELEASE, ReleaseReason.EDITOR_IDLE)],
)
def test_stop_and_release_are_acknowledged_after_the_upstream_is_closed_and_release_once(
    control: ControlKind, reason: ReleaseReason
) -> None:
    book, _ = make_book()
    admission = _created(book)
    lease = str(admission.lease_id)
    actions = book.request_stop(lease, admission.generation, control)
    assert of_type(actions, CloseUpstream) == [CloseUpstream(lease, reason)]
    assert of_type(actions, Acknowledge) == []  # not before the cleanup (K16.1)
    assert book.counts().active == 1
    ended = book.upstream_ended(lease)
    assert of_type(ended, Acknowledge) == [Acknowledge(lease, admission.generation, control)]
    assert of_type(ended, EndAttachment) == []
    assert book.upstream_ended(lease) == []
    counts = book.counts()
    assert (
        counts.active == 0 and counts.released_total[reason] == 1 and sum(counts.released_total.values()) == 1
    )


def test_a_stop_from_a_stale_generation_or_a_closing_lease_does_nothing() -> None:
    book, clock = make_book()
    lease = _detached(book, clock)
    again = book.admit("e1", "python", lease)
    assert book.request_stop(lease, 1, ControlKind.STOP) == []
    book.request_stop(lease, again.generation, ControlKind.STOP)
    assert book.request_stop(lease, again.generation, ControlKind.RELEASE) == []


def test_a_client_leaving_during_a_stop_gets_no_ack_and_the_slot_is_still_released() -> None:
    book, _ = make_book()
    admission = _created(book)
    lease = str(admission.lease_id)
    book.request_stop(lease, admission.generation, ControlKind.STOP)
    book.detach(lease, admission.generation)
    ended = book.upstream_ended(lease)
    assert of_type(ended, Acknowledge) == [] and of_type(ended, EndAttachment) == []
    assert book.counts().released_total[ReleaseReason.STOP] == 1


def test_an_upstream_that_ends_by_itself_is_a_server_exit_and_ends_the_attachment() -> None:
    book, _ = make_book()
    admission = _created(book)
    lease = str(admission.lease_id)
    actions = book.upstream_ended(lease)
    assert of_type(actions, EndAttachment) == [EndAttachment(lease, 1, ReleaseReason.SERVER_EXIT)]
    assert of_type(actions, CloseUpstream) == []
    assert book.counts().released_total[ReleaseReason.SERVER_EXIT] == 1


def test_the_first_reason_wins_when_the_server_exits_during_an_expiry() -> None:
    book, clock = make_book(detach_timeout=1)
    admission = _created(book)
    lease = str(admission.lease_id)
    arm = _deadline(list(book.detach(lease, admission.generation)))
    clock.now = arm.at
    book.on_deadline(lease, arm.token)
    book.upstream_ended(lease)
    released = book.counts().released_total
    assert released[ReleaseReason.DETACHED_TIMEOUT] == 1 and released[ReleaseReason.SERVER_EXIT] == 0


def test_closing_an_execution_ends_its_leases_attached_ones_at_once_and_refuses_its_waiters() -> None:
    book, clock = make_book(capacity=3)
    detached = _detached(book, clock, "e1", "rust")
    attached = _created(book, "e1")
    other = _created(book, "e2")
    waiting = book.admit("e1", "go")  # evicts the detached lease of e1 and waits for it
    assert waiting.outcome is Outcome.QUEUED
    actions = book.close_execution("e1")
    assert of_type(actions, CloseUpstream) == [
        CloseUpstream(str(attached.lease_id), ReleaseReason.RUNTIME_STOP)
    ]
    assert of_type(actions, EndAttachment) == [
        EndAttachment(str(attached.lease_id), 1, ReleaseReason.RUNTIME_STOP)
    ]
    assert of_type(actions, RejectWaiting) == [RejectWaiting(str(waiting.lease_id), 1, 4002)]
    book.upstream_ended(detached)
    book.upstream_ended(str(attached.lease_id))
    counts = book.counts()
    assert counts.released_total[ReleaseReason.CAPACITY] == 1
    assert counts.released_total[ReleaseReason.RUNTIME_STOP] == 1
    assert book.lease_ids() == [other.lease_id]


def test_shutdown_closes_everything_cancels_deadlines_and_refuses_new_clients() -> None:
    book, clock = make_book()
    detached = _detached(book, clock)
    attached = _created(book, "e2")
    actions = book.shutdown()
    assert of_type(actions, CancelDeadline) == [CancelDeadline(detached)]
    assert {action.lease_id for action in of_type(actions, CloseUpstream)} == {detached, attached.lease_id}
    assert of_type(actions, EndAttachment) == [
        EndAttachment(str(attached.lease_id), 1, ReleaseReason.BACKEND_STOP)
    ]
    refused = book.admit("e3", "python")
    assert refused.outcome is Outcome.REFUSED and refused.close_code == 1001
    for lease in (detached, str(attached.lease_id)):
        book.upstream_ended(lease)
    assert book.counts().released_total[ReleaseReason.BACKEND_STOP] == 2
    assert book.counts().active == 0


# --- reclaim fences (K13) ------------------------------------------------------------------------------


def test_a_reclaim_is_refused_while_a_lease_pins_the_execution_even_detached() -> None:
    book, clock = make_book()
    lease = _detached(book, clock)
    assert book.is_pinned("e1") and not book.is_pinned("e2")
    assert book.begin_reclaim("e1") is None
    book.on_deadline(lease, (0.0, 0))  # stale: no effect
    book.close_execution("e1")
    assert book.is_pinned("e1")  # closing still pins until the cleanup ends
    book.upstream_ended(lease)
    assert not book.is_pinned("e1")
    assert book.begin_reclaim("e1") is not None


def test_a_held_fence_refuses_admission_with_4002_until_it_ends() -> None:
    book, _ = make_book()
    ticket = book.begin_reclaim("e1")
    assert ticket is not None
    refused = book.admit("e1", "python")
    assert refused.outcome is Outcome.REFUSED and refused.close_code == 4002
    assert book.admit("e2", "python").outcome is Outcome.CREATED  # other executions are not fenced
    assert book.confirm_reclaim(ticket)
    book.end_reclaim(ticket)
    assert book.admit("e1", "python").outcome is Outcome.CREATED


def test_a_stale_ticket_neither_confirms_nor_drops_a_newer_fence() -> None:
    book, _ = make_book()
    old = book.begin_reclaim("e1")
    assert old is not None
    book.end_reclaim(old)
    new = book.begin_reclaim("e1")
    assert new is not None
    assert not book.confirm_reclaim(old)
    book.end_reclaim(old)
    assert book.admit("e1", "python").outcome is Outcome.REFUSED
    assert book.confirm_reclaim(new)


# --- logs ----------------------------------------------------------------------------------------------


def test_transitions_carry_no_ids_or_hints() -> None:
    book, _ = make_book(capacity=1)
    secret_execution, secret_hint = "exec-SECRET-1", "hint-SECRET-2"
    admission = book.admit(secret_execution, "python", secret_hint)
    lease = str(admission.lease_id)
    everything = list(admission.actions)
    everything += book.detach(lease, admission.generation)
    everything += book.admit(secret_execution, "python", lease).actions
    everything += book.detach(lease, 2)
    everything += book.admit("exec-SECRET-3", "go").actions
    everything += book.upstream_ended(lease)
    events = of_type(everything, Transition)
    assert {event.event for event in events} >= {
        "lease_created",
        "lease_detached",
        "lease_reattached",
        "lease_evicting",
        "lease_closing",
        "lease_queued",
        "lease_released",
    }
    for event in events:
        for value in event.fields.values():
            text = str(value)
            assert "SECRET" not in text and "lease-" not in text
    assert "lease-" not in repr(everything)  # action reprs hide lease ids too


def test_config_rejects_a_zero_capacity() -> None:
    with pytest.raises(ValueError, match="capacity"):
        LeaseConfig(capacity=0)
    with pytest.raises(ValueError, match="detach_timeout"):
        LeaseConfig(detach_timeout=0)
