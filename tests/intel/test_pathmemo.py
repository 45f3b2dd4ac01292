"""Path checks remembered across tool calls (intel/pathmemo.py): a remembered check must never outlive a
change that would make the full check (B8.11) refuse the file. Real files, real inotify, real Workspace;
each "call" is what a tool call does: the re-sync's drain, then lookups."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kandev_lsp.intel.errors import IntelError, PathOutsideWorkspace
from kandev_lsp.intel.files.workspace import Workspace, WorkspaceFile
from kandev_lsp.intel.runtime import watch as watch_module
from kandev_lsp.intel.runtime.pathmemo import Placed, watched_lookup
from kandev_lsp.intel.runtime.watch import DiskWatch
from link_swaps import SWAPS, link_tree, swap_for_a_link

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the watch is inotify's")


class Session:
    """One server's watch and memo over a workspace, and a count of full checks."""

    def __init__(self, workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
        self.workspace = workspace
        self.watch = DiskWatch()
        self.placed: dict[str, Placed] = {}
        self.full_checks = 0
        check = workspace.try_uri

        def counted(uri: str, **kw: object) -> WorkspaceFile | IntelError:
            self.full_checks += 1
            return check(uri, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(workspace, "try_uri", counted)

    def call(self) -> Callable[[str], WorkspaceFile | IntelError]:
        """A new tool call: drain the watch (as the re-sync does), then a fresh lookup."""
        self.watch.drain()
        return watched_lookup(self.workspace, self.watch, self.placed)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The shared link tree (root ``parent/ws``, the file ``src/pkg/mod.py``, ``outside/``)."""
    return link_tree(tmp_path)


@pytest.fixture
def session(tree: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[Session]:
    made = Session(Workspace([tree[0]]), monkeypatch)
    yield made
    made.watch.close()


def _remembered(session: Session, uri: str) -> None:
    """Look ``uri`` up until its check is remembered: the first check starts the watch, the second (made
    while watched) is kept, the third call answers from memory."""
    assert isinstance(session.call()(uri), WorkspaceFile)
    assert uri not in session.placed, "a check made before the file was watched was remembered"
    assert isinstance(session.call()(uri), WorkspaceFile)
    assert uri in session.placed
    before = session.full_checks
    assert isinstance(session.call()(uri), WorkspaceFile)
    assert session.full_checks == before, "an unchanged, watched file was checked again"


def test_an_unchanged_file_is_answered_from_memory(session: Session, tree: tuple[Path, Path, Path]) -> None:
    uri = tree[1].as_uri()
    _remembered(session, uri)
    lookup = session.call()
    before = session.full_checks
    assert lookup(uri) == lookup(uri)
    assert session.full_checks == before
    tree[1].write_text("x = 2\n")  # a content change moves no path: still answered from memory
    assert isinstance(session.call()(uri), WorkspaceFile)
    assert session.full_checks == before
    (tree[1].parent / "new.py").write_text("")  # an entry created on the way: checked again, still allowed
    assert isinstance(session.call()(uri), WorkspaceFile)
    assert session.full_checks == before + 1


@pytest.mark.parametrize("swap", SWAPS)
def test_a_swap_for_a_link_out_is_refused_on_the_next_call(
    session: Session, tree: tuple[Path, Path, Path], swap: str
) -> None:
    root, target, outside = tree
    uri = target.as_uri()
    _remembered(session, uri)
    swap_for_a_link(root, target, outside, swap)
    found = session.call()(uri)
    assert isinstance(found, PathOutsideWorkspace), found


def test_without_inotify_every_call_checks_every_file(
    tree: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watch_module, "_OPEN", lambda: None)
    session = Session(Workspace([tree[0]]), monkeypatch)
    uri = tree[1].as_uri()
    for calls in range(1, 4):
        assert isinstance(session.call()(uri), WorkspaceFile)
        assert session.full_checks == calls
    assert not session.placed


def test_a_uri_through_a_link_is_never_remembered(session: Session, tree: tuple[Path, Path, Path]) -> None:
    root, target, _ = tree
    (root / "alias").symlink_to(target.parent, target_is_directory=True)  # a link inside the root
    uri = (root / "alias" / "mod.py").as_uri()
    for calls in range(1, 4):
        found = session.call()(uri)
        assert isinstance(found, WorkspaceFile) and found.absolute == str(target)
        assert session.full_checks == calls


def test_a_swap_drained_by_a_call_that_did_not_look_is_still_refused(
    session: Session, tree: tuple[Path, Path, Path]
) -> None:
    """The swap's events are drained by a call that never looks the file up (a hover elsewhere), and the
    re-sync watches the path afresh (now the link): the next call must not trust the old check."""
    root, target, outside = tree
    uri = target.as_uri()
    _remembered(session, uri)
    target.unlink()
    target.symlink_to(outside / "mod.py")
    session.call()  # another tool call: its drain takes the swap's events, and nothing looks at the file
    session.watch.unchanged(str(target), str(root))  # the re-sync of a seen file watches it afresh
    session.call()  # and one more call before the file is asked about again
    found = session.call()(uri)
    assert isinstance(found, PathOutsideWorkspace), found
