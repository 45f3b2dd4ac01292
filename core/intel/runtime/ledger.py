"""What one server was told about the workspace's files, and since when it is known to have it (issue 20
items 1-3: the freshness of diagnostics).

A diagnostics publication can only vouch for the text the server had when it made it. Two facts decide
whether a publication is about the code on disk now, and both come from here:

- **the file's own last text**: when its ``didOpen`` / ``didChange`` was sent (a publication without a
  version says nothing else about which text it describes);
- **the other files' changes**: a file that imports a changed one may get new errors without changing
  itself (a parameter added to ``make_str`` in ``utils.py`` breaks its callers in ``core.py``), so its
  publication must come after the server had those changes too. Changes are what alter the server's
  program: a ``didChange``, a watched file written, created or deleted (``didChangeWatchedFiles``), a
  document closed because its file went, a file operation; and for a server that watches files itself
  (typescript-language-server registers no watchers), a file of its language written on disk.

"Known to have it" is not "sent": a publication the server wrote just before reading a ``didChange`` can
be read after it was sent. After each batch of changes :meth:`ChangeLedger.fence` is due: the caller sends
one request the server answers at once (a ``$/`` request, which a server must refuse with MethodNotFound,
JSON-RPC's cheapest round trip); the server reads messages in order, so once that answer is in, every
change sent before the request was read, and a publication received afterwards was made with them
(:attr:`Change.had_at`). Until then the change counts as not yet had.

Pure bookkeeping on the caller's clock (the LSP client's); bounded (:data:`MAX_CHANGES`, the oldest go
first: only the latest changes decide).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["FENCE_METHOD", "MAX_CHANGES", "Activity", "Change", "ChangeLedger"]

#: The request that tells when the server has read every change sent before it.
FENCE_METHOD: Final = "$/kandev/fence"
#: Files whose last change is remembered at most.
MAX_CHANGES: Final = 512


@dataclass(slots=True)
class Change:
    """The last thing one file's server was told of it."""

    uri: str
    #: The file's model-facing path (what an answer names when it waits for this change).
    label: str
    #: When it was sent (or seen on disk, for a server that watches files itself).
    sent_at: float
    #: When the server is known to have had it (the answer to the next fence), None until then.
    had_at: float | None = None
    #: An open: the file's first text, the same as on disk, not a change of the server's program.
    opened: bool = False


@dataclass(frozen=True, slots=True)
class Activity:
    """What a server is doing: when it last published diagnostics of any file, and the titles of the
    work-done progress it reports (analysis passes, project loading)."""

    last_published: float | None
    progress: tuple[str, ...] = ()


class ChangeLedger:
    """The last change of each file one server was told of (see the module docstring)."""

    def __init__(self) -> None:
        self._changes: dict[str, Change] = {}
        self._unfenced = False
        #: The latest program change (not an open) and the latest one of another file than it, kept as
        #: changes are noted: :meth:`latest_other` answers from them without a scan.
        self._latest: Change | None = None
        self._runner_up: Change | None = None

    def note(self, uri: str, label: str, at: float, *, opened: bool = False, had: bool = False) -> None:
        """``uri`` was sent to the server at ``at`` (``opened``: its first text); ``had``: the server
        cannot be asked when it read it (a change it sees through its own file watching), so ``at``
        stands for both."""
        previous = self._changes.pop(uri, None)
        if previous is not None and previous.opened is False and opened:
            opened = False  # re-opened after a close: the close was the change
        change = Change(uri, label, at, at if had else None, opened)
        self._changes[uri] = change
        if not had:
            self._unfenced = True
        if not opened:
            if self._latest is not None and self._latest.uri != uri:
                self._runner_up = self._latest
            self._latest = change
        if len(self._changes) > MAX_CHANGES:
            self._changes.pop(next(iter(self._changes)))

    @property
    def unfenced(self) -> bool:
        """Whether changes were noted since the last fence was sent."""
        return self._unfenced

    def fence_sent(self) -> None:
        """A fence request goes out now: the changes noted so far are covered by its answer."""
        self._unfenced = False

    def fenced(self, sent_at: float, answered_at: float) -> None:
        """The fence sent at ``sent_at`` was answered at ``answered_at``: every change sent before it was
        read by the server."""
        for change in reversed(self._changes.values()):
            if change.had_at is None and change.sent_at <= sent_at:
                change.had_at = answered_at

    def own(self, uri: str) -> Change | None:
        """The last thing sent of ``uri`` (its open or its last change), if remembered."""
        return self._changes.get(uri)

    def since(self, at: float) -> list[Change]:
        """The program changes (not opens) sent after ``at``, oldest first."""
        return [change for change in self._changes.values() if change.sent_at > at and not change.opened]

    def latest_other(self, uri: str) -> Change | None:
        """The latest change of another file than ``uri`` that alters the server's program (opens do
        not), if any: a publication of ``uri`` older than it may miss what that change broke."""
        latest = self._latest
        if latest is None:
            return None
        return latest if latest.uri != uri else self._runner_up
