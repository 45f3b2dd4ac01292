"""Which file events a server asked to hear: ``workspace/didChangeWatchedFiles`` registrations and the
``fileOperations`` filters of ``didCreate/Rename/DeleteFiles`` (K2.x, B3.7).

A server that registers for ``workspace/didChangeWatchedFiles`` names what it watches: ``watchers``, each a
glob (``**/*.py``, ``**/*.{ts,tsx}``, or a ``RelativePattern`` with a ``baseUri``) and a ``kind`` bitmask
(create 1, change 2, delete 4; all when absent). :func:`wanted_events` turns files that appeared, were
written or left (the disk watch's :attr:`~kandev_lsp.intel.runtime.watch.DiskWatch.created`, ``modified``
and ``removed``) into the ``FileEvent`` list the server asked for; :func:`file_operation_wanted` says
whether a file operation's filters cover a path. The callers send the notifications. Pure: no I/O. Globs are matched the same way for both: one
brace group expanded, and fnmatch's ``*`` crossing ``/``, so ``**/*.py`` and ``*.py`` match any ``.py``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

__all__ = ["CHANGED", "CREATED", "DELETED", "file_operation_wanted", "wanted_events"]

#: FileChangeType values.
CREATED: Final = 1
CHANGED: Final = 2
DELETED: Final = 3
#: WatchKind bits: Create, Change, Delete.
_KIND_CREATE: Final = 1
_KIND_CHANGE: Final = 2
_KIND_DELETE: Final = 4


def _globs(pattern: str) -> list[str]:
    """``**/*.{ts,js}`` as ``["**/*.ts", "**/*.js"]`` (one brace group, what servers register)."""
    start = pattern.find("{")
    end = pattern.find("}", start)
    if start < 0 or end < 0:
        return [pattern]
    return [pattern[:start] + choice + pattern[end + 1 :] for choice in pattern[start + 1 : end].split(",")]


def _glob_matches(path: str, glob: str) -> bool:
    # fnmatch's `*` also crosses `/`, so `**/*.py` and `*.py` both match any .py below the root.
    return fnmatch.fnmatchcase(path, glob) or fnmatch.fnmatchcase(path, "*/" + glob.lstrip("*/"))


def file_operation_wanted(options: Any, path: str, is_folder: bool) -> bool:
    """Whether ``FileOperationRegistrationOptions`` (its ``filters``) cover ``path``."""
    filters = options.get("filters") if isinstance(options, Mapping) else None
    if not isinstance(filters, list):
        return False
    for item in filters:
        pattern = item.get("pattern") if isinstance(item, Mapping) else None
        if not isinstance(pattern, Mapping) or item.get("scheme", "file") != "file":
            continue
        matches = pattern.get("matches")
        if (matches == "file" and is_folder) or (matches == "folder" and not is_folder):
            continue
        folded = (pattern.get("options") or {}).get("ignoreCase") is True
        subject = path.lower() if folded else path
        if any(
            _glob_matches(subject, glob.lower() if folded else glob)
            for glob in _globs(str(pattern.get("glob", "")))
        ):
            return True
    return False


def _matchers(register_options: Iterable[Any]) -> list[tuple[str, int]]:
    """``(glob, kind)`` of every watcher in the registrations' options; malformed ones are skipped."""
    found: list[tuple[str, int]] = []
    for options in register_options:
        watchers = options.get("watchers") if isinstance(options, Mapping) else None
        for watcher in watchers if isinstance(watchers, list) else []:
            if not isinstance(watcher, Mapping):
                continue
            pattern = watcher.get("globPattern")
            if isinstance(pattern, Mapping):  # RelativePattern: the pattern below its base (a root here)
                pattern = pattern.get("pattern")
            kind = watcher.get("kind", _KIND_CREATE | _KIND_CHANGE | _KIND_DELETE)
            if isinstance(pattern, str) and pattern and isinstance(kind, int):
                found.extend((glob, kind) for glob in _globs(pattern))
    return found


def _wanted(path: str, kind_bit: int, matchers: list[tuple[str, int]]) -> bool:
    return any(kind & kind_bit and _glob_matches(path, glob) for glob, kind in matchers)


def wanted_events(
    register_options: Iterable[Any],
    created: Iterable[str],
    removed: Iterable[str],
    uri_of: Callable[[str], str],
    changed: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """``FileEvent`` values (``{uri, type}``) for the created, changed and removed paths the watchers
    cover, in a stable order (paths sorted; creations, then changes, then deletions)."""
    matchers = _matchers(register_options)
    if not matchers:
        return []
    events = [
        {"uri": uri_of(path), "type": CREATED}
        for path in sorted(created)
        if _wanted(path, _KIND_CREATE, matchers)
    ]
    events += [
        {"uri": uri_of(path), "type": CHANGED}
        for path in sorted(changed)
        if _wanted(path, _KIND_CHANGE, matchers)
    ]
    events += [
        {"uri": uri_of(path), "type": DELETED}
        for path in sorted(removed)
        if _wanted(path, _KIND_DELETE, matchers)
    ]
    return events
