"""The numbers kandev-lsp answers with: stream close codes and the exit statuses of every command.

One table per front end, keyed by the same strings (:class:`kandev_lsp.resolver.MissingReason` and
:class:`kandev_lsp.lifecycle.LaunchFailure` values), so the resolver's ``resolve --json`` contract, every
command's exit status (:class:`ExitStatus`) and the stream (``stream/contract.py``, which wraps these
numbers in its ``CloseCode`` enum) all read one source.

Why a module of its own, importing nothing but :mod:`enum` (loaded anyway: the resolver's reasons are
enums): ``kandev-lsp resolve --json`` reports the close code a missing server would get (``closeCode``),
and it runs in short-lived processes on agentctl's hot path (issue 7 item 26). Reading the number from
the stream's contract module pulled ``json`` and ``urllib.parse`` into every resolve, and had the resolver
reach up into the stream layer for a constant.
"""

from __future__ import annotations

from enum import IntEnum
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


class ExitStatus(IntEnum):
    """The exit status of every ``kandev-lsp`` command, one per kind of outcome (issue 17 item 9).

    A member's name is the kind it stands for, upper-cased: the failure kinds are the
    :class:`~kandev_lsp.resolver.MissingReason` and :class:`~kandev_lsp.lifecycle.LaunchFailure` values
    (the keys of :data:`LAUNCH_CLOSE_CODES`) and an error's ``failure``
    (:attr:`kandev_lsp.errors.KandevLspError.failure`), so :meth:`of` maps any of them here. The README's
    and docs/resolve-contract.md's tables list the same numbers, and a test holds them equal.
    """

    OK = 0
    #: A reported failure: a check that did not pass (``doctor``, ``plugins``), a tool that answered
    #: ``ok: false``, an unreadable env or settings file, a port that cannot be bound.
    FAILED = 1
    #: The command line is wrong (a flag, a flag's value, ``--json`` that is not an object): nothing ran.
    USAGE = 2
    #: No server, but ``kandev-lsp install LANG`` (or ``--install``) would install one.
    INSTALLABLE_NOT_REQUESTED = 10
    #: No server, and nothing installs one here (manual-only, no release for this host).
    NO_INSTALLER = 11
    #: No server, and the managed cache cannot be used (HOME not absolute, or inside the workspace).
    CACHE_UNAVAILABLE = 12
    #: No loaded plugin provides the language.
    UNSUPPORTED_LANGUAGE = 13
    #: An install was tried and failed; the previous version stays current.
    INSTALL_FAILED = 20
    #: The server could not be started.
    START_FAILED = 21
    #: Malformed or oversized LSP framing (``run``).
    PROTOCOL_ERROR = 22
    #: A side stopped reading (``run``).
    STALLED = 23
    #: Interrupted (SIGINT) where the command does not die by the signal itself.
    INTERRUPTED = 130
    #: The reader of stdout went away (128 + SIGPIPE); nothing more is written.
    BROKEN_PIPE = 141

    @classmethod
    def of(cls, failure: str) -> ExitStatus:
        """The status for a kind of failure (``"no_installer"``, ``"usage"``, ...)."""
        return cls[failure.upper()]


EXIT_FOUND: Final = ExitStatus.OK

#: ``resolve``'s exit code for each missing reason (a ``MissingReason`` value).
RESOLVE_EXIT_CODES: Final[Mapping[str, int]] = {
    reason: ExitStatus.of(reason)
    for reason in ("installable_not_requested", "no_installer", "cache_unavailable", "unsupported_language")
}


def missing_close_code(reason: str | None) -> int | None:
    """The stream close code for a server missing for ``reason`` (None: found, or an unknown language)."""
    return MISSING_CLOSE_CODES.get(reason) if reason else None


def resolve_exit_code(reason: str | None) -> int:
    """``kandev-lsp resolve``'s exit code for a server missing for ``reason`` (None: found, 0)."""
    return RESOLVE_EXIT_CODES[reason] if reason else EXIT_FOUND
