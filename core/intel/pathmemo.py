"""Path checks remembered across tool calls while the disk watch vouches for them (issue 9 overhead goal).

Every URI a server returns is checked before it is shown (B8.11): its real path must be inside a root,
which costs one ``lstat`` per file per call (:meth:`Workspace.uri_lookup`), and a popular symbol's
references span hundreds of files. Such a check stays true as long as nothing on the file's path changes:
replacing the file, or any folder between it and its root, by a symbolic link, a rename or a delete is an
event on a watched folder (:class:`~kandev_lsp.intel.watch.DiskWatch` watches each file and every folder up
to its root), after which :meth:`DiskWatch.unchanged` answers False and the full check runs again.

The rules that keep this exactly as strict as checking every time:

- Only a URI that named its real path (no link on the way) is remembered: the check found nothing to
  follow, and the watch covers every folder that could become a link.
- **Watch, then look**: a check is remembered only when the file was already watched when it was made, so
  any change after it is queued. The first check of a file starts its watch instead; the next one is
  remembered.
- Nothing above a root is watched, so each call checks once that the roots' own paths still lead to the
  same folders (:meth:`Workspace.roots_in_place`) before trusting any remembered file.
- Like the re-sync it shares the watch with (B8.12), "unchanged" means "since this call's drain", the
  point at which the tool call looks at the disk. Where changes cannot be watched (no inotify, too many
  files, an overflowed queue), :meth:`DiskWatch.unchanged` answers False and every file is checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kandev_lsp.intel.errors import IntelError
from kandev_lsp.intel.watch import DiskWatch
from kandev_lsp.intel.workspace import Workspace, WorkspaceFile

__all__ = ["watched_lookup"]

#: Remembered checks at most; past it the memory starts again (the watch itself stops at 20 000 files).
MAX_PLACED: Final = 20_000


def watched_lookup(
    workspace: Workspace, watch: DiskWatch, placed: dict[str, WorkspaceFile]
) -> Callable[[str], WorkspaceFile | IntelError]:
    """A URI lookup for one tool call (after the watch's drain): :meth:`Workspace.uri_lookup`, except that a
    file in ``placed`` (by URI) the watch reports unchanged is answered without a new check.

    :param placed: the remembered checks, kept by the caller across calls (one per watch); this lookup
        adds the checks it may remember and drops the URIs whose check failed.
    """
    check = workspace.uri_lookup()
    roots: list[bool] = []  # roots_in_place(), asked at the first remembered file of the call

    def lookup(uri: str) -> WorkspaceFile | IntelError:
        file = placed.get(uri)
        if file is not None and watch.unchanged(file.absolute, file.root.path):
            if not roots:
                roots.append(workspace.roots_in_place())
            if roots[0]:
                return file
        found = check(uri)
        if type(found) is WorkspaceFile and found.uri == uri:
            if watch.watching(found.absolute):
                if len(placed) >= MAX_PLACED:
                    placed.clear()
                placed[uri] = found
            else:  # start watching it: its next check is then remembered
                watch.unchanged(found.absolute, found.root.path)
        else:
            placed.pop(uri, None)
        return found

    return lookup
