"""The freshness rule of diagnostics (issue 20 items 1-2) and the change ledger it reads, with plain values.

Each case is a situation measured on real servers: pyright republishes an open importer of a changed file
with its old version number once it re-checked it, publishes a file it only bound before checking it
(with its analysis progress open), and never republishes a file the change does not reach;
typescript-language-server publishes without versions and never publishes an empty set again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from kandev_lsp.intel.reading.freshness import (
    RECHECK_QUIET,
    UNCHANGED_QUIET,
    Freshness,
    file_freshness,
)
from kandev_lsp.intel.runtime.ledger import MAX_CHANGES, Activity, Change, ChangeLedger


@dataclass(frozen=True)
class Published:
    version: int | None
    diagnostics: tuple[Any, ...]
    received_at: float


ERROR = ({"message": "boom"},)


def _judge(
    publication: Published | None,
    *,
    version: int | None = 1,
    own: Change | None = None,
    other: Change | None = None,
    now: float = 100.0,
    last: float | None = None,
    progress: tuple[str, ...] = (),
) -> Freshness:
    last_published = last if last is not None else (publication.received_at if publication else None)
    return file_freshness(
        label="src/core.py",
        version=version,
        publication=publication,
        own=own,
        other=other,
        activity=Activity(last_published, progress),
        now=now,
    )


def test_an_importer_published_before_the_change_of_a_file_it_imports_is_not_current() -> None:
    """Item 1: core.py's publication is for its current version, but utils.py changed after it."""
    utils = Change("file:///utils.py", "src/utils.py", sent_at=50.0, had_at=50.01)
    before = Published(1, ERROR, 40.0)
    judged = _judge(before, other=utils, now=51.0)
    assert judged == Freshness("rechecking", "diagnostics of src/core.py after the change of src/utils.py")
    after = Published(1, ERROR * 3, 54.5)  # pyright re-checked it: same version, new errors
    assert _judge(after, other=utils, now=55.0).state == "current"


def test_a_publication_between_the_send_and_the_fence_answer_does_not_count() -> None:
    """It may have been written before the server read the change."""
    change = Change("file:///utils.py", "src/utils.py", sent_at=50.0, had_at=50.2)
    assert _judge(Published(1, (), 50.1), other=change, now=50.9).state == "rechecking"
    unanswered = Change("file:///utils.py", "src/utils.py", sent_at=50.0, had_at=None)
    assert _judge(Published(1, (), 60.0), other=unanswered, now=60.9).state == "rechecking"


def test_an_unversioned_publication_must_follow_the_files_own_change() -> None:
    """Item 2: typescript-language-server's publications carry no version."""
    own = Change("file:///a.ts", "a.ts", sent_at=50.0, had_at=50.01)
    old = Published(None, ERROR, 45.0)
    judged = _judge(old, version=3, own=own, now=50.5)
    assert judged == Freshness("stale", "diagnostics of src/core.py after its change")
    fresh = Published(None, ERROR * 2, 50.7)
    assert _judge(fresh, version=3, own=own, now=50.9).state == "settling"  # publications not quiet yet
    assert _judge(fresh, version=3, own=own, now=51.3).state == "current"


def test_a_freshly_opened_file_without_a_publication_is_pending() -> None:
    opened = Change("file:///a.ts", "a.ts", sent_at=50.0, had_at=50.01, opened=True)
    assert _judge(None, own=opened, now=52.0) == Freshness("pending", "the first diagnostics of src/core.py")


def test_a_versioned_publication_for_an_older_version_is_stale() -> None:
    assert _judge(Published(2, (), 40.0), version=3, now=99.0).state == "stale"
    assert _judge(Published(3, (), 40.0), version=3, now=99.0).state == "current"


def test_work_in_progress_keeps_a_publication_settling() -> None:
    """pyright published utils.py bound but not checked (1 error), with "1 file to analyze" open."""
    judged = _judge(Published(2, ERROR, 99.0), version=2, now=99.5, progress=("1 file to analyze",))
    assert judged == Freshness("settling", "the server's work in progress (1 file to analyze)")
    assert _judge(Published(2, ERROR, 99.0), version=2, now=99.05).state == "settling"  # its grace
    assert _judge(Published(2, ERROR, 99.0), version=2, now=99.5).state == "current"


@pytest.mark.parametrize(
    ("publication", "silent_for", "state"),
    [
        (Published(1, ERROR, 40.0), RECHECK_QUIET - 0.1, "rechecking"),  # pyright may still check it
        (Published(1, ERROR, 40.0), RECHECK_QUIET + 0.1, "quiet"),  # a file the change did not reach
        (Published(None, (), 40.0), UNCHANGED_QUIET + 0.1, "quiet"),  # clean stays clean (tsserver)
        (Published(None, ERROR, 40.0), UNCHANGED_QUIET + 0.1, "rechecking"),  # errors are republished
    ],
)
def test_a_file_not_republished_after_another_change_ends_quiet(
    publication: Published, silent_for: float, state: str
) -> None:
    change = Change("file:///utils.py", "src/utils.py", sent_at=50.0, had_at=50.01)
    judged = _judge(publication, version=None if publication.version is None else 1, other=change,
                    now=50.0 + silent_for, last=49.0)  # fmt: skip
    assert judged.state == state
    assert judged.final == (state == "quiet")


def test_a_clean_file_whose_own_change_got_no_publication_ends_quiet() -> None:
    """typescript-language-server does not publish an empty set again (as post-edit receipts have it)."""
    own = Change("file:///a.ts", "a.ts", sent_at=50.0, had_at=50.01)
    assert _judge(Published(None, (), 40.0), version=2, own=own, now=50.5, last=40.0).state == "stale"
    assert _judge(Published(None, (), 40.0), version=2, own=own, now=51.2, last=40.0).state == "quiet"
    # another publication meanwhile (the server is still at work) restarts the window
    assert _judge(Published(None, (), 40.0), version=2, own=own, now=51.2, last=50.8).state == "stale"


def test_a_pulled_answer_is_current() -> None:
    change = Change("file:///utils.py", "src/utils.py", sent_at=50.0, had_at=None)
    judged = file_freshness(
        label="a.py", version=2, publication=Published(2, (), 50.0), pulled=True, own=None,
        other=change, activity=Activity(None), now=50.0,
    )  # fmt: skip
    assert judged.state == "current"


def test_the_ledger_keeps_the_latest_change_of_another_file_and_fences() -> None:
    ledger = ChangeLedger()
    ledger.note("u:a", "a.py", 1.0, opened=True)
    assert ledger.latest_other("u:b") is None  # an open is not a change of the program
    ledger.note("u:a", "a.py", 2.0)
    ledger.note("u:b", "b.py", 3.0)
    ledger.note("u:b", "b.py", 4.0)
    assert ledger.unfenced
    other_of_b = ledger.latest_other("u:b")
    assert other_of_b is not None and (other_of_b.uri, other_of_b.sent_at) == ("u:a", 2.0)
    other_of_a = ledger.latest_other("u:a")
    assert other_of_a is not None and (other_of_a.uri, other_of_a.sent_at, other_of_a.had_at) == (
        "u:b",
        4.0,
        None,
    )
    ledger.fence_sent()
    assert not ledger.unfenced
    ledger.note("u:c", "c.py", 6.0)  # after the fence was sent: not covered by its answer
    ledger.fenced(5.0, 5.5)
    assert [(c.uri, c.had_at) for c in (ledger.own("u:a"), ledger.own("u:b"), ledger.own("u:c")) if c] == [
        ("u:a", 5.5), ("u:b", 5.5), ("u:c", None),
    ]  # fmt: skip
    ledger.note("u:d", "d.ts", 7.0, had=True)  # seen on disk by a server that watches files itself
    seen = ledger.own("u:d")
    assert seen is not None and seen.had_at == 7.0


def test_the_ledger_is_bounded() -> None:
    ledger = ChangeLedger()
    for n in range(MAX_CHANGES + 10):
        ledger.note(f"u:{n}", f"{n}.py", float(n))
    assert ledger.own("u:0") is None and ledger.own(f"u:{MAX_CHANGES + 9}") is not None
    latest = ledger.latest_other("u:0")
    assert latest is not None and latest.uri == f"u:{MAX_CHANGES + 9}"
