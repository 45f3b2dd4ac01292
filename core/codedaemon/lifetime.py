"""When a ``kandev-lsp code`` daemon stops: pure decisions over its state, taken once a tick.

A daemon stops (and stops every server it started first) when

* it has been **idle**: no call for ``idleTimeout`` seconds (default :data:`DEFAULT_IDLE_TIMEOUT`, the
  latest ``--idle-timeout`` a call gave), none running, and no transaction it parked still approvable
  (an edit previewed with "apply within 300 s" keeps it until then);
* a **workspace root is gone**: removed, or replaced by another folder at the same path (its device and
  inode changed);
* its **socket is gone or replaced**: another daemon took the name (its successor after a stale socket), or
  someone removed the file, so no caller can reach this one any more;
* its **settings file changed** (:func:`settings_changed`, checked at each call) or is no longer valid: the
  call is answered by a successor started under the new settings, as a one-shot run would read them (one
  that is not valid is refused, exit 1, as the one-shot run refuses it);
* it is **replaced**: a call of another configuration of the same workspace roots starts a daemon while
  :data:`MAX_DAEMONS` run for them, and this one went unused longest and is :func:`retirable`;
* it is asked to (``kandev-lsp code --stop``) or signalled (SIGTERM, SIGINT, SIGHUP).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "MAX_DAEMONS",
    "TICK",
    "Activity",
    "Stamp",
    "retirable",
    "settings_changed",
    "stamp",
    "stop_reason",
]

#: Seconds without a call after which a daemon exits (``--idle-timeout`` changes it).
DEFAULT_IDLE_TIMEOUT = 300.0
#: Seconds between two looks at the daemon's state (idle time, roots, socket): a few ``stat`` calls.
TICK = 1.0
#: Daemons that run at most for one set of workspace roots, one per configuration (environment, flags,
#: settings file): a caller that starts one more first retires the least recently used idle one. Enough
#: for the configurations a workspace sees at once (a task's agent, its person at a terminal, a
#: ``--read-only`` reviewer); a caller whose environment changes with every command in a variable nobody
#: left out of the identity gets cold calls, never a pile of idle daemons and their servers.
MAX_DAEMONS = 3


class Stamp(NamedTuple):
    """What a path was when the daemon started: a later :func:`stamp` that differs means it was replaced."""

    device: int
    inode: int


def stamp(path: str) -> Stamp | None:
    """The path's :class:`Stamp` now (links followed), or None when it is gone."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return Stamp(info.st_dev, info.st_ino)


@dataclass
class Activity:
    """The calls a daemon is serving and has served (monotonic seconds)."""

    #: When the last call started or ended.
    last: float
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    #: Calls being answered now.
    in_flight: int = 0
    #: Until when a parked transaction can still be approved.
    held_until: float = 0.0

    def begin(self, now: float) -> None:
        self.in_flight += 1
        self.last = now

    def end(self, now: float) -> None:
        self.in_flight -= 1
        self.last = now

    def hold(self, until: float) -> None:
        self.held_until = max(self.held_until, until)


def stop_reason(activity: Activity, now: float, *, roots_present: bool, socket_ours: bool) -> str | None:
    """Why the daemon should stop now (``workspace-gone``, ``socket-replaced``, ``idle``), or None."""
    if not roots_present:
        return "workspace-gone"
    if not socket_ours:
        return "socket-replaced"
    if retirable(activity, now) and now - activity.last >= activity.idle_timeout:
        return "idle"
    return None


def retirable(activity: Activity, now: float) -> bool:
    """Whether a daemon may be replaced by another configuration's now: no call under way, and no parked
    transaction still approvable (its edit would be lost with it)."""
    return activity.in_flight == 0 and now >= activity.held_until


def settings_changed(opened: Any, current: Any) -> bool:
    """Whether the settings now (``current``, a :class:`~kandev_lsp.settings.UserSettings`) differ from
    those the daemon opened its service with. The settings file hands out the same object while the file
    is unchanged (a ``stat``), so the values are compared only after it was re-read."""
    return current is not opened and current.to_json() != opened.to_json()
