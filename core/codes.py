"""The numbers kandev-lsp answers with when no server can be had: stream close codes and exit codes.

One table per front end, keyed by the same strings (:class:`kandev_lsp.resolver.MissingReason` and
:class:`kandev_lsp.lifecycle.LaunchFailure` values), so the resolver's ``resolve --json`` contract, the
``resolve`` and ``run`` commands and the stream (``stream/contract.py``, which wraps these numbers in its
``CloseCode`` enum) all read one source.

Why a module of its own, with no imports: ``kandev-lsp resolve --json`` reports the close code a missing
server would get (``closeCode``), and it runs in short-lived processes on agentctl's hot path (issue 7
item 26). Reading the number from the stream's contract module pulled ``json`` and ``urllib.parse`` into
every resolve, and had the resolver reach up into the stream layer for a constant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Mapping

# Stream close codes (K9, the task host's reference contract; docs/stream-contract.md).
CLOSE_GOING_AWAY: Final = 1001  # install cancelled by the client, or teardown
CLOSE_INSTALLABLE_NOT_REQUESTED: Final = 4001  # K9.4
CLOSE_INSTALL_FAILED: Final = 4003  # K9.6
CLOSE_CAPACITY: Final = 4005  # K9.8: every session slot is taken; nothing was started
CLOSE_NO_INSTALLER: Final = 4007  # K9.10
CLOSE_START_FAILED: Final = 4008  # K9.11

#: The close code for each way no server could be had (a ``LaunchFailure`` value). An unknown language
#: is answered 400 before the upgrade; one that slips through (a plugin unloaded meanwhile) is
#: "unavailable here" (4007), as is a managed cache that cannot be used.
LAUNCH_CLOSE_CODES: Final[Mapping[str, int]] = {
    "installable_not_requested": CLOSE_INSTALLABLE_NOT_REQUESTED,
    "no_installer": CLOSE_NO_INSTALLER,
    "cache_unavailable": CLOSE_NO_INSTALLER,
    "unsupported_language": CLOSE_NO_INSTALLER,
    "install_failed": CLOSE_INSTALL_FAILED,
    "install_cancelled": CLOSE_GOING_AWAY,
    "start_failed": CLOSE_START_FAILED,
}

#: The close code ``kandev-lsp resolve --json`` reports as ``closeCode`` for each missing reason (a
#: ``MissingReason`` value); an unknown language has none.
MISSING_CLOSE_CODES: Final[Mapping[str, int]] = {
    reason: LAUNCH_CLOSE_CODES[reason]
    for reason in ("installable_not_requested", "no_installer", "cache_unavailable")
}

# Exit codes of ``kandev-lsp resolve`` (docs/resolve-contract.md); ``run`` exits with the same when no
# server was found.
EXIT_FOUND: Final = 0

#: ``resolve``'s exit code for each missing reason (a ``MissingReason`` value).
RESOLVE_EXIT_CODES: Final[Mapping[str, int]] = {
    "installable_not_requested": 10,
    "no_installer": 11,
    "cache_unavailable": 12,
    "unsupported_language": 13,
}


def missing_close_code(reason: str | None) -> int | None:
    """The stream close code for a server missing for ``reason`` (None: found, or an unknown language)."""
    return MISSING_CLOSE_CODES.get(reason) if reason else None


def resolve_exit_code(reason: str | None) -> int:
    """``kandev-lsp resolve``'s exit code for a server missing for ``reason`` (None: found, 0)."""
    return RESOLVE_EXIT_CODES[reason] if reason else EXIT_FOUND
