"""The workspace as the agent tools see it: roots, their ids, model-facing paths and path safety.

B8.6: a workspace has one or more roots; a relative path is looked up in every root, a path that exists in
several roots needs ``rootId``, and model-facing paths are root-qualified (``<rootId>/<relative>``) as soon
as there is more than one root, so two ``src/index.ts`` never look alike. With one root they are plain
workspace-relative paths.

B8.11: every path an agent passes and every URI a server returns must stay inside an open root. The check
is made on the *real* path (``os.path.realpath``): ``..`` traversal, an absolute path elsewhere, a symlink
whose target is outside every root, a non-``file:`` URI, a ``file:`` URI with an authority or a query all
fail closed with :class:`~kandev_lsp.intel.errors.PathOutsideWorkspace`. Paths are resolved to real paths
once, here, so everything downstream (documents, URIs sent to servers, dedup of locations) works on one
spelling of each file.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar
from urllib.parse import unquote_to_bytes, urlsplit

from kandev_lsp.intel.errors import (
    AmbiguousPath,
    IntelError,
    PathIsFolder,
    PathNotFound,
    PathOutsideWorkspace,
)
from kandev_lsp.platform import HostPlatform
from kandev_lsp.stream.uri import workspace_uri

__all__ = ["Root", "Workspace", "WorkspaceFile"]

#: ``scheme:`` at the start of a path-like string; two letters at least, so ``C:\x`` is not a scheme.
_SCHEME: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):")
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Root:
    """One open workspace folder: its id (the first segment of root-qualified paths) and real path."""

    id: str
    path: str
    uri: str


@dataclass(frozen=True, slots=True)
class WorkspaceFile:
    """A path that passed the safety check: which root holds it and how to show it to the model."""

    root: Root
    #: Relative to the root, ``/``-separated; ``""`` for the root itself.
    relative: str
    #: The real absolute path (symlinks resolved).
    absolute: str
    #: What the model sees: ``relative`` in a single-root workspace, ``<rootId>/<relative>`` otherwise.
    display: str
    uri: str


def _root_ids(paths: Sequence[str], ids: Sequence[str] | None) -> list[str]:
    if ids is not None:
        if len(ids) != len(paths):
            raise ValueError(f"{len(ids)} root ids given for {len(paths)} roots")
        for root_id in ids:
            if not root_id or "/" in root_id or "\\" in root_id or root_id in {".", ".."}:
                raise ValueError(f"root id {root_id!r} is not usable as a path segment")
        if len(set(ids)) != len(ids):
            raise ValueError(f"root ids must be unique, got {list(ids)}")
        return list(ids)
    chosen: list[str] = []
    for path in paths:
        base = os.path.basename(path.rstrip(os.sep)) or "root"
        candidate, number = base, 2
        while candidate in chosen:
            candidate, number = f"{base}-{number}", number + 1
        chosen.append(candidate)
    return chosen


def _real_path(path: str, folders: dict[str, str]) -> str:
    """``os.path.realpath(path)``, with the real paths of folders remembered in ``folders``.

    The real path of ``dir/name`` is the real path of ``dir`` joined with ``name`` unless ``name`` is
    itself a symbolic link (or ``.``/``..``), which one ``lstat`` tells.
    """
    folder, name = os.path.split(path)
    if not name or name in (".", "..") or os.path.islink(path):
        return os.path.realpath(path)
    real_folder = folders.get(folder)
    if real_folder is None:
        real_folder = folders[folder] = os.path.realpath(folder)
    return os.path.join(real_folder, name)


def _folders_of(path: str) -> list[str]:
    """``path`` and each folder above it, without the file system's root (``/a/b`` -> ``/a/b``, ``/a``)."""
    folders: list[str] = []
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return folders
        folders.append(path)
        path = parent


def _inside(path: str, folder: str) -> bool:
    """Whether normalised absolute ``path`` is ``folder`` or below it (a string test: no I/O)."""
    path, folder = os.path.normcase(path), os.path.normcase(folder)
    if path == folder:
        return True
    prefix = folder if folder.endswith(os.sep) else folder + os.sep
    return path.startswith(prefix)


#: Entries of each of a workspace's string memos; past it the memo starts again (bounded memory).
_MEMO_ENTRIES: Final = 20_000


def _remember(memo: dict[str, _T], key: str, value: _T) -> None:
    if len(memo) >= _MEMO_ENTRIES:
        memo.clear()
    memo[key] = value


class Workspace:
    """The open roots of one agent session, and the only way paths get in and out of the tools.

    :param folders: the root folders (absolute; resolved to real paths, must exist).
    :param ids: root ids; by default each folder's base name, with ``-2``, ``-3`` appended to repeats.
    """

    def __init__(
        self, folders: Iterable[str | os.PathLike[str]], *, ids: Sequence[str] | None = None
    ) -> None:
        paths: list[str] = []
        for folder in folders:
            text = os.fspath(folder)
            if not os.path.isabs(text):
                raise ValueError(f"workspace root {text!r} is not absolute")
            real = os.path.realpath(text)
            if not os.path.isdir(real):
                raise ValueError(f"workspace root {text!r} is not a directory")
            if real in paths:
                raise ValueError(f"workspace root {text!r} is given twice (as {real!r})")
            paths.append(real)
        if not paths:
            raise ValueError("a workspace needs at least one root")
        host = HostPlatform.current()
        self.roots: tuple[Root, ...] = tuple(
            Root(root_id, path, workspace_uri(path, host))
            for root_id, path in zip(_root_ids(paths, ids), paths, strict=True)
        )
        self._host = host
        # Every folder on the roots' paths below the file system's root (where a link could be put), once:
        # what roots_in_place() looks at.
        self._root_chain: tuple[str, ...] = tuple(
            sorted({folder for root in self.roots for folder in _folders_of(root.path)})
        )
        # Innermost root first, so a file in a nested root belongs to the nested one.
        self._by_depth = sorted(self.roots, key=lambda root: len(root.path), reverse=True)
        # Pure string work remembered across calls (never a file system answer: every lookup still makes
        # its realpath check, B8.11): a real path's place in the roots, and a URI's path.
        self._placed: dict[str, WorkspaceFile] = {}
        self._uri_paths: dict[str, str] = {}

    @property
    def multi_root(self) -> bool:
        """Whether model-facing paths carry their root id."""
        return len(self.roots) > 1

    def root(self, root_id: str) -> Root:
        """The root with this id.

        :raises PathNotFound: no root has that id; the message lists the ids there are.
        """
        for root in self.roots:
            if root.id == root_id:
                return root
        raise PathNotFound(
            f"unknown rootId {root_id!r}; the workspace roots are: {', '.join(r.id for r in self.roots)}",
            roots=[r.id for r in self.roots],
        )

    # -- paths coming in from the agent -------------------------------------------------------------

    def resolve(self, path: str, root_id: str | None = None, *, must_exist: bool = True) -> WorkspaceFile:
        """An agent-given path (absolute, workspace-relative, root-qualified, or a ``file:`` URI) as a
        :class:`WorkspaceFile`.

        :raises PathOutsideWorkspace: the path leaves every root (traversal, symlink, other absolute path,
            non-``file:`` URI).
        :raises PathNotFound: ``must_exist`` and no root holds the path.
        :raises AmbiguousPath: a relative path that exists in several roots and no ``rootId``.
        """
        if not path:
            raise PathNotFound("path is empty: give a file path relative to the workspace")
        if "\x00" in path:
            raise PathOutsideWorkspace("path contains a NUL character")
        scheme = _SCHEME.match(path)
        if scheme:
            return self._checked_exists(self.from_uri(path), path, must_exist)
        if os.path.isabs(path):
            return self._checked_exists(self.from_absolute(path, original=path), path, must_exist)
        relative = posixpath.normpath(path.replace("\\", "/"))
        if relative == ".." or relative.startswith("../"):
            raise PathOutsideWorkspace(
                f"path {path!r} leaves the workspace ('..' above the root); give a path inside the workspace"
            )
        if root_id is not None:
            return self._checked_exists(self._join(self.root(root_id), relative, path), path, must_exist)
        if not self.multi_root:
            return self._checked_exists(self._join(self.roots[0], relative, path), path, must_exist)
        return self._search_roots(relative, path, must_exist)

    def _join(self, root: Root, relative: str, original: str) -> WorkspaceFile:
        joined = root.path if relative == "." else os.path.join(root.path, *relative.split("/"))
        return self.from_absolute(joined, original=original)

    def _checked_exists(self, found: WorkspaceFile, original: str, must_exist: bool) -> WorkspaceFile:
        if must_exist and not os.path.exists(found.absolute):
            raise PathNotFound(
                f"no file {original!r} in the workspace (looked in {found.root.id}: {found.root.path}); "
                "check the path (code_symbols with a query finds symbols across the workspace)"
            )
        return _not_a_folder(found, original) if must_exist else found

    def _search_roots(self, relative: str, original: str, must_exist: bool) -> WorkspaceFile:
        found: dict[str, WorkspaceFile] = {}
        escapes: list[PathOutsideWorkspace] = []
        attempts: list[tuple[Root, str]] = [(root, relative) for root in self.roots]
        head, _, rest = relative.partition("/")
        for root in self.roots:
            if root.id == head and rest:  # the root-qualified form the tools hand out
                attempts.insert(0, (root, rest))
        for root, rel in attempts:
            try:
                candidate = self._join(root, rel, original)
            except PathOutsideWorkspace as escape:
                escapes.append(escape)
                continue
            if os.path.exists(candidate.absolute):
                found.setdefault(candidate.absolute, candidate)
        if len(found) == 1:
            only = next(iter(found.values()))
            return _not_a_folder(only, original) if must_exist else only
        if len(found) > 1:
            candidates = [{"rootId": f.root.id, "path": f.display} for f in found.values()]
            raise AmbiguousPath(
                f"{original!r} exists in {len(found)} roots ({', '.join(c['rootId'] for c in candidates)}): "
                "pass rootId, or the root-qualified path",
                candidates,
            )
        if escapes:
            raise escapes[0]
        if not must_exist:
            raise AmbiguousPath(
                f"{original!r} is in no root yet; pass rootId to say which root it belongs to",
                [{"rootId": r.id, "path": f"{r.id}/{relative}"} for r in self.roots],
            )
        raise PathNotFound(
            f"no file {original!r} in any workspace root ({', '.join(r.id for r in self.roots)}); "
            "check the path, or pass rootId"
        )

    # -- paths and URIs coming back from servers ----------------------------------------------------

    def from_absolute(
        self, path: str, *, original: str | None = None, folders: dict[str, str] | None = None
    ) -> WorkspaceFile:
        """An absolute path as a :class:`WorkspaceFile`, after resolving symlinks.

        :param folders: a memo of folders' real paths, shared by the lookups of one operation: a file
            that is not itself a symbolic link is then checked with one ``lstat`` instead of one per path
            segment (a popular symbol's references span hundreds of files in a few folders).
        :raises PathOutsideWorkspace: the real path is in no root.
        """
        if "\x00" in path:
            raise PathOutsideWorkspace("path contains a NUL character")
        real = _real_path(path, folders) if folders is not None else os.path.realpath(path)
        placed = self._placed.get(real)
        if placed is not None:
            return placed
        for root in self._by_depth:
            if _inside(real, root.path):
                relative = real[len(root.path) :].lstrip(os.sep).replace(os.sep, "/")
                if self.multi_root:
                    display = f"{root.id}/{relative}" if relative else root.id
                else:
                    display = relative or "."
                placed = WorkspaceFile(root, relative, real, display, workspace_uri(real, self._host))
                _remember(self._placed, real, placed)
                return placed
        shown = original if original is not None else path
        lexical = os.path.normpath(path)
        if any(_inside(lexical, root.path) for root in self.roots):
            reason = "its real path, through a symbolic link, is outside the workspace roots"
        else:
            reason = "it is outside the workspace roots"
        raise PathOutsideWorkspace(
            f"path {shown!r} refused: {reason}; only files under "
            f"{', '.join(r.path for r in self.roots)} can be read"
        )

    def from_uri(self, uri: str, *, folders: dict[str, str] | None = None) -> WorkspaceFile:
        """A URI (from a server's answer, or an agent) as a :class:`WorkspaceFile`; fails closed.

        :raises PathOutsideWorkspace: not a ``file:`` URI, a remote authority, a query or fragment, or a
            path outside every root.
        """
        path = self._uri_paths.get(uri)
        if path is None:
            path = self._uri_path(uri)
            _remember(self._uri_paths, uri, path)
        return self.from_absolute(path, original=uri, folders=folders)

    def _uri_path(self, uri: str) -> str:
        """The absolute path a ``file:`` URI names (string work only; refusals raise)."""
        try:
            parts = urlsplit(uri)
        except ValueError as error:
            raise PathOutsideWorkspace(f"malformed URI: {error}") from None
        if parts.scheme.lower() != "file":
            raise PathOutsideWorkspace(
                f"URI scheme {parts.scheme!r} is not a file in the workspace (only file: URIs are followed)"
            )
        if parts.netloc not in ("", "localhost"):
            raise PathOutsideWorkspace(f"file URI on host {parts.netloc!r} is not in the workspace")
        if parts.query or parts.fragment:
            raise PathOutsideWorkspace("file URI with a query or fragment is not a plain file path")
        path = os.fsdecode(unquote_to_bytes(parts.path))  # percent-encoded bytes that are not UTF-8 too
        if self._host.is_windows and re.match(r"^/[A-Za-z]:", path):
            path = path[1:]
        if not os.path.isabs(path):
            raise PathOutsideWorkspace("file URI without an absolute path")
        return path

    def try_uri(self, uri: str, *, folders: dict[str, str] | None = None) -> WorkspaceFile | IntelError:
        """:meth:`from_uri`, with the refusal returned instead of raised (for filtering lists)."""
        try:
            return self.from_uri(uri, folders=folders)
        except IntelError as error:
            return error

    def roots_in_place(self) -> bool:
        """Whether every root's path still leads to the folder it named at open (nothing on the way to it
        was replaced by a symbolic link since): made once per tool call by callers that trust earlier path
        checks below the roots (:meth:`ManagedServer.uri_lookup`).

        A root's path was its real path at open, so it still is exactly when no folder on it is a link
        now: one ``lstat`` per folder (each once across roots), without ``realpath``'s string work. A
        folder that cannot be looked at answers False (stricter than ``realpath``, which keeps a missing
        part as it is written).
        """
        if os.name != "posix":
            return all(os.path.realpath(root.path) == root.path for root in self.roots)
        try:
            for folder in self._root_chain:
                if stat.S_ISLNK(os.lstat(folder).st_mode):
                    return False
        except OSError:
            return False
        return True

    def uri_lookup(self) -> Callable[[str], WorkspaceFile | IntelError]:
        """:meth:`try_uri` remembering its answers: one check per file instead of one per location.

        Make one per operation (a tool call): a symlink changed between two calls is checked again.
        """
        memo: dict[str, WorkspaceFile | IntelError] = {}
        folders: dict[str, str] = {}

        def lookup(uri: str) -> WorkspaceFile | IntelError:
            found = memo.get(uri)
            if found is None:
                found = memo[uri] = self.try_uri(uri, folders=folders)
            return found

        return lookup


def _not_a_folder(found: WorkspaceFile, original: str) -> WorkspaceFile:
    """``found``, unless it is a folder: every tool path names a file (a folder answered "no language
    server handles files like 'src'" as if the language were missing, MCP user trial)."""
    if os.path.isdir(found.absolute):
        raise PathIsFolder(
            f"{original!r} is a folder; name a file in it (code_symbols with a query searches the whole "
            "workspace, code_diagnostics without a path covers every file)"
        )
    return found
