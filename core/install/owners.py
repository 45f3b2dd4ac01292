"""Who is installing: a record beside each install's staging folder, so a dead install can be swept up.

An install records its owner (pid and start time) and the owner token it gives every process it starts
(see :func:`kandev_lsp.process.spawn`) in ``<cache>/<language>/.owner-<token>.json``, under the
language's lock, before it starts anything; it removes the record once its processes are stopped. A
record found by the next holder of the lock was therefore left by an install that is no longer running:
its owner died (``kill -9``, a crash, a power cut) or, rarely, survived a failed cleanup. Either way the
processes carrying its token are leftovers, and they are killed *before* the staging folders are
removed, so an orphaned npm cannot re-create a folder that was just cleaned.

The owner's pid alone could name another process by now; its start time makes the identity exact.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil
from kandev_lsp import jsontext

OWNER_PREFIX = ".owner-"
OWNER_SUFFIX = ".json"
#: Start times are compared with this tolerance (psutil derives them from clock ticks).
_START_TOLERANCE = 0.05


def new_owner_token() -> str:
    """A fresh, unguessable token for one install's processes."""
    return "install-" + secrets.token_hex(12)


@dataclass(frozen=True, slots=True)
class InstallOwner:
    """The process that runs an install, and the owner token of every process that install starts."""

    pid: int
    started: float
    token: str

    @classmethod
    def current(cls, token: str) -> InstallOwner:
        """This process as the owner of an install whose processes carry ``token``."""
        return cls(os.getpid(), psutil.Process().create_time(), token)

    def is_alive(self) -> bool:
        """Whether the owner process still runs (the same process, not a reused pid)."""
        try:
            process = psutil.Process(self.pid)
            same = abs(float(process.create_time()) - self.started) < _START_TOLERANCE
            return same and process.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    def to_json(self) -> dict[str, object]:
        return {"pid": self.pid, "started": self.started, "token": self.token}


def parse_owner(text: str) -> InstallOwner | None:
    """A record's owner, or None for a record that is not one (half-written, edited by hand)."""
    try:
        data = jsontext.loads(text)
        owner = InstallOwner(int(data["pid"]), float(data["started"]), str(data["token"]))
    except (ValueError, TypeError, KeyError):
        return None
    if not owner.token or owner.token != "".join(owner.token.split()):
        return None
    return owner


def record_owner(folder: Path, owner: InstallOwner) -> Path:
    """Write ``owner``'s record into the language folder; the path to remove when the install ends."""
    path = folder / f"{OWNER_PREFIX}{owner.token}{OWNER_SUFFIX}"
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(owner.to_json()), encoding="utf-8")
    os.replace(temporary, path)
    return path


def recorded_owners(folder: Path) -> list[tuple[Path, InstallOwner | None]]:
    """Every owner record in the language folder (and half-written ones, as None), sorted by name."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found: list[tuple[Path, InstallOwner | None]] = []
    for name in names:
        if not name.startswith(OWNER_PREFIX):
            continue
        path = folder / name
        owner = None
        if name.endswith(OWNER_SUFFIX):
            with contextlib.suppress(OSError, UnicodeDecodeError):
                owner = parse_owner(path.read_text(encoding="utf-8"))
        found.append((path, owner))
    return found


def runs_from(folder: str, argv: Sequence[str]) -> bool:
    """Whether a process started as ``argv`` runs a file under ``folder``: its program, or the script its
    interpreter was given (``node <cache>/.../langserver.index.js``)."""
    prefix = folder.rstrip("/\\") + os.sep
    return any(arg.startswith(prefix) for arg in argv)


def running_from(folder: Path) -> list[tuple[int, str]]:
    """The live processes (pid, name) started from a file under ``folder``: servers a language's managed
    cache is running, which ``uninstall`` leaves without the files they still load (pyright reads its
    stubs lazily). Best effort: a process whose command line cannot be read is not counted."""
    prefixes = {str(folder), os.path.realpath(folder)}
    found: list[tuple[int, str]] = []
    for process in psutil.process_iter(["pid", "name", "cmdline"]):
        argv = process.info.get("cmdline") or []
        if process.info["pid"] != os.getpid() and any(runs_from(prefix, argv) for prefix in prefixes):
            found.append((process.info["pid"], process.info.get("name") or "?"))
    return found
