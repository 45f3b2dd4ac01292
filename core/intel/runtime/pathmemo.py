"""Path checks remembered across tool calls while the disk watch vouches for them (issue 9 overhead goal).

Every URI a server returns is checked before it is shown (B8.11): its real path must be inside a root,
which costs one ``lstat`` per file per call (:meth:`Workspace.uri_lookup`), and a popular symbol's
references span hundreds of files. Such a check stays true as long as nothing on the file's path changes:
replacing the file, or any folder between it and its root, by a symbolic link, a rename or a delete is an
event on a watched folder (:class:`~kandev_lsp.intel.runtime.watch.DiskWatch` watches each file and every folder up
to its root), after which :meth:`DiskWatch.unchanged` answers False and the full check runs again.

The rules that keep this exactly as strict as checking every time:

- Only a URI that named its real path (no link on the way) is remembered: the check found nothing to
  follow, and the watch covers every folder that could become a link.
- **Watch, then look**: a check is remembered only when the file was already watched when it was made, so
  any change after it is queued. The first check of a file starts its watch instead; the next one is
  remembered, with the watch's :attr:`~kandev_lsp.intel.runtime.watch.DiskWatch.layout` count of that moment.
- A remembered check is trusted while that count is unchanged (:meth:`DiskWatch.vouches`): the count
  grows with every entry created, moved or deleted in a watched folder and every reset, whichever call
  drained the event. (Asking "unchanged since this call's drain" alone missed a swap for a link that an
  earlier call drained while nothing looked the file up, after which the re-sync watched the link.)
- Nothing above a root is watched, so each call checks once that the roots' own paths still lead to the
  same folders (:meth:`Workspace.roots_in_place`) before trusting any remembered file.
- Like the re-sync it shares the watch with (B8.12), "unchanged" means "since this call's drain", the
  point at which the tool call looks at the disk. Where changes cannot be watched (no inotify, too many
  files, an overflowed queue), :meth:`DiskWatch.vouches` answers False and every file is checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from kandev_lsp.intel.errors import IntelError
from kandev_lsp.intel.files.workspace import Workspace, WorkspaceFile
from kandev_lsp.intel.runtime.watch import DiskWatch

__all__ = ["Placed", "PlacedTargets", "watched_lookup"]

#: Remembered checks at most; past it the memory starts again (the watch itself stops at 20 000 files).
MAX_PLACED: Final = 20_000


#: A remembered check: the file, and the watch's layout count when the check was made.
Placed = tuple[WorkspaceFile, int]


def watched_lookup(
    workspace: Workspace, watch: DiskWatch, placed: dict[str, Placed]
) -> Callable[[str], WorkspaceFile | IntelError]:
    """A URI lookup for one tool call (after the watch's drain): :meth:`Workspace.uri_lookup`, except that a
    file in ``placed`` (by URI) the watch vouches for is answered without a new check.

    :param placed: the remembered checks, kept by the caller across calls (one per watch); this lookup
        adds the checks it may remember and drops the URIs whose check failed.
    """
    check = workspace.uri_lookup()
    roots: list[bool] = []  # roots_in_place(), asked at the first remembered file of the call
    answered: dict[str, WorkspaceFile] = {}  # this call's trusted answers (each file is asked twice)

    def lookup(uri: str) -> WorkspaceFile | IntelError:
        again = answered.get(uri)
        if again is not None:
            return again
        memo = placed.get(uri)
        if memo is not None and watch.vouches(memo[0].absolute, memo[1]):
            if not roots:
                roots.append(workspace.roots_in_place())
            if roots[0]:
                answered[uri] = memo[0]
                return memo[0]
        layout = watch.layout  # before the check: a change after it is counted
        found = check(uri)
        if type(found) is WorkspaceFile and found.uri == uri:
            if watch.watching(found.absolute):
                if len(placed) >= MAX_PLACED:
                    placed.clear()
                placed[uri] = (found, layout)
            else:  # start watching it: its next check is then remembered
                watch.unchanged(found.absolute, found.root.path)
        else:
            placed.pop(uri, None)
        return found

    return lookup


class _Watched(Protocol):
    """What :class:`PlacedTargets` needs of a server: its disk watch."""

    @property
    def disk_watch(self) -> DiskWatch: ...


S = TypeVar("S", bound=_Watched)


@dataclass(slots=True)
class _Target(Generic[S]):
    file: WorkspaceFile
    server: S
    #: The server's watch's layout count when the check was made while the file was watched; None: the
    #: check was made before (not trusted yet).
    layout: int | None


#: Target paths remembered at most; past it the memory starts again.
MAX_TARGETS: Final = 4096


class PlacedTargets(Generic[S]):
    """The agent's target paths (``target.path`` + ``rootId``) as checked and placed on a server, trusted
    again while that server's disk watch vouches for the check (issue 9 overhead goal).

    A tool call's target costs, before any request: the path check (B8.11: ``realpath``, that the file
    exists and is no folder), the file's language and project root (a ``stat`` per root marker and
    folder on the way to the root, B8.6), and the server's lookup. Each depends on the path, the shape of
    the folders from the root to the file and the markers in them: all watched by the server's
    :class:`DiskWatch` once the file is its document, where any entry created, moved or deleted counts in
    :attr:`DiskWatch.layout`. The same rules as :func:`watched_lookup`: the layout is read before the full
    check and only when the file was already watched, the roots' own paths are checked each call
    (:meth:`Workspace.roots_in_place`), and the memory is asked only after the call's drain.

    Only paths whose answer cannot depend on another root are remembered (one root, or a ``rootId``): in
    a multi-root workspace a relative path's ambiguity depends on files in roots this watch may not see.
    """

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace
        self._multi_root = workspace.multi_root  # the roots are fixed for the workspace's life
        self._entries: dict[tuple[str, str | None], _Target[S]] = {}

    def _key(self, path: str, root_id: str | None) -> tuple[str, str | None] | None:
        return (path, root_id) if root_id is not None or not self._multi_root else None

    def known(self, path: str, root_id: str | None) -> tuple[WorkspaceFile, S] | None:
        """Where ``path`` was placed last (to drain that server's watch before :meth:`vouched`)."""
        key = self._key(path, root_id)
        entry = self._entries.get(key) if key is not None else None
        return (entry.file, entry.server) if entry is not None else None

    def vouched(self, path: str, root_id: str | None) -> bool:
        """After the drain of the :meth:`known` server's watch: whether its remembered check still holds."""
        key = self._key(path, root_id)
        entry = self._entries.get(key) if key is not None else None
        return (
            entry is not None
            and entry.layout is not None
            and entry.server.disk_watch.vouches(entry.file.absolute, entry.layout)
            and self._workspace.roots_in_place()
        )

    def checking(self, path: str, root_id: str | None) -> Callable[[WorkspaceFile, S], None]:
        """Call right before the full check (path, then language and project root, in one synchronous
        step); the returned function records where the check placed ``path``. A check that raises records
        nothing and the path is forgotten."""
        key = self._key(path, root_id)
        if key is None:
            return lambda file, server: None
        entry = self._entries.pop(key, None)
        layout: int | None = None
        if entry is not None and entry.server.disk_watch.watching(entry.file.absolute):
            layout = entry.server.disk_watch.layout

        def record(file: WorkspaceFile, server: S) -> None:
            same = entry is not None and entry.file == file and entry.server is server
            if len(self._entries) >= MAX_TARGETS:
                self._entries.clear()
            self._entries[key] = _Target(file, server, layout if same else None)

        return record
