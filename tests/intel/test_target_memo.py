"""Target paths remembered across tool calls (intel/pathmemo.PlacedTargets): a remembered check and
placement must never outlive a change that would make the full check (B8.11 path check, the project root
of B8.6) answer differently. Real files, real inotify, a real Workspace; each "call" does what
``LspReadTools._prepare_path`` does: the known server's drain, then the memory or the full check."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kandev_lsp.intel.errors import IntelError, PathOutsideWorkspace
from kandev_lsp.intel.files.workspace import Workspace, WorkspaceFile
from kandev_lsp.intel.runtime.pathmemo import PlacedTargets
from kandev_lsp.intel.runtime.watch import DiskWatch
from kandev_lsp.lsp.roots import project_root
from link_swaps import SWAPS, link_tree, swap_for_a_link

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the watch is inotify's")

MARKERS = ["pyproject.toml"]


@dataclass(eq=False)
class FakeServer:
    """A server as the memory sees it: its project root and its disk watch (which watches its documents,
    as the re-sync does)."""

    project_root: str
    disk_watch: DiskWatch = field(default_factory=DiskWatch)
    documents: list[WorkspaceFile] = field(default_factory=list)

    def refresh(self) -> None:
        self.disk_watch.drain()
        for file in self.documents:
            self.disk_watch.unchanged(file.absolute, file.root.path)


class Session:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.targets: PlacedTargets[FakeServer] = PlacedTargets(workspace)
        self.servers: dict[str, FakeServer] = {}
        self.full_checks = 0

    def call(self, path: str, root_id: str | None = None) -> tuple[WorkspaceFile, FakeServer] | IntelError:
        known = self.targets.known(path, root_id)
        if known is not None:
            known[1].refresh()
            if self.targets.vouched(path, root_id):
                return known
        record = self.targets.checking(path, root_id)
        self.full_checks += 1
        try:
            file = self.workspace.resolve(path, root_id)
        except IntelError as error:
            return error
        root = project_root(file.absolute, file.root.path, MARKERS) or file.root.path
        server = self.servers.setdefault(root, FakeServer(root))
        server.refresh()
        if file not in server.documents:
            server.documents.append(file)
        record(file, server)
        return file, server

    def close(self) -> None:
        for server in self.servers.values():
            server.disk_watch.close()


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``base/parent/ws/src/pkg/mod.py`` (the workspace root is ``ws``, a project) and ``outside/``."""
    root, target, outside = link_tree(tmp_path)
    (root / "pyproject.toml").write_text("")
    return root, target, outside


@pytest.fixture
def session(tree: tuple[Path, Path, Path]) -> Iterator[Session]:
    made = Session(Workspace([tree[0]]))
    yield made
    made.close()


PATH = "src/pkg/mod.py"


def _remembered(session: Session) -> tuple[WorkspaceFile, FakeServer]:
    """Call until the check is remembered: the first call opens the document, the second checks again while
    it is watched, the third is answered from memory."""
    for _ in range(2):
        assert not isinstance(session.call(PATH), IntelError)
    checks = session.full_checks
    placed = session.call(PATH)
    assert not isinstance(placed, IntelError)
    assert session.full_checks == checks == 2, "a watched, unchanged target was checked again"
    return placed


def test_a_repeated_target_is_placed_from_memory_until_an_entry_changes(
    session: Session, tree: tuple[Path, Path, Path]
) -> None:
    file, server = _remembered(session)
    assert file.absolute == str(tree[1]) and server.project_root == str(tree[0])
    tree[1].write_text("x = 2\n")  # content only: the place of the file is the same
    assert session.call(PATH) == (file, server) and session.full_checks == 2
    (tree[1].parent / "other.py").write_text("")  # an entry on the way: checked in full once more
    assert session.call(PATH) == (file, server) and session.full_checks == 3


@pytest.mark.parametrize("swap", SWAPS)
def test_a_swap_for_a_link_out_is_refused_on_the_next_call(
    session: Session, tree: tuple[Path, Path, Path], swap: str
) -> None:
    root, target, outside = tree
    _remembered(session)
    swap_for_a_link(root, target, outside, swap)
    assert isinstance(session.call(PATH), PathOutsideWorkspace)


def test_a_swap_drained_by_another_call_is_still_refused(
    session: Session, tree: tuple[Path, Path, Path]
) -> None:
    _, target, outside = tree
    _, server = _remembered(session)
    target.unlink()
    target.symlink_to(outside / "mod.py")
    server.refresh()  # another tool call on the same server drains the events and watches the link afresh
    server.refresh()
    assert isinstance(session.call(PATH), PathOutsideWorkspace)


def test_a_root_marker_created_on_the_way_moves_the_file_to_its_new_project(
    session: Session, tree: tuple[Path, Path, Path]
) -> None:
    root = tree[0]
    _remembered(session)
    (root / "src" / "pyproject.toml").write_text("")  # src/ becomes a project of its own
    placed = session.call(PATH)
    assert not isinstance(placed, IntelError)
    assert placed[1].project_root == str(root / "src")


def test_a_deleted_target_is_not_found_on_the_next_call(
    session: Session, tree: tuple[Path, Path, Path]
) -> None:
    _remembered(session)
    tree[1].unlink()
    assert isinstance(session.call(PATH), IntelError)


def test_a_relative_path_in_a_multi_root_workspace_is_never_remembered(tree: tuple[Path, Path, Path]) -> None:
    root, _, outside = tree
    session = Session(Workspace([root, outside]))
    try:
        for calls in range(1, 4):
            assert not isinstance(session.call(PATH), IntelError)
            assert session.full_checks == calls
        # a rootId makes the answer one root's alone: remembered
        for _ in range(3):
            assert not isinstance(session.call(PATH, root.name), IntelError)
        assert session.full_checks == 5
    finally:
        session.close()
