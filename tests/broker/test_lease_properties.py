"""Random event sequences against the lease book: capacity is released exactly once on every terminal
path, the cap is never exceeded, and an attached lease is never taken (K12.10, K12.13, K12.14, K19.5).

The model watches only what the I/O layer sees (the returned actions) plus the book's public views, and
plays the I/O layer's part: every CloseUpstream and every running upstream eventually reports
``upstream_ended``, possibly late, twice, or for a lease that is already gone.
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from kandev_lsp.broker.leases import (
    Acknowledge,
    Action,
    Admission,
    ArmDeadline,
    CancelDeadline,
    CloseUpstream,
    ControlKind,
    EndAttachment,
    LeaseBook,
    LeaseConfig,
    Outcome,
    ReclaimTicket,
    RejectWaiting,
    ReleaseReason,
    StartUpstream,
)
from leasekit import FakeClock

EXECUTIONS = st.sampled_from(["e1", "e2", "e3"])
LANGUAGES = st.sampled_from(["python", "go"])
TIMEOUT = 50.0


class LeaseMachine(RuleBasedStateMachine):
    @initialize(capacity=st.integers(min_value=1, max_value=4))
    def start(self, capacity: int) -> None:
        self.clock = FakeClock()
        counter = itertools.count(1)
        self.book = LeaseBook(
            LeaseConfig(capacity=capacity, detach_timeout=TIMEOUT),
            clock=self.clock,
            new_lease_id=lambda: f"L{next(counter)}",
        )
        self.known: list[str] = []  # every lease id ever handed out
        self.attached: dict[str, int] = {}  # lease -> generation of the client the model holds
        self.started: set[str] = set()  # leases that took a slot (one StartUpstream each)
        self.released: set[str] = set()  # leases whose slot came back
        self.tokens: list[tuple[str, tuple[float, int]]] = []  # every deadline ever armed
        self.timers: dict[str, tuple[float, tuple[float, int]]] = {}  # armed and not cancelled
        self.tickets: list[ReclaimTicket] = []
        self.generations: dict[str, int] = {}
        self.closing: set[str] = set()  # CloseUpstream given, end not reported yet
        self.detached_at: dict[str, float] = {}  # lease -> when the model's client last left it

    # --- the I/O layer's side ------------------------------------------------------------------

    def _apply(self, actions: tuple[Action, ...] | list[Action]) -> None:
        for action in actions:
            if isinstance(action, StartUpstream):
                assert action.lease_id not in self.started, "a lease took a slot twice"
                self.started.add(action.lease_id)
            elif isinstance(action, ArmDeadline):
                self.tokens.append((action.lease_id, action.token))
                self.timers[action.lease_id] = (action.at, action.token)
            elif isinstance(action, CancelDeadline):
                self.timers.pop(action.lease_id, None)
            elif isinstance(action, CloseUpstream):
                assert action.lease_id not in self.closing, "a lease was closed twice"
                self.closing.add(action.lease_id)
                if action.reason is ReleaseReason.CAPACITY:
                    assert action.lease_id not in self.attached, "an attached lease was evicted"
                if action.reason is ReleaseReason.DETACHED_TIMEOUT:
                    assert action.lease_id not in self.attached, "an attached lease expired"
                    detached_for = self.clock.now - self.detached_at[action.lease_id]
                    assert detached_for >= TIMEOUT, "a lease expired before its deadline"
            elif isinstance(action, EndAttachment | Acknowledge | RejectWaiting):
                assert self.attached.get(action.lease_id) == action.generation
                del self.attached[action.lease_id]

    def _admitted(self, admission: Admission) -> None:
        if admission.lease_id is not None:
            if admission.resumed:
                assert admission.lease_id not in self.attached, "an attached lease was taken"
            self.attached[admission.lease_id] = admission.generation
            self.generations[admission.lease_id] = admission.generation
            if admission.lease_id not in self.known:
                self.known.append(admission.lease_id)
        else:
            assert admission.outcome in (Outcome.REJECTED, Outcome.REFUSED)
            assert not any(isinstance(action, StartUpstream) for action in admission.actions)
        self._apply(admission.actions)

    # --- rules -----------------------------------------------------------------------------------

    @rule(execution=EXECUTIONS, language=LANGUAGES, hint=st.integers(min_value=-1, max_value=12))
    def admit(self, execution: str, language: str, hint: int) -> None:
        lease_hint = self.known[hint] if 0 <= hint < len(self.known) else ("zz" if hint == -1 else None)
        self._admitted(self.book.admit(execution, language, lease_hint))

    @rule(execution=st.sampled_from(["f1", "f2", "f3", "f4", "f5"]))
    def admit_elsewhere(self, execution: str) -> None:
        """A client of an execution with no lease yet: a new lease, an eviction, or 4005."""
        self._admitted(self.book.admit(execution, "python"))

    @precondition(lambda self: self.attached)
    @rule(data=st.data())
    def detach(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from(sorted(self.attached)))
        actions = self.book.detach(lease, self.attached.pop(lease))
        assert actions
        self.detached_at[lease] = self.clock.now
        self._apply(actions)

    @precondition(lambda self: self.known)
    @rule(data=st.data())
    def stale_detach(self, data: st.DataObject) -> None:
        """A client that left long ago reports it (an old generation): nothing may change."""
        lease = data.draw(st.sampled_from(self.known))
        assert self.book.detach(lease, self.generations[lease] - 1) == []

    @rule(seconds=st.sampled_from([0.0, 1.0, TIMEOUT / 2, TIMEOUT]))
    def advance(self, seconds: float) -> None:
        """Time passes; armed timers that are due fire, as the event loop would fire them."""
        self.clock.advance(seconds)
        for lease, (at, token) in sorted(self.timers.items(), key=lambda item: item[1][0]):
            if at <= self.clock.now and self.timers.get(lease) == (at, token):
                del self.timers[lease]
                self._apply(self.book.on_deadline(lease, token))

    @precondition(lambda self: self.tokens)
    @rule(data=st.data())
    def fire_deadline(self, data: st.DataObject) -> None:
        recent = st.sampled_from(self.tokens[-2:])
        lease, token = data.draw(st.one_of(recent, st.sampled_from(self.tokens)))  # stale ones included
        self._apply(self.book.on_deadline(lease, token))

    @precondition(lambda self: self.attached)
    @rule(data=st.data(), control=st.sampled_from(ControlKind), odds=st.integers(min_value=0, max_value=2))
    def stop(self, data: st.DataObject, control: ControlKind, odds: int) -> None:
        if odds == 1:
            lease = data.draw(st.sampled_from(sorted(self.attached)))
            self._apply(self.book.request_stop(lease, self.attached[lease], control))

    @precondition(lambda self: self.closing)
    @rule(data=st.data())
    def close_finished(self, data: st.DataObject) -> None:
        """The I/O layer reports that a CloseUpstream it was given is done."""
        lease = data.draw(st.sampled_from(sorted(self.closing)))
        self.closing.discard(lease)
        self._apply(self.book.upstream_ended(lease))

    @precondition(lambda self: self.known)
    @rule(data=st.data(), odds=st.integers(min_value=0, max_value=2))
    def upstream_ended(self, data: st.DataObject, odds: int) -> None:
        """A server exiting on its own, or a late or repeated report for any lease."""
        if odds == 1:
            self._apply(self.book.upstream_ended(data.draw(st.sampled_from(self.known))))

    @rule(execution=EXECUTIONS, odds=st.integers(min_value=0, max_value=2))
    def runtime_stop(self, execution: str, odds: int) -> None:
        if odds == 1:
            self._apply(self.book.close_execution(execution))

    @rule(execution=EXECUTIONS)
    def begin_reclaim(self, execution: str) -> None:
        pinned = self.book.is_pinned(execution)
        ticket = self.book.begin_reclaim(execution)
        assert (ticket is None) == pinned
        if ticket is not None:
            self.tickets.append(ticket)

    @precondition(lambda self: self.tickets)
    @rule(data=st.data())
    def end_reclaim(self, data: st.DataObject) -> None:
        ticket = data.draw(st.sampled_from(self.tickets))
        if self.book.confirm_reclaim(ticket):
            assert not self.book.is_pinned(ticket.execution)
        self.book.end_reclaim(ticket)

    @rule(odds=st.integers(min_value=0, max_value=9))
    def shutdown(self, odds: int) -> None:
        if odds == 7:  # rare (a middle value: Hypothesis favours bounds): nothing is admitted afterwards
            self._apply(self.book.shutdown())

    # --- invariants ------------------------------------------------------------------------------

    @invariant()
    def capacity_is_counted_exactly(self) -> None:
        if not hasattr(self, "book"):
            return
        for lease in self.started - self.released:
            if self.book.view(lease) is None:
                self.released.add(lease)
        counts = self.book.counts()
        holding = [
            lease for lease in self.book.lease_ids() if (view := self.book.view(lease)) and view.holds_slot
        ]
        assert counts.active == len(holding) == len(self.started - self.released)
        assert counts.active <= counts.capacity
        assert sum(counts.released_total.values()) == len(self.released)
        assert counts.detached <= counts.active

    @invariant()
    def views_agree_with_the_model(self) -> None:
        if not hasattr(self, "book"):
            return
        for lease, generation in self.attached.items():
            view = self.book.view(lease)
            assert view is not None and view.attached and view.generation == generation

    def teardown(self) -> None:
        """Every path ends: shut down, let every upstream report its end (twice), and check that each
        lease that took a slot gave it back exactly once."""
        if not hasattr(self, "book"):
            return
        self._apply(self.book.shutdown())
        for _ in range(2):
            for lease in list(self.known):
                self._apply(self.book.upstream_ended(lease))
        self.capacity_is_counted_exactly()
        counts = self.book.counts()
        assert counts.active == 0 and self.book.lease_ids() == []
        assert self.released == self.started
        assert self.attached == {}


TestLeaseMachine = LeaseMachine.TestCase
TestLeaseMachine.settings = settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
