"""The server pool behind the read tools: one managed server per (project root, language) (issue 9 runtime).

A tool call names a file; :meth:`ServerPool.server_for` finds the file's language (by the plugins'
extensions), its project root (the language's root markers, never above the workspace root, B8.6) and
returns the running :class:`ManagedServer` for that pair, starting it through the one lifecycle first
(resolve -> install per ``lsp_auto_install_languages`` -> spawn, then ``initialize`` with the plugin's
initialization options and client capabilities). Servers are stopped after ``idle_timeout`` seconds
without a call, the least recently used idle one when ``max_servers`` would be exceeded, and all of them,
gracefully (``shutdown``, ``exit``, then the process tree), when the pool closes.

Documents are opened from disk with the plugin's ``languageId``. Before every query the pool re-syncs
what the agent may have changed with plain file tools (B8.12): an open document whose file changed on
disk (size, mtime, then content hash) gets a full-text ``didChange`` with the next server-facing version;
a file seen in earlier answers that changed gets ``workspace/didChangeWatchedFiles`` when the server
registered for it, and is opened otherwise, so the next answer is about the code on disk.

Readiness: :meth:`ManagedServer.wait_ready` waits within the tool call's deadline; when the server is not
ready in time the call fails ``unavailable`` with the progress titles and elapsed time
(:class:`~kandev_lsp.intel.runtime.executor.ProviderUnavailable`), never with a silently incomplete answer. For
typescript-language-server the syntax-only server is turned off (``tsserver.useSyntaxServer: never``):
its early answers are incomplete (FACTS: 161 lines in 1 file instead of 394 in 18 on zod).

A language whose server cannot be had raises :class:`ServerMissing` carrying an actionable notice from the
lifecycle's :class:`~kandev_lsp.lifecycle.LaunchError` (B8.9-B8.10).

Installing (``--install``): a call that finds its server still being prepared says which phase, from the
lifecycle's observer (the stream's ``installing``/``installed`` status frames): "installing <server> (npm
<package>@<version>) for <language>: N s so far" or "still starting", counted from when that phase began.
A failed install is :class:`InstallFailed` (``unavailable``, never an empty answer) with the installer's
last lines; it is remembered for :data:`INSTALL_RETRY_AFTER` seconds, during which calls answer the same
failure instead of running the installer again, and then tried once more.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from kandev_lsp.intel.errors import IntelError
from kandev_lsp.intel.files.regular import NOT_REGULAR, NotRegularFile, read_regular
from kandev_lsp.intel.files.text import MAX_TEXT_BYTES, Document
from kandev_lsp.intel.files.workspace import Root, Workspace, WorkspaceFile
from kandev_lsp.intel.runtime.executor import Deadline, ProviderUnavailable, ProviderUnsupported
from kandev_lsp.intel.runtime.ledger import FENCE_METHOD, Activity, ChangeLedger
from kandev_lsp.intel.runtime.notices import (
    install_failed_message,
    install_output_lines,
    launching_message,
    missing_server_notice,
)
from kandev_lsp.intel.runtime.pathmemo import Placed, watched_lookup
from kandev_lsp.intel.runtime.watch import DiskWatch
from kandev_lsp.intel.runtime.watchers import CREATED, file_operation_wanted, wanted_events
from kandev_lsp.lsp.errors import LspError, RequestRefused
from kandev_lsp.lsp.positions import PositionEncoding
from kandev_lsp.lsp.roots import project_root as _project_root
from kandev_lsp.platform import HostPlatform

# Imported with this module, not lazily by the first tool call: the process layer (about 20 ms) would
# otherwise be imported on the cold path between the call and its server's start (issue 9 cold start).
from kandev_lsp.process import OwnedProcess
from kandev_lsp.session import log_event
from kandev_lsp.stream.uri import workspace_uri

if TYPE_CHECKING:
    from kandev_lsp.host import PluginHost
    from kandev_lsp.language import LanguageSpec
    from kandev_lsp.lifecycle import Lifecycle
    from kandev_lsp.lsp import LspClient
    from kandev_lsp.taskenv import TaskEnvironment

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_SERVERS",
    "INSTALL_RETRY_AFTER",
    "UNANSWERED",
    "InstallFailed",
    "ManagedServer",
    "ServerMissing",
    "ServerPool",
    "unanswered_reason",
    "unanswered_result",
]

_log = logging.getLogger("kandev_lsp.intel")

#: Seconds without a tool call after which a server is stopped.
DEFAULT_IDLE_TIMEOUT: Final = 600.0
#: Servers running at once at most (one per project root and language).
DEFAULT_MAX_SERVERS: Final = 8
#: Seconds ``initialize`` may take on a cold, loaded machine.
INITIALIZE_TIMEOUT: Final = 60.0
#: Seconds a failed install is remembered: calls meanwhile answer the failure (with the installer's last
#: lines) instead of starting the installer again at once; the first call after it tries once more.
INSTALL_RETRY_AFTER: Final = 60.0
#: Initialization options the tools need on top of the plugin's, per language: complete first answers
#: (no syntax-only tsserver) and inlay hints (tsserver offers none unless asked for in preferences).
TOOL_INITIALIZATION_OPTIONS: Final[Mapping[str, Mapping[str, Any]]] = {
    "typescript": {
        "tsserver": {"useSyntaxServer": "never"},
        "preferences": {
            "includeInlayParameterNameHints": "all",
            "includeInlayFunctionParameterTypeHints": True,
            "includeInlayVariableTypeHints": True,
            "includeInlayPropertyDeclarationTypeHints": True,
            "includeInlayFunctionLikeReturnTypeHints": True,
            "includeInlayEnumMemberValueHints": True,
        },
    },
}
_WATCHED: Final = "workspace/didChangeWatchedFiles"
#: Files that appeared since the last refresh opened at most per refresh (see ManagedServer._open_created).
OPEN_CREATED_MAX: Final = 20
#: Client capabilities offered with an edit applier: resource operations and file-operation notices.
_EDIT_CAPABILITIES: Final = {
    "workspace": {
        "workspaceEdit": {
            "documentChanges": True,
            "resourceOperations": ["create", "rename", "delete"],
            "failureHandling": "transactional",
        },
        "fileOperations": {"didCreate": True, "didRename": True, "didDelete": True},
    }
}
_CHANGED: Final = 2
#: Seconds a fence may take (a server busy checking answers it after that pass).
FENCE_TIMEOUT: Final = 60.0
#: Seconds a progress token the server created counts as work in progress before its ``begin`` comes
#: (pyright sends it after the check pass that follows the create: seconds late); as a fence, one that
#: never begins stops counting.
CREATED_PROGRESS_WAIT: Final = 60.0
#: Paths kept in a server's path -> URI map at most; past it the map starts again and one refresh looks
#: at every file.
_URIS_KEPT: Final = 50_000


class ServerMissing(Exception):
    """No server can answer for this file: ``notice`` says why and what to do (B8.9)."""

    def __init__(self, language: str | None, notice: str) -> None:
        super().__init__(notice)
        self.language = language
        self.notice = notice


#: What asking a file's server may fail with when it cannot answer: missing, not ready, gone, or the file
#: refused (a caller that reports on many files names those, never drops them silently).
UNANSWERED: Final = (IntelError, ProviderUnavailable, ServerMissing, LspError, ConnectionError)


def unanswered_result(error: BaseException) -> dict[str, Any]:
    """``ok: false`` for a call its server could not answer (B8.1; issue 20 item 7): ``unsupported`` when
    this server never will (ask something else), else ``unavailable`` (missing, not ready, or gone
    mid-call: the next call restarts it), with what the server reported."""
    if isinstance(error, ServerMissing):
        return {"ok": False, "status": "unavailable", "error": error.notice}
    if isinstance(error, ProviderUnavailable):
        status = "unsupported" if isinstance(error, ProviderUnsupported) else "unavailable"
        return {"ok": False, "status": status, "error": error.message, **error.detail}
    return {
        "ok": False,
        "status": "unavailable",
        "error": f"the language server connection ended during the call ({error}); ask again to restart it",
    }


def unanswered_reason(error: BaseException) -> str:
    """Why no server answered for a file (one of :data:`UNANSWERED`): the tool's message, or the
    :func:`unanswered_result` error."""
    if isinstance(error, IntelError):
        return error.message
    return str(unanswered_result(error)["error"])


class InstallFailed(ProviderUnavailable):
    """The server's install failed: ``unavailable`` with the installer's last lines (``installError``)."""


@dataclass(slots=True)
class _Launch:
    """Where one server's start is: ``installing`` or ``starting``, since when (monotonic and wall)."""

    installing: bool = False
    since: float = field(default_factory=time.monotonic)
    wall: float = field(default_factory=time.time)
    installer: str | None = None

    def enter(self, *, installing: bool) -> None:
        self.installing = installing
        self.since = time.monotonic()
        self.wall = time.time()


@dataclass(frozen=True, slots=True)
class _FailedInstall:
    """A failed install remembered until ``retry`` (monotonic): what the calls meanwhile answer."""

    command: str
    language: str
    installer: str | None
    error: str
    lines: tuple[str, ...]
    failed_wall: float
    retry: float

    def raised(self) -> InstallFailed:
        now = time.monotonic()
        wall = time.time()
        message = install_failed_message(
            self.command,
            self.language,
            installer=self.installer,
            error=self.error,
            lines=list(self.lines),
            failed=self.failed_wall,
            retry=wall + (self.retry - now),
            now=wall,
        )
        return InstallFailed(
            message,
            installError=list(self.lines),
            retryInSeconds=round(max(0.0, self.retry - now), 1),
        )


class _PhaseObserver:
    """Hears the lifecycle's install events (as the stream's status frames do) and records the phase."""

    def __init__(self, launch: _Launch, summary: Callable[[], str | None]) -> None:
        self._launch = launch
        self._summary = summary

    async def installing(self, language: str) -> None:
        self._launch.installer = self._summary()
        self._launch.enter(installing=True)

    def progress(self, report: Any) -> None:
        return None

    async def installed(self, language: str, receipt: Any) -> None:
        self._launch.enter(installing=False)

    async def install_failed(self, language: str, message: str) -> None:
        return None


@dataclass(slots=True)
class _Synced:
    """What the server has for one file: the disk stamp and content hash it was last sent."""

    stamp: tuple[int, int]
    digest: bytes
    document: Document | None = None


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def _led_away(path: str) -> bool:
    """Whether ``path``, a real path when its file was placed in the workspace, now leads through a
    symbolic link (the file or a folder above it swapped for one): what it reads is no longer that file,
    and may be outside the workspace (B8.11)."""
    return os.path.realpath(path) != path


def _read(path: str) -> tuple[bytes, tuple[int, int]] | None:
    """The file's bytes and the stamp of what was read, or None (missing, unreadable, over 8 MiB).

    :raises NotRegularFile: a FIFO, socket or device: refused at once, never waited on.
    """
    try:
        read = read_regular(path, max_bytes=MAX_TEXT_BYTES, limit=MAX_TEXT_BYTES + 1)
    except NotRegularFile:
        raise
    except OSError:
        return None
    if read.data is None:
        return None
    return read.data, read.stamp


def _merge(base: Mapping[str, Any] | None, extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base or {})
    for key, value in extra.items():
        current = merged.get(key)
        merged[key] = (
            _merge(current, value) if isinstance(current, Mapping) and isinstance(value, Mapping) else value
        )
    return merged


#: Answers a server's ``workspace/applyEdit`` (the mutation coordinator installs one, B6.23).
EditApplier = Callable[["ManagedServer", Mapping[str, Any]], Awaitable[dict[str, Any]]]
_FILE_OPERATIONS: Final = {"create": "didCreate", "rename": "didRename", "delete": "didDelete"}


def save_options(capabilities: Mapping[str, Any]) -> tuple[bool, bool]:
    """``(send didSave, include the text)`` from the server's ``textDocumentSync.save`` (K2.7, B3.7)."""
    sync = capabilities.get("textDocumentSync")
    save = sync.get("save") if isinstance(sync, Mapping) else None
    if isinstance(save, Mapping):
        return True, bool(save.get("includeText"))
    return bool(save), False


@dataclass
class ManagedServer:
    """One running server: its LSP client, process, negotiated encoding and the documents it was sent."""

    language: LanguageSpec
    project_root: str
    client: LspClient
    process: OwnedProcess
    plugins: PluginHost
    encoding: PositionEncoding
    capabilities: dict[str, Any]
    last_used: float = field(default_factory=time.monotonic)
    in_flight: int = 0
    #: Open documents by URI.
    documents: dict[str, _Synced] = field(default_factory=dict)
    #: Files seen in answers but not open, by URI: re-announced when they change on disk.
    seen: dict[str, tuple[WorkspaceFile, tuple[int, int]]] = field(default_factory=dict)
    #: Disk stamps the last :meth:`refresh` took of seen files, by absolute path: the tool call's text
    #: reads (snippets, bodies) use them instead of a second ``stat`` of each file.
    checked: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: Which of those files changed on disk since the last :meth:`refresh` (inotify): only they get a
    #: ``stat`` (every file still does where changes cannot be watched, B8.12).
    disk_watch: DiskWatch = field(default_factory=DiskWatch)
    #: Files answers pointed at, by URI, whose path check (B8.11) was made while the disk watch was on
    #: them: trusted again, without an ``lstat``, while the watch reports no change (:meth:`uri_lookup`).
    placed: dict[str, Placed] = field(default_factory=dict)
    #: The workspace whose path check (B8.11) a file must pass before it is opened here.
    workspace: Workspace | None = None
    #: Documents and seen files (URIs) :meth:`refresh` must look at next: new ones, and those the disk
    #: watch did not call unchanged last time.
    _pending: set[str] = field(default_factory=set)
    #: The URI of each document or seen file, by absolute path (to map the watch's changed paths).
    _uri_of: dict[str, str] = field(default_factory=dict)
    #: The disk watch's layout count at the last refresh; a different one makes it look at every file.
    _layout: int = -1
    #: What the server was told of each file and since when it has it (diagnostics' freshness).
    ledger: ChangeLedger = field(default_factory=ChangeLedger)
    _fence: asyncio.Task[None] | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def name(self) -> str:
        return self.language.command

    def offers(self, capability: str) -> bool:
        """Whether the server advertised ``capability`` (``referencesProvider``) or registered it later."""
        value = self.capabilities.get(capability)
        if value not in (None, False):
            return True
        method = {"diagnosticProvider": "textDocument/diagnostic"}.get(capability)
        return method is not None and bool(self.client.endpoint.registrations.for_method(method))

    async def request(self, method: str, params: Any, timeout: float) -> Any:
        """One request (used as the executor's ``call``); ``ProviderUnavailable`` once the server is gone.

        It ends itself with the client's ``RequestTimeout`` (a ``TimeoutError``, ``$/cancelRequest`` sent)
        once ``timeout`` passes: the tools run it ``self_timed``, without a timer of the executor's own."""
        if self.client.closed:
            raise ProviderUnavailable(
                f"the {self.name} server stopped ({self.client.closed_reason}); ask again to restart it"
            )
        return await self.client.request(method, params, timeout=timeout)

    async def wait_ready(self, deadline: Deadline) -> None:
        """Wait for readiness within ``deadline``.

        :raises ProviderUnavailable: not ready in time, with the server's progress titles and elapsed time.
        """
        if self.client.readiness is None or self.client.readiness.ready:
            return
        status = await self.client.wait_ready(deadline.remaining())
        if status.ready:
            return
        if self.client.closed:
            raise ProviderUnavailable(f"the {self.name} server stopped: {self.client.closed_reason}")
        titles = ", ".join(status.progress) or "no progress reported"
        raise ProviderUnavailable(
            f"the {self.name} server is not ready yet (waiting for {status.waiting_for}; "
            f"{titles}; {status.elapsed:.1f} s since it started): its answers would be incomplete. "
            "Ask again in a few seconds.",
            readiness=status.to_json(),
        )

    # -- documents ---------------------------------------------------------------------------------------
    async def sync(self, file: WorkspaceFile) -> Document:
        """The file as the server now has it: opened from disk, or re-sent when the disk changed."""
        async with self._lock:
            return await self._sync(file)

    def watched_document(self, file: WorkspaceFile) -> Document | None:
        """The file's open document when the disk watch says it is unchanged since the last drain, else
        None (then :meth:`sync`). Right after :meth:`refresh`, in the same step of a tool call, that is
        :meth:`sync`'s answer without its lock and ``stat`` (issue 9); later the drain is stale: use
        :meth:`sync`."""
        synced = self.documents.get(file.uri)
        if synced is None or synced.document is None:
            return None
        return synced.document if self.disk_watch.unchanged(file.absolute, file.root.path) else None

    async def _sync(self, file: WorkspaceFile) -> Document:
        synced = self.documents.get(file.uri)
        if synced is not None and synced.document is not None and _stamp(file.absolute) == synced.stamp:
            return synced.document
        try:
            read = await asyncio.to_thread(_read, file.absolute)
        except NotRegularFile:
            raise IntelError(f"{file.display} is {NOT_REGULAR}", status="not-a-file") from None
        if read is None:
            raise ProviderUnavailable(f"{file.display} cannot be read as text (missing, or over 8 MiB)")
        data, stamp = read
        digest = hashlib.blake2b(data, digest_size=16).digest()
        text = data.decode("utf-8", errors="replace")
        documents = self.client.endpoint.documents
        if synced is not None and synced.document is not None and synced.digest == digest:
            synced.stamp = stamp  # touched, not changed
            return synced.document
        if synced is None or not documents.is_open(file.uri):
            language_id = (
                self.plugins.language_id(self.language, file.absolute) or self.language.language_ids[0]
            )
            version = documents.open(file.uri, language_id)
            await self.client.notify(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": file.uri,
                        "languageId": language_id,
                        "version": version,
                        "text": text,
                    }
                },
            )
            self._unsee(file.uri)
            self.noted(file.uri, file.display, opened=True)
        else:
            version = documents.change(file.uri)
            await self.client.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": file.uri, "version": version}, "contentChanges": [{"text": text}]},
            )
            self.noted(file.uri, file.display)
        document = Document(file, text, version)
        self.documents[file.uri] = _Synced(stamp, digest, document)
        self._known(file)
        return document

    def _known(self, file: WorkspaceFile) -> None:
        """A new document or seen file: the next :meth:`refresh` looks at it (and starts watching it)."""
        self._pending.add(file.uri)
        if len(self._uri_of) >= _URIS_KEPT:
            self._uri_of.clear()
            self._layout = -1  # the next refresh looks at every file
        self._uri_of[file.absolute] = file.uri

    def _unsee(self, uri: str) -> None:
        entry = self.seen.pop(uri, None)
        if entry is not None and entry[0].absolute in self.checked:
            self.checked = {k: v for k, v in self.checked.items() if k != entry[0].absolute}

    async def refresh(self) -> int:
        """Re-sync every open document and seen file changed on disk; returns how many changed.

        With the disk watch on, only the files it cannot vouch for are looked at (B8.12, issue 9 overhead
        goal): those it named since the last refresh, and those it did not call unchanged last time (new,
        not yet watched, or never watchable). After a change of the watched folders' shape (any entry
        created, moved or deleted, a reset) and without the watch, every file is, as before.
        """
        async with self._lock:
            changed = 0
            watch = self.disk_watch
            watch.drain()
            if watch.active and not watch.walked(self.project_root):
                await asyncio.to_thread(watch.watch_tree, self.project_root)
            pending, self._pending = self._pending, set()
            if not watch.active or watch.layout != self._layout:
                documents: Iterable[str] = list(self.documents)
                seen: Iterable[str] = list(self.seen)
                checked: dict[str, tuple[int, int]] = {}
            else:
                touched = pending.union(map(self._uri_of.get, watch.changed)) if watch.changed else pending
                documents = [uri for uri in touched if uri in self.documents]
                seen = [uri for uri in touched if uri in self.seen]
                checked = dict(self.checked) if seen else self.checked
            self._layout = watch.layout
            for uri in documents:
                synced = self.documents.get(uri)
                document = synced.document if synced is not None else None
                if synced is None or document is None:
                    continue
                path = document.file.absolute
                if watch.unchanged(path, document.file.root.path):
                    continue
                self._pending.add(uri)
                if _stamp(path) == synced.stamp:
                    continue
                if not os.path.lexists(path) or _led_away(path):
                    # deleted, or swapped for a link (the path was a real path when it was opened): the
                    # server must stop answering from its copy, and is never sent what the link leads to
                    await self._close(uri)
                    changed += 1
                    continue
                if not os.path.isfile(path):
                    continue  # no longer a regular file (a FIFO is never read)
                before = synced.digest
                await self._sync(document.file)
                changed += self.documents[uri].digest != before
            moved: list[dict[str, Any]] = []
            for uri in seen:
                entry = self.seen.get(uri)
                if entry is None:
                    continue
                file, stamp = entry
                if watch.unchanged(file.absolute, file.root.path):
                    checked[file.absolute] = stamp
                    continue
                self._pending.add(uri)
                now = _stamp(file.absolute)
                if now is not None:
                    checked[file.absolute] = now
                else:
                    checked.pop(file.absolute, None)
                if now is None or now == stamp:
                    continue
                if self.client.endpoint.registrations.for_method(_WATCHED):
                    self.seen[uri] = (file, now)
                    moved.append({"uri": uri, "type": _CHANGED})
                    self.noted(uri, file.display)
                elif os.path.isfile(file.absolute) and not _led_away(file.absolute):  # nor a FIFO, nor a link
                    await self._sync(file)
                changed += 1
            elsewhere = self._tree_events()
            moved += elsewhere
            changed += len(elsewhere)
            if moved:
                await self.client.notify(_WATCHED, {"changes": moved})
            changed += await self._open_created()
            self.checked = checked
            return changed

    async def _close(self, uri: str) -> None:
        """``didClose`` a document whose file is gone (deleted, or renamed away), and drop the server's
        last publication for it: that was about a file that is no longer there, and a workspace read
        would list its problems until the server happened to publish for the closed file again."""
        self._unsee(uri)
        self.client.endpoint.diagnostics.clear(uri)
        synced = self.documents.pop(uri, None)
        if synced is not None and self.client.endpoint.documents.close(uri):
            await self.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            self.noted(uri, synced.document.file.display if synced.document is not None else uri)

    # -- what the server has (issue 20: diagnostics' freshness) ------------------------------------------
    def noted(self, uri: str, label: str, *, opened: bool = False, had: bool = False) -> None:
        """Record what was just sent of ``uri`` (or seen on disk, ``had``) in :attr:`ledger`, and have a
        fence tell when the server read it (:mod:`~kandev_lsp.intel.runtime.ledger`)."""
        self.ledger.note(uri, label, self.client.now(), opened=opened, had=had)
        if not had and (self._fence is None or self._fence.done()) and not self.client.closed:
            self._fence = asyncio.ensure_future(self._run_fence())

    def activity(self) -> Activity:
        """When the server last published diagnostics, and the work-done progress it reports now."""
        entries = self.client.endpoint.diagnostics.snapshot().values()
        last = max((entry.received_at for entry in entries), default=None)
        progress = self.client.endpoint.progress
        now = self.client.now()
        starting = any(now - at <= CREATED_PROGRESS_WAIT for at in progress.created_not_begun)
        return Activity(
            last,
            tuple(item.title or item.message or "untitled" for item in progress.active)
            + (("work it created and has not begun reporting yet",) if starting else ()),
        )

    async def idle(self, prompt: float) -> bool:
        """Whether the server answers a fence within ``prompt`` seconds: a single-threaded server in the
        middle of checking a file (pyright's passes block its loop for seconds) answers only after it,
        and its publications arrive first. A ``quiet`` verdict drawn from its silence is kept only when
        it is idle now (:mod:`~kandev_lsp.intel.reading.freshness`)."""
        started = self.client.now()
        return await self._fence_answered() and self.client.now() - started <= prompt

    async def _run_fence(self) -> None:
        """Fence requests until every noted change is covered by an answer (one at a time); without an
        answer the changes stay "not yet had" (their diagnostics settling)."""
        while self.ledger.unfenced and not self.client.closed:
            self.ledger.fence_sent()
            sent = self.client.now()
            if not await self._fence_answered():
                return
            self.ledger.fenced(sent, self.client.now())

    async def _fence_answered(self) -> bool:
        """Send one fence request; whether the server answered it. An error answer is an answer
        (MethodNotFound, as a ``$/`` request must get); a timeout, a refusal or a lost connection is not."""
        try:
            await self.client.request(FENCE_METHOD, None, timeout=FENCE_TIMEOUT)
        except (TimeoutError, ConnectionError, RequestRefused):
            return False
        except LspError:
            pass
        return True

    def _tree_events(self) -> list[dict[str, Any]]:
        """Files of this project written, created or deleted on disk since the last refresh, none of them
        open or seen: ``FileEvent`` values as the server's ``didChangeWatchedFiles`` registrations ask
        for (a file open or seen is re-sent above instead). Each such file of the server's language (or
        a root marker) is noted in the ledger: sent as an event, or, for a server that watches files
        itself (no registration, typescript-language-server), seen on disk."""
        watch = self.disk_watch
        if not (watch.created or watch.removed or watch.modified):
            return []
        inside = self.project_root.rstrip(os.sep) + os.sep
        known = self.documents.keys() | self.seen.keys()
        host = HostPlatform.current()

        def project(paths: set[str]) -> list[str]:
            return [path for path in paths if path.startswith(inside)]

        created, removed = project(watch.created), project(watch.removed)
        modified = project(watch.modified)
        uri_of = {path: workspace_uri(path, host) for path in (*created, *removed, *modified)}
        registrations = self.client.endpoint.registrations.for_method(_WATCHED)
        events = wanted_events(
            [registration.register_options for registration in registrations],
            created,
            removed,
            uri_of.__getitem__,
            changed=[path for path in modified if uri_of[path] not in known],
        )
        events = [event for event in events if event["type"] != CREATED or event["uri"] not in known]
        sent = {event["uri"] for event in events}
        markers = set(self.language.root_markers)
        for path, uri in uri_of.items():
            if uri in known:
                continue
            if path in watch.removed and not os.path.lexists(path):  # gone: its problems with it (see _close)
                self.client.endpoint.diagnostics.clear(uri)
            if uri in sent:
                self.noted(uri, self._label(path))
            elif not registrations and (
                self.plugins.language_id(self.language, path) is not None or os.path.basename(path) in markers
            ):
                self.noted(uri, self._label(path), had=True)
        return events

    def _label(self, path: str) -> str:
        """``path`` as the model reads it (root-relative), or its name where the workspace refuses it."""
        if self.workspace is not None:
            try:
                return self.workspace.from_absolute(path).display
            except IntelError:
                pass
        return os.path.basename(path)

    async def _open_created(self) -> int:
        """Open this language's files that appeared in a watched folder of the project (at most
        :data:`OPEN_CREATED_MAX` per refresh), after the workspace's path check.

        A ``didChangeWatchedFiles`` creation is not enough for the next query: pyright adds the file to its
        program after a back-off (a references call right after it still missed the new module), and
        typescript-language-server, which registers no watchers, notices it on its own seconds later. An
        open document is part of the server's program at once. Past the cap (a checkout creating many
        files) the events above and the server's own scan are left to do it.
        """
        if self.workspace is None or not self.disk_watch.created:
            return 0
        inside = self.project_root.rstrip(os.sep) + os.sep
        opened = 0
        for path in sorted(self.disk_watch.created):
            if opened >= OPEN_CREATED_MAX:
                break
            if not path.startswith(inside) or self.plugins.language_id(self.language, path) is None:
                continue
            try:
                file = self.workspace.from_absolute(path)  # a link out of the workspace is refused here
            except IntelError:
                continue
            if file.uri in self.documents or not os.path.isfile(path):
                continue
            with contextlib.suppress(IntelError, ProviderUnavailable):  # unreadable: the events suffice
                await self._sync(file)
                opened += 1
        return opened

    def uri_lookup(self, workspace: Workspace) -> Callable[[str], WorkspaceFile | IntelError]:
        """:meth:`Workspace.uri_lookup` for one tool call, trusting earlier checks this server's disk watch
        vouches for (:func:`~kandev_lsp.intel.runtime.pathmemo.watched_lookup`)."""
        return watched_lookup(workspace, self.disk_watch, self.placed)

    def saw(self, files: Iterable[WorkspaceFile]) -> None:
        """Remember files an answer pointed at, to announce their later changes on disk."""
        for file in files:
            if file.uri not in self.documents and file.uri not in self.seen:
                stamp = _stamp(file.absolute)
                if stamp is not None:
                    self.seen[file.uri] = (file, stamp)
                    self._known(file)

    def open_documents(self) -> dict[str, Document]:
        """Open documents by absolute path (the text the server has), for a :class:`TextCache` overlay."""
        return {
            s.document.file.absolute: s.document for s in self.documents.values() if s.document is not None
        }

    # -- telling the server about applied edits (issue 11, B3.7, B6.23) --------------------------------
    async def notify_saved(self, file: WorkspaceFile) -> bool:
        """``didSave`` for an open document when the server's ``textDocumentSync.save`` asks for it."""
        wanted, include_text = save_options(self.capabilities)
        synced = self.documents.get(file.uri)
        if not wanted or synced is None or synced.document is None:
            return False
        params: dict[str, Any] = {"textDocument": {"uri": file.uri}}
        if include_text:
            params["text"] = synced.document.text
        await self.client.notify("textDocument/didSave", params)
        return True

    def file_operation_options(self, kind: str) -> list[Any]:
        """The server's ``workspace.fileOperations.<did*>`` options, static and registered."""
        key = _FILE_OPERATIONS[kind]
        static = ((self.capabilities.get("workspace") or {}).get("fileOperations") or {}).get(key)
        found = [static] if isinstance(static, Mapping) else []
        method = f"workspace/{key}Files"
        return found + [reg.register_options for reg in self.client.endpoint.registrations.for_method(method)]

    async def notify_file_operation(
        self, kind: str, file: WorkspaceFile, new_file: WorkspaceFile | None = None
    ) -> bool:
        """``workspace/didCreateFiles`` / ``didRenameFiles`` / ``didDeleteFiles`` where the server asked
        for them (its filters cover the path); the old URI's document is closed first."""
        if kind in ("rename", "delete"):
            await self.forget(file)
        target = new_file.absolute if new_file is not None else file.absolute
        folder = os.path.isdir(target)
        if not any(
            file_operation_wanted(options, path, folder)
            for options in self.file_operation_options(kind)
            for path in (file.absolute, target)
        ):
            return False
        entry: dict[str, str] = (
            {"oldUri": file.uri, "newUri": new_file.uri} if new_file is not None else {"uri": file.uri}
        )
        await self.client.notify(f"workspace/{_FILE_OPERATIONS[kind]}Files", {"files": [entry]})
        self.noted((new_file or file).uri, (new_file or file).display)
        return True

    async def forget(self, file: WorkspaceFile) -> None:
        """``didClose`` a document whose file was renamed away or deleted; forget it was seen."""
        async with self._lock:
            await self._close(file.uri)

    async def stop(self) -> None:
        """``shutdown``, ``exit``, then stop the process tree (K16.2)."""
        self.disk_watch.close()
        if self._fence is not None and not self._fence.done():
            self._fence.cancel()
            with contextlib.suppress(BaseException):
                await self._fence
        with contextlib.suppress(Exception):
            if not self.client.closed:
                await self.client.shutdown(timeout=2.0)
        with contextlib.suppress(Exception):
            await self.client.aclose()
        await self.process.stop(grace=2.0)


class ServerPool:
    """Managed servers of one workspace (see the module docstring).

    :param env: the environment of the servers (the task's); the workspace folder of each server's task
        is its project root.
    """

    def __init__(
        self,
        workspace: Workspace,
        lifecycle: Lifecycle,
        env: TaskEnvironment,
        *,
        max_servers: int = DEFAULT_MAX_SERVERS,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        install: bool = False,
    ) -> None:
        self.workspace = workspace
        self.lifecycle = lifecycle
        self.plugins = lifecycle.plugins
        self.env = env
        self.max_servers = max_servers
        self.idle_timeout = idle_timeout
        self.install = install
        #: Answers servers' ``workspace/applyEdit`` (the mutation coordinator's); None refuses them. Set it
        #: before servers start: only then is ``workspace.applyEdit`` offered to them.
        self.edit_applier: EditApplier | None = None
        self._servers: dict[tuple[str, str], ManagedServer] = {}
        self._starting: dict[tuple[str, str], asyncio.Task[ManagedServer]] = {}
        #: The phase of each start in :attr:`_starting`.
        self._launches: dict[tuple[str, str], _Launch] = {}
        #: Failed installs by language, remembered for :attr:`install_retry_after` seconds.
        self._failed_installs: dict[str, _FailedInstall] = {}
        self.install_retry_after = INSTALL_RETRY_AFTER
        self._reaper: asyncio.Task[None] | None = None
        self._closed = False
        self._by_extension: dict[str, LanguageSpec] = {}
        for spec in self.plugins.languages().values():
            for extension in spec.file_extensions:
                self._by_extension.setdefault(extension.lower(), spec)
        #: Longest first, so ``.d.ts`` wins over ``.ts``.
        self._extensions = sorted(self._by_extension, key=len, reverse=True)

    # -- languages and keys ------------------------------------------------------------------------------
    def language_of(self, path: str) -> LanguageSpec | None:
        """The language whose server owns ``path`` (by extension), or None."""
        name = os.path.basename(path).lower()
        for extension in self._extensions:
            if name.endswith(extension):
                spec = self._by_extension[extension]
                if self.plugins.language_id(spec, path) is not None:
                    return spec
        return None

    def project_root(self, file: WorkspaceFile, spec: LanguageSpec) -> str:
        """The project ``file`` belongs to for ``spec``'s server, the way an IDE user expects (issue 20
        item 4): a nested project marker inside a project the outer server covers (``nested_projects``
        ``"covered"``: pyright, tsserver) does not cut it off from the outer sources; a nested Go module
        is its own project."""
        covering = spec.nested_projects == "covered"
        return (
            _project_root(file.absolute, file.root.path, spec.root_markers, covering=covering)
            or file.root.path
        )

    def current(self, server: ManagedServer) -> bool:
        """Whether ``server`` is still the running server of its (project root, language), so a call may
        use it without :meth:`server_for` (which then counts as its use, for the idle reaper)."""
        if self._closed or server.client.closed:
            return False
        if self._servers.get((server.project_root, server.language.id)) is not server:
            return False
        server.last_used = time.monotonic()
        return True

    @property
    def servers(self) -> list[ManagedServer]:
        return list(self._servers.values())

    def servers_of(self, root: Root | None = None) -> list[ManagedServer]:
        """Running servers whose project root lies in ``root`` (every running server for None)."""
        if root is None:
            return self.servers
        return [
            s
            for s in self._servers.values()
            if s.project_root == root.path or s.project_root.startswith(root.path + os.sep)
        ]

    # -- getting a server --------------------------------------------------------------------------------
    async def server_for(self, file: WorkspaceFile, deadline: Deadline | None = None) -> ManagedServer:
        """The running server for ``file``, started when needed.

        :param deadline: the tool call's; a start that outlasts it goes on in the background (the next
            call finds the server warmer) and this call fails ``unavailable`` (B8.3).
        :raises ServerMissing: the file has no language here, or its server cannot be had.
        :raises ProviderUnavailable: the server is still starting when the deadline passes.
        """
        spec = self.language_of(file.absolute)
        if spec is None:
            raise ServerMissing(
                None,
                f"No language server handles files like {os.path.basename(file.absolute)!r} here "
                f"(languages: {', '.join(sorted(self.plugins.languages()))}).",
            )
        return await self.server(spec, self.project_root(file, spec), deadline)

    async def server(
        self, spec: LanguageSpec, project_root: str, deadline: Deadline | None = None
    ) -> ManagedServer:
        if self._closed:
            raise ProviderUnavailable("the code-intelligence session is closing")
        key = (project_root, spec.id)
        server = self._servers.get(key)
        if server is not None and not server.client.closed:
            server.last_used = time.monotonic()
            return server
        if server is not None:  # it died: forget it, start another
            self._servers.pop(key, None)
            with contextlib.suppress(Exception):
                await server.stop()
        starting = self._starting.get(key)
        if starting is None:
            failed = self._failed_installs.get(spec.id)
            if failed is not None and time.monotonic() < failed.retry:
                raise failed.raised()  # no installer run until the back-off ends
            self._failed_installs.pop(spec.id, None)  # its back-off is over: one more try
            launch = self._launches[key] = _Launch()
            starting = asyncio.ensure_future(self._start(spec, project_root, launch))
            self._starting[key] = starting
            starting.add_done_callback(lambda task: self._started(key, task))
        if deadline is None:
            server = await asyncio.shield(starting)
        else:
            try:
                server = await asyncio.wait_for(asyncio.shield(starting), deadline.remaining())
            except TimeoutError:
                launch = self._launches.get(key) or _Launch()
                elapsed = time.monotonic() - launch.since
                raise ProviderUnavailable(
                    launching_message(
                        spec.command,
                        spec.id,
                        installing=launch.installing,
                        installer=launch.installer,
                        elapsed=elapsed,
                        since=launch.wall,
                    ),
                    **({"installing": True} if launch.installing else {"starting": True}),
                    elapsedSeconds=round(elapsed, 1),
                ) from None
        server.last_used = time.monotonic()
        return server

    def _started(self, key: tuple[str, str], task: asyncio.Task[ManagedServer]) -> None:
        self._starting.pop(key, None)
        self._launches.pop(key, None)
        if not task.cancelled():
            task.exception()  # retrieved: a caller that gave up waiting must not leave it unreported

    async def _start(self, spec: LanguageSpec, project_root: str, launch: _Launch) -> ManagedServer:
        from kandev_lsp.lifecycle import LaunchError, LaunchFailure
        from kandev_lsp.lsp import (
            LspClient,
            base_client_capabilities,
            configuration_handler,
            initialize_params,
            merge_capabilities,
            negotiated_encoding,
            workspace_folder,
        )
        from kandev_lsp.settings import ConfigurationAnswerer, language_settings
        from kandev_lsp.taskenv import Task

        await self._make_room()
        task = Task(project_root, self.env)
        started = time.monotonic()
        try:
            resolution = await self.lifecycle.ensure(
                spec.id,
                task,
                self.lifecycle.policy(requested=self.install),
                _PhaseObserver(launch, lambda: self.lifecycle.install_summary(spec.id, task)),
            )
            process = await self.lifecycle.spawn(resolution, task)
        except LaunchError as error:
            if error.failure is LaunchFailure.INSTALL_FAILED:
                failed = self._failed_installs[spec.id] = _FailedInstall(
                    spec.command,
                    spec.id,
                    launch.installer,
                    error.first_line,
                    tuple(install_output_lines(error.output)),
                    time.time(),
                    time.monotonic() + self.install_retry_after,
                )
                log_event(_log, "intel_install_failed", logging.WARNING, language=spec.id)
                raise failed.raised() from None
            notice = (
                missing_server_notice(error.resolution) if error.resolution is not None else None
            ) or f"No {spec.id} language server could be started: {error.first_line}"
            raise ServerMissing(spec.id, notice) from None
        user = self.lifecycle.user_settings()
        defaults = self.plugins.default_settings(spec)
        settings = language_settings(defaults, user, spec.id) if user is not None else defaults
        assert process.stdout is not None and process.stdin is not None
        client = LspClient(
            process.stdout,
            process.stdin,
            peer=f"{spec.command} stdout",
            readiness=self.plugins.readiness(spec),
        )
        client.endpoint.configuration = configuration_handler(
            ConfigurationAnswerer(self.plugins, spec), lambda: settings
        )
        capabilities = merge_capabilities(
            base_client_capabilities(apply_edit=self.edit_applier is not None),
            self.plugins.client_capabilities(spec),
        )
        if self.edit_applier is not None:
            capabilities = merge_capabilities(capabilities, _EDIT_CAPABILITIES)
            client.handle(
                "workspace/applyEdit", lambda params: self._apply_edit(spec.id, project_root, params)
            )
        options = self.plugins.initialization_options(spec, settings)
        extra = TOOL_INITIALIZATION_OPTIONS.get(spec.id)
        if extra is not None:
            options = _merge(options, extra)
        root_file = self.workspace.from_absolute(project_root)
        # The watch's inotify instance is opened while the server starts, not by the first call's path
        # checks after the answer came (a few ms on the cold path, issue 9).
        watch = DiskWatch()
        watch.open()
        try:
            client.start()
            result = await client.initialize(
                initialize_params(
                    workspace_folders=[workspace_folder(root_file.uri)],
                    capabilities=capabilities,
                    initialization_options=options,
                    work_done_token="kandev-initialize",
                ),
                timeout=INITIALIZE_TIMEOUT,
            )
        except BaseException as error:
            watch.close()
            with contextlib.suppress(Exception):
                await client.aclose()
            await process.stop(grace=1.0)
            if isinstance(error, Exception):
                raise ProviderUnavailable(
                    f"the {spec.command} server did not initialize: {error}; see its stderr with "
                    f"`kandev-lsp run {spec.id}`"
                ) from None
            raise
        server_caps = result.get("capabilities") if isinstance(result.get("capabilities"), dict) else {}
        assert isinstance(server_caps, dict)
        encoding = negotiated_encoding(
            capabilities.get("general", {}).get("positionEncodings"), server_caps.get("positionEncoding")
        )
        server = ManagedServer(
            spec,
            project_root,
            client,
            process,
            self.plugins,
            encoding,
            server_caps,
            disk_watch=watch,
            workspace=self.workspace,
        )
        self._servers[(project_root, spec.id)] = server
        log_event(
            _log,
            "intel_server_started",
            logging.INFO,
            language=spec.id,
            initialize_ms=round((time.monotonic() - started) * 1000, 1),
            servers=len(self._servers),
        )
        self._ensure_reaper()
        return server

    async def _apply_edit(self, language: str, project_root: str, params: Any) -> dict[str, Any]:
        """A server's ``workspace/applyEdit``, handed to :attr:`edit_applier`."""
        server = self._servers.get((project_root, language))
        edit = params.get("edit") if isinstance(params, Mapping) else None
        if self.edit_applier is None or server is None or not isinstance(edit, Mapping):
            return {"applied": False, "failureReason": "kandev-lsp has no edit applier for this server"}
        return await self.edit_applier(server, edit)

    async def _make_room(self) -> None:
        while len(self._servers) + len(self._starting) > self.max_servers:
            idle = [(s.last_used, key) for key, s in self._servers.items() if s.in_flight == 0]
            if not idle:
                raise ProviderUnavailable(
                    f"{len(self._servers)} language servers are busy (the limit is {self.max_servers}); "
                    "ask again when a call finished"
                )
            _, key = min(idle)
            await self._stop(key, "server limit")

    async def _stop(self, key: tuple[str, str], reason: str) -> None:
        server = self._servers.pop(key, None)
        if server is not None:
            log_event(_log, "intel_server_stopped", logging.INFO, language=server.language.id, reason=reason)
            await server.stop()

    def _ensure_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.ensure_future(self._reap())

    async def _reap(self) -> None:
        interval = max(0.05, min(30.0, self.idle_timeout / 4))
        while self._servers and not self._closed:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for key, server in list(self._servers.items()):
                if server.in_flight == 0 and now - server.last_used >= self.idle_timeout:
                    await self._stop(key, "idle")

    async def aclose(self) -> None:
        """Stop every server gracefully (and the idle reaper)."""
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for task in list(self._starting.values()):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        await asyncio.gather(*(self._stop(key, "closed") for key in list(self._servers)))

    async def __aenter__(self) -> ServerPool:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()
