"""Leases as a sans-io state machine: admission, capacity, detach deadlines, reclaim fences (K12, K13).

A :class:`LeaseBook` holds every lease of one broker. Each method takes plain values, changes the book
and returns the :data:`Action` values the asyncio layer performs (start an upstream, close one, arm or
cancel a deadline, end or acknowledge a client's attachment) together with :class:`Transition` records
to log. Time comes from an injected clock. The I/O layer is expected to call the book from one event
loop, so each call is the "lease lock" of the reference: a deadline callback, an attach and a teardown
never interleave inside the book (K12.18).

The life of a lease::

    admit --> LIVE (attached, generation 1) --detach--> LIVE (detached, deadline armed)
              |  ^--------------- reattach / claim (generation + 1) ---------'
              |--stop / release / expiry / eviction / runtime stop / shutdown--> CLOSING(reason)
              '--upstream ended on its own (server_exit)------------------------> CLOSED (slot released)
    CLOSING --upstream_ended--> CLOSED (slot released, exactly once; a waiting admission takes the slot)
    admit at a full cap --> QUEUED (no slot) until the lease it waits for is CLOSED --> LIVE

Capacity is a count of leases holding a slot, from admission to the end of their teardown, attached or
detached (K12.13); it never exceeds the cap, and a slot is released exactly once (K19.5).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final, TypeAlias

from kandev_lsp.broker.config import DEFAULT_DETACH_TIMEOUT, DEFAULT_MAX_CONNECTIONS

__all__ = [
    "Acknowledge",
    "Action",
    "Admission",
    "ArmDeadline",
    "CancelDeadline",
    "ClaimPolicy",
    "CloseUpstream",
    "ControlKind",
    "EndAttachment",
    "LeaseBook",
    "LeaseConfig",
    "LeaseCounts",
    "LeaseView",
    "Outcome",
    "Phase",
    "ReclaimFences",
    "ReclaimTicket",
    "RejectWaiting",
    "ReleaseReason",
    "StartUpstream",
    "Transition",
]

Clock: TypeAlias = Callable[[], float]

#: Close codes the book decides itself (the rest are the I/O layer's: see ``closecodes``).
_SESSION_UNAVAILABLE: Final = 4002
_CAPACITY: Final = 4005
_GOING_AWAY: Final = 1001


class ReleaseReason(StrEnum):
    """Why a lease ended: the closed set of ``lsp_lease_released_total{reason}`` (K12.6, K19.3)."""

    STOP = "stop"
    EDITOR_IDLE = "editor_idle"
    DETACHED_TIMEOUT = "detached_timeout"
    CAPACITY = "capacity"
    SERVER_EXIT = "server_exit"
    RUNTIME_STOP = "runtime_stop"
    BACKEND_STOP = "backend_stop"


class ControlKind(StrEnum):
    """The acknowledged control frames that end a lease (K16.1)."""

    STOP = "stop"
    RELEASE = "release"  # editor-idle release


_CONTROL_REASON: Final[Mapping[ControlKind, ReleaseReason]] = {
    ControlKind.STOP: ReleaseReason.STOP,
    ControlKind.RELEASE: ReleaseReason.EDITOR_IDLE,
}


class ClaimPolicy(StrEnum):
    """When a client without a usable lease hint may claim another detached lease of the same
    execution, language and owner (K12.9, K12.15) instead of starting a fresh server."""

    #: The seed's: a client that sent **no** hint (a new tab) claims the newest detached lease; a hint
    #: that names no usable lease (expired, evicted, from before a restart, attached elsewhere) is a
    #: fresh start: that tab had a server of its own, and it is gone.
    UNHINTED = "unhinted"
    #: Never claim: every client without a usable hint starts a fresh server.
    NEVER = "never"
    #: Claim whenever a detached lease exists, hint or not (the broker's behaviour before issue 18).
    ALWAYS = "always"


class Phase(StrEnum):
    QUEUED = "queued"  # admitted after an eviction; waits for that lease's cleanup; holds no slot
    LIVE = "live"  # holds a slot; attached or detached
    CLOSING = "closing"  # reason chosen, upstream being closed; still holds its slot
    CLOSED = "closed"  # slot released; gone from the book


class Outcome(StrEnum):
    """What :meth:`LeaseBook.admit` decided."""

    REATTACHED = "reattached"  # the hinted detached lease (K12.8)
    CLAIMED = "claimed"  # the newest detached lease of the execution and language (K12.9)
    CREATED = "created"  # a new lease; start its upstream
    QUEUED = "queued"  # a new lease, started once a closing lease's cleanup ends (K12.14)
    REJECTED = "rejected"  # every slot is held by an attached lease: 4005, nothing started
    REFUSED = "refused"  # the execution is being reclaimed, or the broker is stopping: 4002 / 1001

    @property
    def resumed(self) -> bool:
        return self in (Outcome.REATTACHED, Outcome.CLAIMED)


# --- actions -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartUpstream:
    """Connect this lease's upstream (serve's stream) and start its server."""

    lease_id: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class CloseUpstream:
    """Stop this lease's server (shutdown, exit, serve's stop frame) and report
    :meth:`LeaseBook.upstream_ended` once the upstream is closed (K16.2)."""

    lease_id: str = field(repr=False)
    reason: ReleaseReason


@dataclass(frozen=True, slots=True)
class ArmDeadline:
    """Call :meth:`LeaseBook.on_deadline` with ``lease_id, token`` at clock time ``at`` (K12.16)."""

    lease_id: str = field(repr=False)
    at: float
    token: tuple[float, int]


@dataclass(frozen=True, slots=True)
class CancelDeadline:
    """Cancel this lease's armed deadline (a late call is harmless anyway: K12.18)."""

    lease_id: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class EndAttachment:
    """Close the client attached as ``generation``: the lease ended under it, not by its own request."""

    lease_id: str = field(repr=False)
    generation: int
    reason: ReleaseReason


@dataclass(frozen=True, slots=True)
class Acknowledge:
    """Send the ack of the client's stop / release control frame, then close it with 1000 (K16.1)."""

    lease_id: str = field(repr=False)
    generation: int
    control: ControlKind


@dataclass(frozen=True, slots=True)
class RejectWaiting:
    """A queued admission will not happen: close its client with ``code``."""

    lease_id: str = field(repr=False)
    generation: int
    code: int


@dataclass(frozen=True, slots=True)
class Transition:
    """One lease transition to log: bounded metadata, never an id or a hint (K19.2, K12.11)."""

    event: str
    fields: Mapping[str, str | int | bool]


Action: TypeAlias = (
    StartUpstream
    | CloseUpstream
    | ArmDeadline
    | CancelDeadline
    | EndAttachment
    | Acknowledge
    | RejectWaiting
    | Transition
)


@dataclass(frozen=True, slots=True)
class Admission:
    """The answer to one client asking for a lease."""

    outcome: Outcome
    lease_id: str | None = field(default=None, repr=False)
    generation: int = 0
    close_code: int | None = None  # set for REJECTED and REFUSED
    actions: tuple[Action, ...] = ()

    @property
    def resumed(self) -> bool:
        return self.outcome.resumed


@dataclass(frozen=True, slots=True)
class LeaseConfig:
    capacity: int = DEFAULT_MAX_CONNECTIONS
    detach_timeout: float = DEFAULT_DETACH_TIMEOUT
    claim_policy: ClaimPolicy = ClaimPolicy.UNHINTED

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {self.capacity}")
        if self.detach_timeout <= 0:
            raise ValueError(f"detach_timeout must be positive, not {self.detach_timeout}")


@dataclass(frozen=True, slots=True)
class LeaseCounts:
    """What the metrics show (K19.3): no ids anywhere."""

    active: int
    detached: int
    capacity: int
    evicted_total: int
    released_total: Mapping[ReleaseReason, int]


@dataclass(frozen=True, slots=True)
class LeaseView:
    """A read-only look at one lease, for the I/O layer and tests."""

    execution: str
    language: str
    phase: Phase
    attached: bool
    generation: int
    holds_slot: bool
    reason: ReleaseReason | None


@dataclass(frozen=True, slots=True)
class ReclaimTicket:
    """A held reclaim fence on one execution (K13.3). Opaque to the orchestrator."""

    execution: str = field(repr=False)
    generation: int


class ReclaimFences:
    """Generation-checked reclaim fences, one per execution (K13.3): the one rule both broker modes share.

    The caller says whether the execution is pinned (by a lease, or by a proxied connection), so the
    same fence works over a :class:`LeaseBook` and over the plain proxy. A fence, once held, refuses
    admission onto its execution; only its own ticket confirms or drops it, so a stale reclaim can never
    end a newer one.
    """

    def __init__(self) -> None:
        self._fences: dict[str, int] = {}
        self._serial = 0

    def held(self, execution: str) -> bool:
        return execution in self._fences

    def begin(self, execution: str, *, pinned: bool) -> ReclaimTicket | None:
        if pinned:
            return None
        self._serial += 1
        self._fences[execution] = self._serial
        return ReclaimTicket(execution, self._serial)

    def confirm(self, ticket: ReclaimTicket, *, pinned: bool) -> bool:
        return self._fences.get(ticket.execution) == ticket.generation and not pinned

    def end(self, ticket: ReclaimTicket) -> None:
        if self._fences.get(ticket.execution) == ticket.generation:
            del self._fences[ticket.execution]


@dataclass(slots=True)
class _Lease:
    lease_id: str
    execution: str
    language: str
    executor: str
    phase: Phase
    order: int  # creation order: breaks ties deterministically
    generation: int = 1
    attached: bool = True
    holds_slot: bool = False
    detached_at: float | None = None
    detach_serial: int = 0
    deadline_at: float | None = None
    reason: ReleaseReason | None = None
    ack: tuple[int, ControlKind] | None = None
    waiting_for: str | None = None  # QUEUED: the lease whose slot it takes
    owner: str = ""  # the creating caller's owner (Caller.owner): only that owner reattaches or claims it


class LeaseBook:
    """Every lease of one broker, and the rules that move them.

    :param config: capacity and detach timeout.
    :param clock: monotonic seconds (``time.monotonic`` or the event loop's ``time``).
    :param new_lease_id: opaque id factory; tests inject a deterministic one.
    """

    def __init__(
        self,
        config: LeaseConfig = LeaseConfig(),
        *,
        clock: Clock,
        new_lease_id: Callable[[], str] = lambda: secrets.token_urlsafe(18),
    ) -> None:
        self.config = config
        self._clock = clock
        self._new_id = new_lease_id
        self._leases: dict[str, _Lease] = {}
        self._order = 0
        self._evicted = 0
        self._released = dict.fromkeys(ReleaseReason, 0)
        self.fences = ReclaimFences()
        self._stopping = False

    # --- queries ---------------------------------------------------------------------------------

    def counts(self) -> LeaseCounts:
        holding = [lease for lease in self._leases.values() if lease.holds_slot]
        return LeaseCounts(
            active=len(holding),
            detached=sum(1 for lease in holding if lease.phase is Phase.LIVE and not lease.attached),
            capacity=self.config.capacity,
            evicted_total=self._evicted,
            released_total=dict(self._released),
        )

    def view(self, lease_id: str) -> LeaseView | None:
        lease = self._leases.get(lease_id)
        if lease is None:
            return None
        return LeaseView(
            lease.execution,
            lease.language,
            lease.phase,
            lease.attached,
            lease.generation,
            lease.holds_slot,
            lease.reason,
        )

    def lease_ids(self) -> list[str]:
        return list(self._leases)

    def is_pinned(self, execution: str) -> bool:
        """Whether a lease (waiting, attached, detached or closing) keeps ``execution`` alive (K13.1)."""
        return any(lease.execution == execution for lease in self._leases.values())

    # --- admission -------------------------------------------------------------------------------

    def admit(
        self, execution: str, language: str, hint: str | None = None, *, executor: str = "", owner: str = ""
    ) -> Admission:
        """Find or create a lease for a client of ``execution`` and ``language`` (K12.8-K12.14).

        Reattach the hinted lease when it is detached and belongs to the same execution and language;
        otherwise, when the claim policy allows it (:class:`ClaimPolicy`; by default only for a client
        that sent no hint), claim the newest detached lease of that execution and language; otherwise
        create one when a slot is free, or queue behind a closing lease, or evict the least recently
        detached lease and queue behind it; otherwise reject (4005) with nothing started. An attached
        lease is never taken, whatever the hint says.

        Reattaching and claiming stay within the creating caller's ``owner``: the lease's server was
        configured with that owner's settings (K14.9), and its documents, diagnostics and progress are
        that owner's session. The hint is a routing hint, not a credential (K12.11), so another owner
        holding a copied hint gets a lease of its own.
        """
        if self._stopping:
            return self._refuse(language, _GOING_AWAY, "shutdown")
        if self.fences.held(execution):
            return self._refuse(language, _SESSION_UNAVAILABLE, "reclaim")
        lease = self._leases.get(hint) if hint else None
        same_place = lease is not None and (lease.execution, lease.language, lease.owner) == (
            execution,
            language,
            owner,
        )
        if lease is not None and same_place and self._is_detached(lease):
            return self._attach(lease, Outcome.REATTACHED)
        policy = self.config.claim_policy
        may_claim = policy is ClaimPolicy.ALWAYS or (policy is ClaimPolicy.UNHINTED and not hint)
        detached = [
            lease
            for lease in self._leases.values()
            if self._is_detached(lease)
            and (lease.execution, lease.language, lease.owner) == (execution, language, owner)
        ]
        if detached and may_claim:
            newest = max(detached, key=lambda lease: (lease.detached_at or 0.0, lease.order))
            return self._attach(newest, Outcome.CLAIMED)
        if self._slots_held() < self.config.capacity:
            lease = self._new_lease(execution, language, executor, Phase.LIVE, owner)
            lease.holds_slot = True
            actions: list[Action] = [StartUpstream(lease.lease_id), self._transition("lease_created", lease)]
            return Admission(Outcome.CREATED, lease.lease_id, lease.generation, actions=tuple(actions))
        return self._admit_at_capacity(execution, language, executor, owner)

    def _admit_at_capacity(self, execution: str, language: str, executor: str, owner: str) -> Admission:
        claimed = {lease.waiting_for for lease in self._leases.values() if lease.phase is Phase.QUEUED}
        actions: list[Action] = []
        victim = next(
            (
                lease
                for lease in sorted(self._leases.values(), key=lambda lease: lease.order)
                if lease.phase is Phase.CLOSING and lease.lease_id not in claimed
            ),
            None,
        )
        if victim is None:
            candidates = [
                lease
                for lease in self._leases.values()
                if self._is_detached(lease) and lease.lease_id not in claimed
            ]
            if not candidates:
                return Admission(
                    Outcome.REJECTED,
                    close_code=_CAPACITY,
                    actions=(self._transition_fields("lease_rejected", language=language, code=_CAPACITY),),
                )
            victim = min(candidates, key=lambda lease: (lease.detached_at or 0.0, lease.order))
            self._evicted += 1
            actions.append(self._transition("lease_evicting", victim))
            actions.extend(self._begin_close(victim, ReleaseReason.CAPACITY))
        lease = self._new_lease(execution, language, executor, Phase.QUEUED, owner)
        lease.waiting_for = victim.lease_id
        actions.append(self._transition("lease_queued", lease))
        return Admission(Outcome.QUEUED, lease.lease_id, lease.generation, actions=tuple(actions))

    def _refuse(self, language: str, code: int, why: str) -> Admission:
        event = self._transition_fields("lease_refused", language=language, code=code, why=why)
        return Admission(Outcome.REFUSED, close_code=code, actions=(event,))

    def _attach(self, lease: _Lease, outcome: Outcome) -> Admission:
        # The deadline is cancelled (and the detach stamp cleared) before the attachment is visible,
        # so a deadline callback already in flight finds the lease attached and does nothing (K12.17).
        now = self._clock()
        detached_for = now - lease.detached_at if lease.detached_at is not None else 0.0
        lease.attached = True
        lease.generation += 1
        lease.detached_at = None
        lease.deadline_at = None
        event = self._transition("lease_reattached", lease, detached_for=int(detached_for), how=outcome.value)
        actions = (CancelDeadline(lease.lease_id), event)
        return Admission(outcome, lease.lease_id, lease.generation, actions=actions)

    def _new_lease(self, execution: str, language: str, executor: str, phase: Phase, owner: str) -> _Lease:
        lease_id = self._new_id()
        while lease_id in self._leases:  # an injected factory may repeat itself
            lease_id = self._new_id()
        self._order += 1
        lease = _Lease(lease_id, execution, language, executor, phase, self._order, owner=owner)
        self._leases[lease_id] = lease
        return lease

    # --- attachments -----------------------------------------------------------------------------

    def detach(
        self, lease_id: str, generation: int, *, how: str | None = None, code: int | None = None
    ) -> list[Action]:
        """The client attached as ``generation`` left (close, transport loss, 5 s write stall: K15.10).
        ``how`` (``closed``, ``lost``, ``stalled``) and the close ``code`` go into the one
        ``lease_detached`` line that says so (K19.2).

        A live lease stays, detached, with a fresh full deadline (K12.16); a queued admission is
        abandoned (it holds no slot); a closing lease just forgets the client. A stale generation
        (the lease was reattached since) changes nothing.
        """
        lease = self._leases.get(lease_id)
        if lease is None or not lease.attached or lease.generation != generation:
            return []
        departure: dict[str, str | int | bool] = {}
        if how is not None:
            departure["how"] = how
        if code is not None:
            departure["code"] = code
        if lease.phase is Phase.QUEUED:
            del self._leases[lease_id]
            return [self._transition("lease_abandoned", lease)]
        lease.attached = False
        lease.ack = None
        if lease.phase is not Phase.LIVE:
            return [self._transition("lease_detached", lease, **departure)]
        now = self._clock()
        lease.detached_at = now
        lease.detach_serial += 1
        lease.deadline_at = now + self.config.detach_timeout
        return [
            ArmDeadline(lease_id, lease.deadline_at, (now, lease.detach_serial)),
            self._transition("lease_detached", lease, **departure),
        ]

    def on_deadline(self, lease_id: str, token: tuple[float, int]) -> list[Action]:
        """A detach deadline fired. It expires the lease only if the lease is still detached from the
        very detach the deadline was armed for (K12.18); anything else is a stale callback."""
        lease = self._leases.get(lease_id)
        if lease is None or not self._is_detached(lease) or (lease.detached_at, lease.detach_serial) != token:
            return [self._transition_fields("lease_stale_deadline")]
        assert lease.deadline_at is not None
        if self._clock() < lease.deadline_at:  # a timer that fired early: try again at the deadline
            return [ArmDeadline(lease_id, lease.deadline_at, token)]
        actions: list[Action] = [self._transition("lease_expired", lease)]
        actions.extend(self._begin_close(lease, ReleaseReason.DETACHED_TIMEOUT))
        return actions

    def request_stop(self, lease_id: str, generation: int, control: ControlKind) -> list[Action]:
        """The attached client sent ``stop`` or ``release``: close the lease, acknowledge once the
        upstream is closed (K16.1, K16.2). From a stale generation or a lease already closing: nothing."""
        lease = self._leases.get(lease_id)
        if (
            lease is None
            or lease.phase is not Phase.LIVE
            or not lease.attached
            or lease.generation != generation
        ):
            return []
        lease.ack = (generation, control)
        return self._begin_close(lease, _CONTROL_REASON[control])

    # --- endings ---------------------------------------------------------------------------------

    def upstream_ended(self, lease_id: str) -> list[Action]:
        """The lease's upstream is closed and its process cleanup is over (or could not be confirmed in
        time). A lease that was not closing ended on its own: ``server_exit``. Releases its slot exactly
        once and hands it to an admission waiting for it. Repeated calls do nothing."""
        lease = self._leases.get(lease_id)
        if lease is None or lease.phase is Phase.QUEUED:
            return []
        actions: list[Action] = []
        if lease.phase is Phase.LIVE:
            actions.extend(self._begin_close(lease, ReleaseReason.SERVER_EXIT, upstream_gone=True))
        assert lease.reason is not None
        if lease.attached:
            if lease.ack is not None and lease.ack[0] == lease.generation:
                actions.append(Acknowledge(lease_id, lease.generation, lease.ack[1]))
            else:
                actions.append(EndAttachment(lease_id, lease.generation, lease.reason))
            lease.attached = False
        actions.extend(self._release(lease))
        return actions

    def close_execution(
        self, execution: str, reason: ReleaseReason = ReleaseReason.RUNTIME_STOP
    ) -> list[Action]:
        """Explicit task stop, execution replacement or removal: close every lease of ``execution``,
        attached ones included (K12.20, K13.4). Waiting admissions for it are refused with 4002."""
        actions: list[Action] = []
        for lease in sorted(self._leases.values(), key=lambda lease: lease.order):
            if lease.execution != execution:
                continue
            if lease.phase is Phase.QUEUED:
                actions.extend(self._reject_waiting(lease, _SESSION_UNAVAILABLE))
            elif lease.phase is Phase.LIVE:
                actions.extend(self._begin_close(lease, reason))
        return actions

    def shutdown(self) -> list[Action]:
        """The broker is stopping: refuse new admissions, cancel deadlines, close every lease
        (``backend_stop``), refuse waiting admissions with 1001 (K12.21)."""
        self._stopping = True
        actions: list[Action] = []
        for lease in sorted(self._leases.values(), key=lambda lease: lease.order):
            if lease.phase is Phase.QUEUED:
                actions.extend(self._reject_waiting(lease, _GOING_AWAY))
            elif lease.phase is Phase.LIVE:
                actions.extend(self._begin_close(lease, ReleaseReason.BACKEND_STOP))
        return actions

    def _begin_close(
        self, lease: _Lease, reason: ReleaseReason, *, upstream_gone: bool = False
    ) -> list[Action]:
        """LIVE -> CLOSING with ``reason`` (the first reason wins: a closing lease is never re-closed)."""
        assert lease.phase is Phase.LIVE
        actions: list[Action] = []
        if lease.deadline_at is not None:
            actions.append(CancelDeadline(lease.lease_id))
        lease.phase = Phase.CLOSING
        lease.reason = reason
        lease.deadline_at = None
        if lease.attached and reason in (ReleaseReason.RUNTIME_STOP, ReleaseReason.BACKEND_STOP):
            # Nothing the client asked for: tell it now rather than after the teardown.
            actions.append(EndAttachment(lease.lease_id, lease.generation, reason))
            lease.attached = False
        actions.append(self._transition("lease_closing", lease))
        if not upstream_gone:
            actions.append(CloseUpstream(lease.lease_id, reason))
        return actions

    def _release(self, lease: _Lease) -> list[Action]:
        assert lease.phase is Phase.CLOSING and lease.reason is not None
        del self._leases[lease.lease_id]
        lease.phase = Phase.CLOSED
        actions: list[Action] = []
        if lease.holds_slot:
            lease.holds_slot = False
            self._released[lease.reason] += 1
        actions.append(self._transition("lease_released", lease))
        for waiter in sorted(self._leases.values(), key=lambda other: other.order):
            if waiter.phase is Phase.QUEUED and waiter.waiting_for == lease.lease_id:
                waiter.phase = Phase.LIVE
                waiter.waiting_for = None
                waiter.holds_slot = True
                actions.append(StartUpstream(waiter.lease_id))
                actions.append(self._transition("lease_created", waiter))
                break
        return actions

    def _reject_waiting(self, lease: _Lease, code: int) -> list[Action]:
        del self._leases[lease.lease_id]
        return [
            RejectWaiting(lease.lease_id, lease.generation, code),
            self._transition("lease_abandoned", lease, code=code),
        ]

    # --- reclaim fences (K13.3) -------------------------------------------------------------------

    def begin_reclaim(self, execution: str) -> ReclaimTicket | None:
        """Start reclaiming ``execution``: refused (``None``) while a lease pins it. Otherwise a fence is
        held, and admission onto the execution is refused until :meth:`end_reclaim`."""
        return self.fences.begin(execution, pinned=self.is_pinned(execution))

    def confirm_reclaim(self, ticket: ReclaimTicket) -> bool:
        """The recheck just before cleanup: the ticket's fence is still the current one and nothing pins
        the execution."""
        return self.fences.confirm(ticket, pinned=self.is_pinned(ticket.execution))

    def end_reclaim(self, ticket: ReclaimTicket) -> None:
        """Drop the fence (the reclaim finished or was given up). A stale ticket does nothing."""
        self.fences.end(ticket)

    # --- helpers ---------------------------------------------------------------------------------

    @staticmethod
    def _is_detached(lease: _Lease) -> bool:
        return lease.phase is Phase.LIVE and not lease.attached

    def _slots_held(self) -> int:
        return sum(1 for lease in self._leases.values() if lease.holds_slot)

    def _transition(self, event: str, lease: _Lease, **extra: str | int | bool) -> Transition:
        fields: dict[str, str | int | bool] = {"language": lease.language[:32]}
        if lease.executor:
            fields["executor"] = lease.executor[:16]
        if lease.reason is not None:
            fields["reason"] = lease.reason.value
        fields["generation"] = lease.generation
        fields.update(extra)
        return self._transition_fields(event, **fields)

    def _transition_fields(self, event: str, **fields: str | int | bool) -> Transition:
        counts = self.counts()
        return Transition(
            event,
            {**fields, "active": counts.active, "detached": counts.detached, "capacity": counts.capacity},
        )


def transitions(actions: Iterable[Action]) -> list[Transition]:
    """The transitions among ``actions``, in order (for logging)."""
    return [action for action in actions if isinstance(action, Transition)]
