"""Finding every process of one owned tree, including those that left it.

A child's descendants are found three ways, and stopping kills their union:

* its **process group** (POSIX): everything it forked that did not call ``setsid``/``setpgid``;
* its **descendants by parent link**, looked at while it is still alive (once it dies, its children are
  re-parented and the link is gone);
* the **owner marker**: every child is started with :data:`OWNER_VARIABLE` carrying a random token, and
  every descendant inherits it unless it deliberately scrubs its environment. A double-forked daemon that
  left the group, the session and the parent chain long before the stop is still found this way.

Scanning is done only at stop time. On Linux it reads ``/proc`` directly (about a millisecond for a few
hundred processes); elsewhere it asks psutil. The selection itself is a pure function of a snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kandev_lsp._lazy import LazyModule
from kandev_lsp._values import dataclass

if TYPE_CHECKING:
    import psutil
else:
    psutil = LazyModule("psutil")  # imported at first use: starting a server never needs it

#: Environment variable that marks every process of an owned tree. Its value is a space-separated list
#: of owner tokens: a kandev-lsp running under another one appends its own token, so both can find the
#: processes they are responsible for.
OWNER_VARIABLE = "KANDEV_LSP_OWNER"

_PROC = "/proc"


@dataclass(frozen=True, slots=True)
class ProcInfo:
    """One process in a snapshot of the process table."""

    pid: int
    ppid: int
    pgid: int | None  # None where the platform has no process groups (Windows) or it could not be read
    owners: frozenset[str]
    zombie: bool = False


def new_token() -> str:
    """A fresh owner token (unguessable, so no unrelated process carries it by chance).

    ``os.urandom`` is what ``secrets.token_hex`` reads; importing secrets (hmac, hashlib, random) cost
    every ``kandev-lsp run`` before its server could be spawned.
    """
    return os.urandom(12).hex()


def marked_environment(variables: Mapping[str, str], token: str, *, windows: bool) -> dict[str, str]:
    """``variables`` plus the owner marker (appended to an inherited marker, not replacing it)."""
    result = dict(variables)
    existing_key = next((key for key in result if (key.upper() if windows else key) == OWNER_VARIABLE), None)
    if existing_key is None:
        result[OWNER_VARIABLE] = token
    else:
        inherited = result[existing_key].split()
        result[existing_key] = " ".join([*inherited, token])
    return result


def owner_tokens(raw_environ: bytes) -> frozenset[str]:
    """The owner tokens in a raw ``/proc/<pid>/environ`` (NUL-separated ``KEY=VALUE`` entries)."""
    prefix = OWNER_VARIABLE.encode() + b"="
    tokens: set[str] = set()
    for entry in raw_environ.split(b"\0"):
        if entry.startswith(prefix):
            tokens.update(entry[len(prefix) :].decode("ascii", "replace").split())
    return frozenset(tokens)


def parse_stat(text: str) -> tuple[str, int, int]:
    """State, parent pid and process group from ``/proc/<pid>/stat`` (the name may hold spaces and ')')."""
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[2])


def select_targets(
    snapshot: Iterable[ProcInfo],
    *,
    token: str,
    root_pid: int | None = None,
    group_id: int | None = None,
    exclude: Iterable[int] = (),
) -> set[int]:
    """The live processes of one tree: descendants of ``root_pid`` (pass it only while the root lives),
    members of process group ``group_id``, and carriers of ``token``; never those in ``exclude``."""
    infos = [info for info in snapshot if not info.zombie]
    selected = {info.pid for info in infos if token in info.owners}
    if group_id is not None:
        selected.update(info.pid for info in infos if info.pgid == group_id)
    if root_pid is not None:
        children: dict[int, list[int]] = {}
        for info in infos:
            children.setdefault(info.ppid, []).append(info.pid)
        descendants: set[int] = set()
        pending = [root_pid]
        while pending:
            for child in children.get(pending.pop(), ()):
                if child not in descendants:
                    descendants.add(child)
                    pending.append(child)
        selected.update(descendants)
    selected.difference_update(exclude)
    return selected


def scan_proc(root: str = _PROC) -> list[ProcInfo]:
    """A snapshot of this machine's processes from Linux ``/proc``. Unreadable entries are left out
    (another user's process cannot carry our token unless it is ours, and we run as its owner)."""
    snapshot: list[ProcInfo] = []
    for name in os.listdir(root):
        if not name.isdigit():
            continue
        try:
            with open(f"{root}/{name}/stat", encoding="utf-8", errors="replace") as handle:
                state, ppid, pgid = parse_stat(handle.read())
            with open(f"{root}/{name}/environ", "rb") as handle:
                raw = handle.read()
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read
        snapshot.append(ProcInfo(int(name), ppid, pgid, owner_tokens(raw), zombie=state == "Z"))
    return snapshot


def scan_psutil() -> list[ProcInfo]:
    """A snapshot through psutil, for platforms without ``/proc`` (macOS, Windows)."""
    snapshot: list[ProcInfo] = []
    for process in psutil.process_iter(["ppid", "status"]):
        try:
            environ: dict[str, str] = process.environ()
        except (psutil.Error, OSError):
            environ = {}
        tokens: set[str] = set()
        for key, value in environ.items():
            if key.upper() == OWNER_VARIABLE:
                tokens.update(value.split())
        snapshot.append(
            ProcInfo(
                pid=int(process.pid),
                ppid=int(process.info["ppid"] or 0),
                pgid=_pgid(int(process.pid)),
                owners=frozenset(tokens),
                zombie=process.info["status"] == psutil.STATUS_ZOMBIE,
            )
        )
    return snapshot


def scan() -> list[ProcInfo]:
    """A snapshot of the process table, by the cheapest means this machine offers."""
    if os.path.isdir(f"{_PROC}/self"):
        return scan_proc()
    return scan_psutil()


def _pgid(pid: int) -> int | None:
    getpgid = getattr(os, "getpgid", None)
    if getpgid is None:
        return None
    try:
        return int(getpgid(pid))
    except OSError:
        return None


def handles(pids: Iterable[int]) -> dict[int, psutil.Process]:
    """psutil handles for ``pids``. A handle remembers the process's start time, so signalling it later
    never hits an unrelated process that reused the pid."""
    result: dict[int, psutil.Process] = {}
    for pid in pids:
        try:
            result[pid] = psutil.Process(pid)
        except psutil.Error:
            continue
    return result


def is_alive(process: psutil.Process) -> bool:
    """Running and not a zombie (a zombie has released everything but its exit status)."""
    try:
        return bool(process.is_running()) and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True
