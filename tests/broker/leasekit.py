"""Shared pieces for the lease tests: a settable clock and a book with readable ids."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TypeVar

from kandev_lsp.broker.leases import Action, ClaimPolicy, LeaseBook, LeaseConfig

A = TypeVar("A")


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make_book(
    capacity: int = 8, detach_timeout: float = 3600.0, claim_policy: ClaimPolicy = ClaimPolicy.UNHINTED
) -> tuple[LeaseBook, FakeClock]:
    clock = FakeClock()
    counter = itertools.count(1)
    book = LeaseBook(
        LeaseConfig(capacity=capacity, detach_timeout=detach_timeout, claim_policy=claim_policy),
        clock=clock,
        new_lease_id=lambda: f"lease-{next(counter)}",
    )
    return book, clock


def of_type(actions: Iterable[Action], kind: type[A]) -> list[A]:
    return [action for action in actions if isinstance(action, kind)]
