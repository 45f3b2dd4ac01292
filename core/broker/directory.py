"""Which task host serves a session: the ``ExecutionDirectory`` interface and a JSON-file implementation.

The broker's route names a session (``/lsp/{sessionId}``); the language server runs on that session's
current *execution*, a task host with a ``kandev-lsp serve`` stream. An embedder (Kandev's backend)
implements :class:`ExecutionDirectory` over its own store; ``kandev-lsp broker --directory FILE`` uses
:class:`FileExecutionDirectory`, re-read when the file changes (K11.2, K11.3)::

    {"sessions": {"sess-1": "exec-1"},
     "executions": {"exec-1": {"executor": "local", "streamUrl": "ws://127.0.0.1:41237/api/v1/lsp/stream",
                               "token": "...", "workspace": "/work/task"}}}

Lookups fail with :class:`DirectoryError` carrying the close code: 4002 for an unknown session or an
unusable entry, 4004 for an executor kind the broker does not support. Messages never hold tokens.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

from kandev_lsp.errors import KandevLspError

__all__ = [
    "SUPPORTED_EXECUTORS",
    "DirectoryContents",
    "DirectoryError",
    "DirectoryFileError",
    "Execution",
    "ExecutionDirectory",
    "FileExecutionDirectory",
    "parse_directory",
    "replaced_executions",
]

_log = logging.getLogger("kandev_lsp.broker")

SUPPORTED_EXECUTORS: Final = frozenset({"local", "docker"})
SESSION_UNAVAILABLE: Final = 4002
EXECUTOR_UNSUPPORTED: Final = 4004
#: A directory file is a handful of entries per task host; refuse to parse something absurd.
_MAX_FILE_BYTES: Final = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Execution:
    """One task host as the broker reaches it."""

    id: str
    executor: str
    stream_url: str
    token: str = field(repr=False)
    workspace: str


class DirectoryError(KandevLspError):
    """A session cannot be served; ``code`` is the WebSocket close code to send (4002 or 4004)."""

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        super().__init__(message)


class DirectoryFileError(KandevLspError):
    """The directory file cannot be read or parsed."""


class ExecutionDirectory(Protocol):
    """Resolves a session to its current execution. Implementations must be cheap to call on every
    connection, and must not reveal tokens in their errors."""

    def resolve(self, session_id: str) -> Execution:
        """The session's current execution.

        :raises DirectoryError: unknown session or unusable execution (4002); unsupported executor (4004).
        """
        ...


@dataclass(frozen=True, slots=True)
class _Entry:
    execution: Execution | None
    problem: str = ""  # why the entry is unusable
    code: int = SESSION_UNAVAILABLE


@dataclass(frozen=True, slots=True)
class DirectoryContents:
    """A parsed directory: sessions to execution ids, and each execution (or why it is unusable)."""

    sessions: Mapping[str, str]
    entries: Mapping[str, _Entry]

    def resolve(self, session_id: str) -> Execution:
        execution_id = self.sessions.get(session_id)
        if execution_id is None:
            raise DirectoryError(SESSION_UNAVAILABLE, "unknown session")
        entry = self.entries.get(execution_id)
        if entry is None:
            raise DirectoryError(SESSION_UNAVAILABLE, "the session's execution is not in the directory")
        if entry.execution is None:
            raise DirectoryError(entry.code, entry.problem)
        return entry.execution

    def executions(self) -> dict[str, Execution]:
        return {key: entry.execution for key, entry in self.entries.items() if entry.execution is not None}


def _is_absolute(path: str) -> bool:
    return PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute()


def _read_token_file(path: str) -> str:
    if not _is_absolute(path):
        raise ValueError("tokenFile must be an absolute path")
    try:
        with open(path, encoding="utf-8") as handle:
            token = handle.readline().strip()
    except OSError as exc:
        raise ValueError(f"cannot read its tokenFile: {exc.strerror}") from exc
    if not token:
        raise ValueError("its tokenFile is empty")
    return token


def _entry(execution_id: str, raw: object) -> _Entry:
    if not isinstance(raw, dict):
        return _Entry(None, "the execution's entry is not an object")
    executor = raw.get("executor")
    if not isinstance(executor, str) or not executor:
        return _Entry(None, "the execution has no executor kind")
    if executor not in SUPPORTED_EXECUTORS:
        return _Entry(
            None,
            f"executor {executor[:32]!r} is not supported; the broker serves {sorted(SUPPORTED_EXECUTORS)}",
            EXECUTOR_UNSUPPORTED,
        )
    url = raw.get("streamUrl")
    if not isinstance(url, str) or urlsplit(url).scheme not in ("ws", "wss") or not urlsplit(url).netloc:
        return _Entry(None, "the execution's streamUrl is not a ws:// or wss:// URL")
    workspace = raw.get("workspace")
    if not isinstance(workspace, str) or not _is_absolute(workspace):
        return _Entry(None, "the execution's workspace is not an absolute path")
    token = raw.get("token")
    token_file = raw.get("tokenFile")
    if isinstance(token, str) and token.strip():
        value = token.strip()
    elif isinstance(token_file, str):
        try:
            value = _read_token_file(token_file)
        except ValueError as exc:
            return _Entry(None, f"the execution's {exc}")
    else:
        return _Entry(None, "the execution has neither a token nor a tokenFile")
    return _Entry(Execution(execution_id, executor, url, value, workspace))


def parse_directory(text: str) -> DirectoryContents:
    """Parse a directory file's text. The whole file must be well formed (the shape above); a single
    execution entry that is unusable only makes its sessions unavailable.

    :raises DirectoryFileError: not JSON, or not the expected shape.
    """
    try:
        data: Any = json.loads(text)
    except (ValueError, RecursionError) as exc:  # nested past json's depth raises the second
        raise DirectoryFileError(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise DirectoryFileError('expected an object with "sessions" and "executions"')
    sessions, executions = data.get("sessions", {}), data.get("executions", {})
    if not isinstance(sessions, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in sessions.items()
    ):
        raise DirectoryFileError('"sessions" must map session ids to execution ids (strings)')
    if not isinstance(executions, dict):
        raise DirectoryFileError('"executions" must map execution ids to objects')
    entries = {execution_id: _entry(execution_id, raw) for execution_id, raw in executions.items()}
    return DirectoryContents(dict(sessions), entries)


def replaced_executions(before: Mapping[str, Execution], after: Mapping[str, Execution]) -> set[str]:
    """Executions whose leases must end (``runtime_stop``, K12.6): gone from the directory, or replaced
    in place (another stream URL, token, workspace or executor under the same id)."""
    return {key for key, execution in before.items() if after.get(key) != execution}


class FileExecutionDirectory:
    """:class:`ExecutionDirectory` over a JSON file, re-read when its modification time, size or inode
    change. A later edit that cannot be parsed keeps the last good contents and is logged once.

    :raises DirectoryFileError: the file cannot be read or parsed when the directory is created (a broker
        must not start with an unusable directory).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._stamp: tuple[int, int, int] | None = None
        self._contents = DirectoryContents({}, {})
        self.problem: str | None = None
        self._reload(raise_errors=True)

    def resolve(self, session_id: str) -> Execution:
        self.refresh()
        return self._contents.resolve(session_id)

    def executions(self) -> dict[str, Execution]:
        """Every usable execution by id, as of the last good read (after a refresh)."""
        self.refresh()
        return self._contents.executions()

    def refresh(self) -> bool:
        """Re-read the file if it changed. Returns whether the contents changed."""
        return self._reload(raise_errors=False)

    def _reload(self, *, raise_errors: bool) -> bool:
        try:
            stat = os.stat(self.path)
            stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
            if stamp == self._stamp:
                return False
            if stat.st_size > _MAX_FILE_BYTES:
                raise DirectoryFileError(f"larger than {_MAX_FILE_BYTES} bytes")
            with open(self.path, encoding="utf-8") as handle:
                text = handle.read()
            contents = parse_directory(text)
        except (OSError, UnicodeDecodeError, DirectoryFileError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            message = f"the execution directory {self.path} is unusable: {detail}"
            if raise_errors:
                raise DirectoryFileError(
                    message + '; fix it (see docs/broker-contract.md, "The execution directory")'
                ) from None
            if message != self.problem:
                _log.warning("%s; keeping its last good contents", message)
            self.problem = message
            return False
        self._stamp = stamp
        changed = contents != self._contents
        self._contents = contents
        self.problem = None
        return changed
