"""Pending mutations waiting for approval: the headless half of the approval protocol (B2.4, B3.6, B7.4).

Without MCP elicitation, a mutation first answers with its preview and a ``transactionId``; the next
call ``{transactionId, approve: true}`` applies it (after revalidating the bound document versions and
file digests) and ``approve: false`` discards it. With elicitation a mutation is parked only when the
person dismissed the question (or it failed or went unanswered), and that second call asks the person
again: the coordinator checks the id without spending it (:meth:`TransactionStore.check`), so a
dismissed question leaves the transaction pending. :class:`TransactionStore` keeps what the second call needs,
under rules that make an id worth nothing to anyone but the caller that got it:

* ids come from :func:`secrets.token_urlsafe` (unguessable, 192 bits);
* a transaction expires (300 s by default): an old preview is not an approval of today's files;
* an id is single use: a replay says whether it was already applied, declined or taken, and applies
  nothing (an agent retrying a call must not apply an edit twice);
* the store is bounded: past ``max_pending`` the oldest pending transaction is dropped, and the ids
  remembered for replay detection are bounded too.

Pure apart from the clock, which is a parameter so expiry is tested without sleeping.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from kandev_lsp.intel.errors import IntelError

if TYPE_CHECKING:
    from kandev_lsp.intel.edits.plan import EditPlan
    from kandev_lsp.intel.files.workspace import WorkspaceFile

__all__ = [
    "DEFAULT_MAX_PENDING",
    "DEFAULT_TTL",
    "PendingMutation",
    "TransactionError",
    "TransactionStore",
]

#: Seconds a previewed mutation may wait for its approval.
DEFAULT_TTL: Final = 300.0
#: Pending transactions kept at most; the oldest goes first.
DEFAULT_MAX_PENDING: Final = 64
#: Finished (or dropped) ids remembered to tell a replay from an unknown id.
DEFAULT_MAX_FINISHED: Final = 1024


@dataclass(frozen=True, slots=True)
class PendingMutation:
    """What the approval call needs to revalidate and apply a previewed mutation.

    :param plan: the validated edit (room A's :class:`~kandev_lsp.intel.edits.plan.EditPlan`).
    :param digests: absolute path -> sha256 of the text the preview was made from (rechecked before apply).
    :param bound: URI -> the server-facing document version the edit was made against (rechecked too).
    :param files: the files the tool targeted (with the plan's touched files, the diagnostics scope).
    :param baseline: display path -> the problems before the edit (the receipt's "before").
    """

    tool: str
    plan: EditPlan
    digests: Mapping[str, str]
    bound: Mapping[str, int | None]
    files: tuple[WorkspaceFile, ...] = ()
    commands: tuple[Mapping[str, Any], ...] = ()
    result: Mapping[str, Any] = field(default_factory=dict)
    preview: Mapping[str, Any] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()
    baseline: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    #: Whether approving "all" may carry over to later steps (never with resources or commands, B7.4).
    continuable: bool = True


class TransactionError(IntelError):
    """A ``transactionId`` that cannot be applied: unknown, expired, or already used (replayed)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message, transactionStatus=reason)
        self.reason = reason


@dataclass(slots=True)
class _Entry:
    pending: PendingMutation
    created: float


#: How a replay names what became of its transaction.
_USED: Final = {
    "taken": "already taken by an earlier approval call",
    "applied": "already applied",
    "declined": "already declined",
    "conflict": "already used: its approval found a conflict",
    "failed": "already used: applying it failed and every file was restored",
    "uncertain": "already used: applying it ended uncertain",
    "rejected": "already used: the edit was rejected",
}


def _short(transaction_id: str) -> str:
    """Enough of an id to recognise it in a message, never an echo of arbitrary input at length."""
    return transaction_id[:8] + ("…" if len(transaction_id) > 8 else "")


class TransactionStore:
    """Pending mutations by unguessable id (see the module docstring).

    :param ttl: seconds a transaction stays valid.
    :param max_pending: pending transactions kept at most.
    :param clock: monotonic seconds (a parameter for tests).
    """

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        max_pending: int = DEFAULT_MAX_PENDING,
        max_finished: int = DEFAULT_MAX_FINISHED,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl <= 0 or max_pending < 1 or max_finished < 1:
            raise ValueError("ttl, max_pending and max_finished must be positive")
        self.ttl = ttl
        self.max_pending = max_pending
        self.max_finished = max_finished
        self._clock = clock
        self._pending: OrderedDict[str, _Entry] = OrderedDict()
        #: id -> what became of it ("applied", "declined", "expired", "dropped", "taken", ...).
        self._finished: OrderedDict[str, str] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pending)

    def put(self, pending: PendingMutation) -> str:
        """Keep ``pending``; return its new id. Drops expired ones, then the oldest past the bound."""
        self._expire()
        while len(self._pending) >= self.max_pending:
            old, _ = self._pending.popitem(last=False)
            self._finish(old, "dropped")
        transaction_id = secrets.token_urlsafe(24)
        self._pending[transaction_id] = _Entry(pending, self._clock())
        return transaction_id

    def take(self, transaction_id: str) -> PendingMutation:
        """Remove and return the pending mutation: the id is spent whatever the caller does next.

        The caller reports the outcome with :meth:`settle`, so a replay can say what happened.

        :raises TransactionError: unknown, expired, already used or dropped; nothing is applied.
        """
        pending = self.check(transaction_id)
        del self._pending[transaction_id]
        self._finish(transaction_id, "taken")
        return pending

    def check(self, transaction_id: str) -> PendingMutation:
        """The pending mutation, refused exactly as :meth:`take` would refuse it, but not spent: the
        approval step asks the person first when it can, and a dismissed question leaves it pending.

        :raises TransactionError: unknown, expired, already used or dropped (an expired one is
            forgotten, as :meth:`take` would).
        """
        entry = self._pending.get(transaction_id)
        if entry is None:
            raise self._refusal(transaction_id)
        age = self._clock() - entry.created
        if age > self.ttl:
            del self._pending[transaction_id]
            self._finish(transaction_id, "expired")
            raise TransactionError(
                f"transaction {_short(transaction_id)} expired: it was prepared {age:.0f} s ago and "
                f"approvals are accepted for {self.ttl:.0f} s. Nothing was applied; run the mutation "
                "again for a fresh preview.",
                "expired",
            )
        return entry.pending

    def remaining(self, transaction_id: str) -> float:
        """Seconds before a pending transaction expires (0 when it is not pending)."""
        entry = self._pending.get(transaction_id)
        if entry is None:
            return 0.0
        return max(0.0, self.ttl - (self._clock() - entry.created))

    def settle(self, transaction_id: str, outcome: str) -> None:
        """Record what became of a taken transaction ("applied", "declined", "conflict", ...)."""
        if transaction_id in self._finished:
            self._finished[transaction_id] = outcome

    def peek(self, transaction_id: str) -> PendingMutation | None:
        """The pending mutation, if the id is pending and not expired (nothing is consumed)."""
        entry = self._pending.get(transaction_id)
        if entry is None or self._clock() - entry.created > self.ttl:
            return None
        return entry.pending

    # -- internals -------------------------------------------------------------------------------------
    def _expire(self) -> None:
        now = self._clock()
        for transaction_id, entry in list(self._pending.items()):
            if now - entry.created > self.ttl:
                del self._pending[transaction_id]
                self._finish(transaction_id, "expired")

    def _finish(self, transaction_id: str, outcome: str) -> None:
        self._finished[transaction_id] = outcome
        self._finished.move_to_end(transaction_id)
        while len(self._finished) > self.max_finished:
            self._finished.popitem(last=False)

    def _refusal(self, transaction_id: str) -> TransactionError:
        outcome = self._finished.get(transaction_id)
        shown = _short(transaction_id)
        if outcome is None:
            return TransactionError(
                f"unknown transactionId {shown}: this session never issued it, or it was forgotten long "
                "ago. Nothing was applied; run the mutation again to get a new transactionId.",
                "unknown",
            )
        if outcome == "expired":
            return TransactionError(
                f"transaction {shown} expired (approvals are accepted for {self.ttl:.0f} s). Nothing was "
                "applied; run the mutation again for a fresh preview.",
                "expired",
            )
        if outcome == "dropped":
            return TransactionError(
                f"transaction {shown} was dropped: more than {self.max_pending} mutations were waiting "
                "for approval. Nothing was applied; run the mutation again.",
                "dropped",
            )
        done = _USED.get(outcome, f"already used ({outcome})")
        return TransactionError(
            f"transaction {shown} was {done}: a transactionId is used once. Nothing more was applied; "
            "check the files, and run the mutation again if it is still needed.",
            "used",
        )
