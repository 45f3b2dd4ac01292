"""When a file's diagnostics are the server's word on the code on disk now (issue 20 items 1-2, B6.12).

``current`` means: a publication (or pull result) received after the file's own last change, and after
the server had every change of another file since (a file that imports a changed one may get errors
without changing itself); never a publication older than a change it may depend on. What a server tells
about itself decides the rest:

- a publication with a ``version`` (pyright, gopls) is for that document version: one for an older
  version is ``stale``; an unversioned one (typescript-language-server) is about the text the server had
  when it was received, so it must come after the change was had (the ledger's fence, :mod:`ledger`);
- a server busy with work-done progress is still working: pyright publishes a file it has only bound
  (not yet checked) in one pass and checks it in the next, with its "N files to analyze" progress open
  in between, so a publication during progress is ``settling``;
- typescript-language-server publishes each kind of diagnostics (syntax, semantic, suggestion) as it
  comes, without a version: its publications count once they went quiet for ``quiet`` seconds;
- a versioned publication counts after ``grace`` seconds (the progress a server opens right after it
  arrives a round trip later).

A file whose publication predates a change it may depend on gets a new one when the server re-checked it;
one the change does not reach may get none (pyright re-checks only the importers of a changed file;
typescript-language-server does not publish an empty set again). It is ``quiet`` once the server has said
nothing at all for a window after the change and is idle: its last word stands, unconfirmed, never
``current``. The window is :data:`UNCHANGED_QUIET` (1 s) for a file whose last publication was empty and
unversioned (the typescript-language-server case, as post-edit receipts have it), :data:`RECHECK_QUIET`
(1.5 s) otherwise: pyright starts analysing 250 ms after the last change, and while it checks a file (3 s
for click's core.py) it neither publishes nor answers, so the caller also asks whether the server answers
at once (``ManagedServer.idle``) before it takes the verdict. Until then the answer is ``settling``, with
what it awaits.

Pure: plain values in, the state and what is awaited out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from kandev_lsp.intel.runtime.ledger import Activity, Change

__all__ = [
    "RECHECK_QUIET",
    "UNCHANGED_QUIET",
    "Activity",
    "Freshness",
    "Publication",
    "file_freshness",
]

#: Seconds of a server's silence after a change after which a clean file's last (empty, unversioned)
#: publication stands as ``quiet``.
UNCHANGED_QUIET: Final = 1.0
#: Seconds of a server's silence after another file's change after which a file it did not republish
#: counts as untouched by it (``quiet``), provided it is idle then (the caller asks it: a fence answered at
#: once; pyright starts analysing 250 ms after the last change and blocks while it checks a file).
RECHECK_QUIET: Final = 1.5
#: Seconds an unversioned publication must be followed by silence to count (per-kind publications).
DEFAULT_QUIET: Final = 0.5
#: Seconds a versioned publication must have been in before it counts (progress opened after it).
DEFAULT_GRACE: Final = 0.1

State = Literal["current", "quiet", "settling", "stale", "pending", "rechecking"]


class Publication(Protocol):
    """The latest ``publishDiagnostics`` for one URI (``kandev_lsp.lsp.DiagnosticsEntry`` fits)."""

    @property
    def version(self) -> int | None: ...
    @property
    def diagnostics(self) -> Sequence[Any]: ...
    @property
    def received_at(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Freshness:
    """One file's state and, unless it is ``current`` or ``quiet``, what it waits for."""

    state: State
    awaiting: str | None = None

    @property
    def final(self) -> bool:
        """Whether waiting longer cannot change the answer (``current`` or ``quiet``)."""
        return self.state in ("current", "quiet")


def file_freshness(
    *,
    label: str,
    version: int | None,
    publication: Publication | None,
    pulled: bool = False,
    own: Change | None,
    other: Change | None,
    activity: Activity,
    now: float,
    quiet: float = DEFAULT_QUIET,
    grace: float = DEFAULT_GRACE,
) -> Freshness:
    """The freshness of one file's diagnostics (rules in the module docstring).

    :param version: the server-facing version of the file's open document (None when not open).
    :param pulled: ``publication`` is a pull answer asked after every change was sent: current as such.
    :param own: the last thing the server was sent of this file (its open or change).
    :param other: the latest change of another file the server was told of (or saw).
    """
    if pulled and publication is not None:
        return Freshness("current")
    if publication is None:
        return Freshness("pending", f"the first diagnostics of {label}")
    received = publication.received_at
    versioned = publication.version is not None and version is not None
    if versioned:
        assert publication.version is not None and version is not None
        if publication.version < version:
            return Freshness("stale", f"diagnostics of {label} version {version}")
    elif own is not None and not _after(received, own):
        if not publication.diagnostics and _silent(activity, own, received, now, UNCHANGED_QUIET):
            return Freshness("quiet")
        return Freshness("stale", f"diagnostics of {label} after its change")
    if other is not None and not _after(received, other):
        window = UNCHANGED_QUIET if not versioned and not publication.diagnostics else RECHECK_QUIET
        if _silent(activity, other, received, now, window):
            return Freshness("quiet")
        return Freshness("rechecking", f"diagnostics of {label} after the change of {other.label}")
    if activity.progress:
        return Freshness("settling", f"the server's work in progress ({', '.join(activity.progress)})")
    if versioned:
        if now - received < grace:
            return Freshness("settling", f"the server to settle after the diagnostics of {label}")
        return Freshness("current")
    last = activity.last_published if activity.last_published is not None else received
    if now - max(received, last) < quiet:
        return Freshness("settling", f"publications to go quiet ({quiet:g} s) after those of {label}")
    return Freshness("current")


def _after(received: float, change: Change) -> bool:
    """Whether a publication received at ``received`` was made after the server had ``change``."""
    return change.had_at is not None and received > change.had_at


def _silent(activity: Activity, change: Change, received: float, now: float, window: float) -> bool:
    """Whether the server said nothing for ``window`` seconds since ``change`` was sent (and since its
    last publication of anything), with no work in progress."""
    if activity.progress:
        return False
    since = max(change.sent_at, received, activity.last_published or 0.0)
    return now - since >= window
