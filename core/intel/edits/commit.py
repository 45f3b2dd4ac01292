"""Writing an :class:`EditPlan` to disk all or nothing, and saying exactly what happened (B3.6, B3.7).

The commit first rechecks, without writing: every file the plan was made from still has the bytes it was
planned on (sha256), every path still resolves to itself (no symbolic link has appeared that would lead a
write out of the workspace, B8.11), and every resource operation still finds what planning found. Any
difference is a ``"conflict"`` and nothing is written: the caller plans again.

Then it runs the resource operations in the edit's order, writes every new text to a temporary file in
the file's own folder (fsync'd, with the file's mode), and moves them over the files one by one with
``os.replace``, keeping each original (a hard link, or a copy where links are not possible) until all are
in place. Every step is journaled: a failure anywhere runs the journal backwards, so each file already
replaced, created, renamed or deleted is put back (``"failed"``: every file as it was, the error said).
When putting back fails too, the result is ``"uncertain"`` and the message lists what is known of each
path (B3.7: a persistence failure is never reported as success or as a clean failure).

The recheck alone leaves a window: a folder swapped for a symbolic link after it would lead a write by
path out of the workspace. So the real disk (:class:`~kandev_lsp.intel.edits.disk.DiskFileSystem`,
anchored at the plan's roots) reaches every path it changes from the root's folder descriptor without
following links (:mod:`~kandev_lsp.intel.edits.anchored`); a link found on the way fails the step and the
journal puts everything back.

All disk access goes through the small :class:`FileSystem` protocol; ``DiskFileSystem`` is the real
disk, and tests inject one that fails on the Nth write, move or restore.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from kandev_lsp.intel.edits.anchored import RefusedPath
from kandev_lsp.intel.edits.disk import DiskFileSystem
from kandev_lsp.intel.edits.plan import EditPlan, FileEdit, PathKind, ResourceOp, text_digest
from kandev_lsp.intel.errors import EditRejected
from kandev_lsp.intel.files.regular import read_regular
from kandev_lsp.intel.files.workspace import WorkspaceFile

__all__ = ["CommitOutcome", "DiskFileSystem", "FileSystem", "commit", "disk_text"]


@dataclass(frozen=True, slots=True)
class CommitOutcome:
    """What a commit did (B3.7)."""

    status: Literal["applied", "conflict", "failed", "uncertain"]
    #: Display paths now holding the new content.
    written: tuple[str, ...]
    #: What happened and what to do next.
    message: str
    #: Display paths whose disk content no longer matches the plan (status ``"conflict"``).
    conflicts: tuple[str, ...] = ()


class FileSystem(Protocol):
    """The disk operations a commit needs; every path is absolute."""

    def kind(self, path: str) -> PathKind:
        """What is at ``path``, not following a final symbolic link.

        :raises OSError: the path cannot be reached safely (the real disk raises
            :class:`~kandev_lsp.intel.edits.anchored.RefusedPath` for a link on the way or at the end).
        """
        ...

    def real_path(self, path: str) -> str:
        """``os.path.realpath(path)``."""
        ...

    def read_bytes(self, path: str) -> bytes | None:
        """The file's bytes, or None when it cannot be read."""
        ...

    def mode(self, path: str) -> int | None:
        """The permission bits of the file at ``path``, or None when there is none."""
        ...

    def write_temp(self, path: str, data: bytes, mode: int | None) -> str:
        """Write ``data`` to a new temporary file beside ``path`` (fsync'd, ``mode`` if given); its path."""
        ...

    def replace(self, source: str, target: str) -> None:
        """``os.replace(source, target)``: atomic within one folder."""
        ...

    def keep(self, path: str) -> str:
        """Keep the file at ``path`` under a new name beside it (a hard link, else a copy); that name."""
        ...

    def aside_name(self, path: str) -> str:
        """A free name beside ``path`` to move it to."""
        ...

    def remove(self, path: str) -> None:
        """Delete a file."""
        ...

    def remove_tree(self, path: str) -> None:
        """Delete a folder and everything in it."""
        ...

    def make_folder(self, path: str) -> None:
        """Create one folder (its parent exists)."""
        ...

    def remove_folder(self, path: str) -> None:
        """Delete an empty folder."""
        ...

    def folder_empty(self, path: str) -> bool:
        """Whether the folder has no entries."""
        ...

    def sync_folder(self, path: str) -> None:
        """Flush a folder's entries to disk (best effort: not every platform can)."""
        ...


def disk_text(file: WorkspaceFile) -> str:
    """A file's text as the commit will compare it: its bytes decoded as strict UTF-8, line breaks kept.

    The ``read_text`` for :func:`~kandev_lsp.intel.edits.plan.plan_edit` when the disk is the source.

    :raises EditRejected: the file cannot be read or is not UTF-8 text (an edit to it could not be
        checked against the disk, so it is refused).
    """
    try:
        data = read_regular(file.absolute).data or b""
    except OSError as error:  # NotRegularFile: "not a regular file (a FIFO/socket/device) ..."
        raise EditRejected(f"cannot read {file.display}: {error.strerror or error}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise EditRejected(f"{file.display} is not UTF-8 text: the applier edits only UTF-8 files") from None


# -- the precheck -----------------------------------------------------------------------------------------


class _Displays:
    """Absolute path -> model-facing path, for the plan's files and folders created on the way."""

    def __init__(self, plan: EditPlan) -> None:
        self._known: dict[str, WorkspaceFile] = {file.absolute: file for file in plan.touched()}
        for file_edit in plan.files:
            self._known.setdefault(file_edit.file.absolute, file_edit.file)

    def __call__(self, path: str) -> str:
        known = self._known.get(path)
        if known is not None:
            return known.display
        for file in self._known.values():  # a folder the commit creates, or a path under a moved one
            root = file.root.path
            if path.startswith(root.rstrip(os.sep) + os.sep):
                relative = path[len(root) :].lstrip(os.sep).replace(os.sep, "/")
                prefix = file.display[: len(file.display) - len(file.relative)] if file.relative else ""
                return posixpath.join(prefix, relative) if prefix else relative
        return path


def _precheck(plan: EditPlan, fs: FileSystem, display: Callable[[str], str]) -> list[tuple[str, str]]:
    """What no longer matches the plan: ``(display path, reason)`` pairs; empty when the commit may go."""
    problems: list[tuple[str, str]] = []
    paths = {file.absolute for file in plan.touched()} | set(plan.read)
    for path in sorted(paths):
        if fs.real_path(path) != path:
            problems.append(
                (display(path), "its path now resolves elsewhere (a symbolic link appeared); not followed")
            )
    digests = plan.digests()
    moved = {op.file.absolute for op in plan.resources} | {
        op.new_file.absolute for op in plan.resources if op.new_file is not None
    }
    for file_edit in plan.files:  # a plan built by hand, without ``read``: its ``before`` is the check
        if file_edit.file.absolute not in moved:
            digests.setdefault(file_edit.file.absolute, text_digest(file_edit.before))
    for path, digest in digests.items():
        data = fs.read_bytes(path)
        if data is None:
            problems.append((display(path), "it is gone or unreadable"))
        elif hashlib.sha256(data).hexdigest() != digest:
            problems.append((display(path), "its content changed since the edit was planned"))
    seen: set[str] = set()
    for op in plan.resources:
        expected = [(op.file, op.exists)]
        if op.new_file is not None:
            expected.append((op.new_file, op.target_exists))
        for file, exists in expected:
            if file.absolute in seen:
                continue  # an earlier operation of this edit changes it: that one was checked
            seen.add(file.absolute)
            try:
                actual = fs.kind(file.absolute)
            except RefusedPath as refused:
                problems.append((file.display, f"{display(refused.filename)} {refused.strerror}"))
                continue
            if exists and actual == "missing":
                problems.append((file.display, "it is gone (it existed when the edit was planned)"))
            elif not exists and actual != "missing":
                problems.append((file.display, "it exists now (it did not when the edit was planned)"))
            elif file is op.file and op.directory and actual != "directory":
                problems.append((file.display, "it is no longer a folder"))
    return problems


# -- the transaction --------------------------------------------------------------------------------------


class _Refused(Exception):
    """A resource operation's precondition that failed while committing (the journal rolls back)."""


@dataclass(slots=True)
class _Step:
    """One undo step: how to put one path back as it was."""

    action: Literal["put_back", "remove", "move", "remove_folder"]
    path: str
    #: put_back: the kept original; move: where the path was before.
    other: str = ""


@dataclass(slots=True)
class _Transaction:
    fs: FileSystem
    display: Callable[[str], str]
    journal: list[_Step] = field(default_factory=list)
    #: Files of the applier's own not (yet) part of the journal: temporary files not moved into place,
    #: originals kept for a move that did not happen. Removed on rollback.
    temps: list[str] = field(default_factory=list)
    #: Kept originals and deleted paths moved aside (removed once everything is in place).
    discard: list[tuple[str, bool]] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    folders: set[str] = field(default_factory=set)

    # -- forward --

    def parents(self, path: str) -> None:
        missing: list[str] = []
        folder = os.path.dirname(path)
        while self.fs.kind(folder) == "missing":
            missing.append(folder)
            folder = os.path.dirname(folder)
        if self.fs.kind(folder) != "directory":
            raise _Refused(f"{self.display(folder)} is not a folder")
        for created in reversed(missing):
            self.fs.make_folder(created)
            self.journal.append(_Step("remove_folder", created))

    def replace_keeping(self, source: str, path: str) -> None:
        """Move ``source`` over the existing ``path``, keeping ``path``'s original to put back."""
        kept = self.fs.keep(path)
        self.temps.append(kept)
        self.fs.replace(source, path)
        self.temps.remove(kept)
        # Journaled once the move happened: an undo of a move that never was would itself fail.
        self.journal.append(_Step("put_back", path, kept))
        self.discard.append((kept, False))

    def resource(self, op: ResourceOp) -> None:
        fs = self.fs
        if op.kind == "create":
            path = op.file.absolute
            kind = fs.kind(path)
            if kind != "missing":
                if kind == "directory":
                    raise _Refused(f"create {op.file.display}: a folder is there")
                if not op.overwrite:
                    if op.ignore_if_exists:
                        return
                    raise _Refused(f"create {op.file.display}: it exists")
            else:
                self.parents(path)
            temp = fs.write_temp(path, b"", None)
            self.temps.append(temp)
            if kind == "missing":
                fs.replace(temp, path)
                self.journal.append(_Step("remove", path))
            else:
                self.replace_keeping(temp, path)
            self.temps.remove(temp)
            self.written.append(op.file.display)
            self.folders.add(os.path.dirname(path))
        elif op.kind == "rename":
            assert op.new_file is not None
            source, target = op.file.absolute, op.new_file.absolute
            if fs.kind(source) == "missing":
                raise _Refused(f"rename {op.file.display}: it does not exist")
            target_kind = fs.kind(target)
            if target_kind != "missing":
                if not op.overwrite:
                    if op.ignore_if_exists:
                        return
                    raise _Refused(f"rename to {op.new_file.display}: it exists")
                if target_kind == "directory":
                    raise _Refused(f"rename to {op.new_file.display}: a folder is there")
                self.replace_keeping(source, target)
            else:
                self.parents(target)
                fs.replace(source, target)
            self.journal.append(_Step("move", target, source))
            self.written.append(op.new_file.display)
            self.folders.update((os.path.dirname(source), os.path.dirname(target)))
        else:
            path = op.file.absolute
            kind = fs.kind(path)
            if kind == "missing":
                if op.ignore_if_not_exists:
                    return
                raise _Refused(f"delete {op.file.display}: it does not exist")
            if kind == "directory" and not op.recursive and not fs.folder_empty(path):
                raise _Refused(
                    f"delete {op.file.display}: the folder is not empty and the edit is not recursive"
                )
            aside = fs.aside_name(path)
            fs.replace(path, aside)
            self.journal.append(_Step("move", aside, path))
            self.discard.append((aside, kind == "directory"))
            self.folders.add(os.path.dirname(path))

    def stage(self, file_edit: FileEdit) -> str:
        path = file_edit.file.absolute
        if self.fs.kind(path) != "file":
            raise _Refused(f"{file_edit.file.display} is not a file any more")
        temp = self.fs.write_temp(path, file_edit.after.encode("utf-8"), self.fs.mode(path))
        self.temps.append(temp)
        return temp

    def install(self, file_edit: FileEdit, temp: str) -> None:
        path = file_edit.file.absolute
        self.replace_keeping(temp, path)
        self.temps.remove(temp)
        self.written.append(file_edit.file.display)
        self.folders.add(os.path.dirname(path))

    # -- endings --

    def finish(self) -> list[str]:
        """Drop the kept originals and what was deleted; the paths that could not be removed."""
        left: list[str] = []
        for path, tree in self.discard:
            try:
                if tree:
                    self.fs.remove_tree(path)
                else:
                    self.fs.remove(path)
            except OSError:
                left.append(self.display(path))
        for folder in sorted(self.folders):
            self.fs.sync_folder(folder)
        return left

    def roll_back(self) -> tuple[list[str], list[str], list[str]]:
        """Undo the journal backwards: (sentences on what could not be put back, the display paths that
        still hold the edit's content, the applier's files that could not be removed)."""
        fs = self.fs
        failures: list[str] = []
        changed: list[str] = []
        for step in reversed(self.journal):
            shown = self.display(step.path)
            try:
                if step.action == "put_back":
                    fs.replace(step.other, step.path)
                elif step.action == "remove":
                    fs.remove(step.path)
                elif step.action == "move":
                    fs.replace(step.path, step.other)
                else:
                    fs.remove_folder(step.path)
            except OSError as error:
                reason = (
                    f"{self.display(error.filename)} {error.strerror}"
                    if isinstance(error, RefusedPath)
                    else error.strerror or str(error)
                )
                if step.action != "remove_folder":
                    changed.append(shown)
                if step.action == "put_back":
                    failures.append(
                        f"{shown} may hold the new content; its original is kept at {self.display(step.other)} "
                        f"({reason})"
                    )
                elif step.action == "remove":
                    failures.append(f"{shown} was created by the edit and is still there ({reason})")
                elif step.action == "move":
                    failures.append(
                        f"{self.display(step.other)} is at {shown} and could not be moved back ({reason})"
                    )
                else:
                    failures.append(f"the folder {shown}, created by the edit, is still there ({reason})")
        leftovers: list[str] = []
        for temp in self.temps:
            try:
                fs.remove(temp)
            except OSError:
                leftovers.append(self.display(temp))
        return failures, changed, leftovers


def _step_of(error: BaseException, display: Callable[[str], str]) -> str:
    if isinstance(error, _Refused):
        return str(error)
    if isinstance(error, RefusedPath):
        return f"{display(error.filename)} {error.strerror}"
    if isinstance(error, OSError):
        where = f" ({error.filename})" if error.filename else ""
        return f"{error.strerror or error}{where}"
    return str(error)


def _roots(plan: EditPlan, roots: Iterable[str]) -> list[str]:
    """Where the real disk anchors every change: the workspace's roots and those holding the plan's paths."""
    return sorted({*roots, *(file.root.path for file in plan.touched())})


def commit(plan: EditPlan, *, fs: FileSystem | None = None, roots: Iterable[str] = ()) -> CommitOutcome:
    """Write ``plan`` all or nothing (see the module docstring); never raises for a disk failure.

    :param fs: the disk (tests inject faults); by default the real disk, anchored at ``roots``.
    :param roots: every root of the workspace (real paths). With nested roots a plan may touch only the
        inner one; the real disk still walks from the outer one, so a folder of the outer root on the way
        to the inner one is never followed if it became a link (the plan's own roots are always added).
    """
    disk: FileSystem = fs if fs is not None else DiskFileSystem(_roots(plan, roots))
    display = _Displays(plan)
    if plan.empty:
        return CommitOutcome("applied", (), "the edit changes nothing; nothing was written")
    problems = _precheck(plan, disk, display)
    if problems:
        conflicts = tuple(dict.fromkeys(path for path, _ in problems))
        listed = "; ".join(f"{path}: {reason}" for path, reason in problems)
        return CommitOutcome(
            "conflict",
            (),
            f"nothing was written: the workspace changed since the edit was planned ({listed}); "
            "ask for the edit again",
            conflicts,
        )
    transaction = _Transaction(disk, display)
    try:
        for op in plan.resources:
            transaction.resource(op)
        # Edits that change nothing (a formatter's no-op) leave the file alone: no new mtime, no rewrite.
        changing = [file_edit for file_edit in plan.files if file_edit.after != file_edit.before]
        staged = [(file_edit, transaction.stage(file_edit)) for file_edit in changing]
        for file_edit, temp in staged:
            transaction.install(file_edit, temp)
    except (OSError, ValueError, _Refused) as error:  # ValueError: text that cannot be UTF-8 encoded
        failures, changed, leftovers = transaction.roll_back()
        cause = _step_of(error, display)
        if failures:
            return CommitOutcome(
                "uncertain",
                tuple(dict.fromkeys(changed)),
                f"the edit failed ({cause}) and putting the files back failed too: {'; '.join(failures)}"
                + (f"; temporary files left: {', '.join(leftovers)}" if leftovers else "")
                + ". Check these files (for example with git status and git diff) before editing them again",
            )
        return CommitOutcome(
            "failed",
            (),
            f"the edit failed ({cause}); every file was put back as it was"
            + (f" (temporary files left: {', '.join(leftovers)})" if leftovers else "")
            + "; fix the cause and ask for the edit again",
        )
    left = transaction.finish()
    written = tuple(dict.fromkeys(transaction.written))
    message = f"applied: {len(written)} file(s) written" if written else "applied"
    if left:
        message += f"; could not remove the applier's kept originals: {', '.join(left)} (safe to delete)"
    return CommitOutcome("applied", written, message)
