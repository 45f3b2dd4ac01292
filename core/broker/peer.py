"""The lease's LSP side as a sans-io state machine: the broker as the stable protocol peer (K14-K17).

One :class:`LeasePeer` per lease. It sits between whichever client is attached (or none) and the lease's
one server, with parsed JSON-RPC messages in and out: every method returns a :class:`PeerOutput` (the
messages to write to the server, the messages to write to the attached client, and whether the client
asked to leave). Time comes from an injected clock. What it keeps, and why:

* the first ``initialize``: its params, its result, when it was sent (K14.2, K5.3). A later client's
  ``initialize`` on the same lease is answered from the retained result and its ``initialized`` is
  swallowed, so a generic LSP client resumes without the server seeing a second initialize (K17.4);
  a ``workDoneToken`` is injected when the client sent none, so initialize progress is tracked (K6.1);
* within a state budget of 4 MiB (K14.5), counting everything it keeps (:meth:`LeasePeer.state_bytes`):
  a registration that would exceed it is refused to the server with an error, and an initialize result
  that would is answered to the client as an error and not kept;
* client request ids mapped to server-facing ids per attachment generation, with the bounds
  (:mod:`kandev_lsp.broker.requests`, K15);
* answers to server requests, attached or not, so a server never waits on a client that left (K15.9):
  progress ``create``, capability (un)registration (also shown to an attached client, K14.6, K14.7),
  ``workspace/configuration`` (an injected answerer over the owner's persisted settings, K14.8),
  ``workspace/workspaceFolders``, ``*/refresh``; ``showMessageRequest``, ``applyEdit`` and
  ``showDocument`` go to an attached client and get a neutral answer when none is (or when it leaves
  before answering); anything else gets a method-not-found error;
* documents: server-facing versions strictly increasing per URI for the lease's life (K17.6); a detach
  closes every open document toward the server and clears diagnostics (K17.1, K17.2);
* diagnostics toward a client that resumed a lease: only for a URI it has open, after it is in sync, and
  only when the publication's version is the current server-facing one; unversioned ones stay hidden
  (K17.7-K17.9). A fresh lease's first client sees every publication.

A client's ``shutdown`` is answered here and its ``exit`` detaches it: the lease, not the client, decides
when the server stops (docs/broker-contract.md). :meth:`begin_stop` runs the stop sequence's LSP part.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kandev_lsp.broker.client_versions import ClientVersions
from kandev_lsp.broker.requests import Forward, RequestBounds, RequestMap, cancel_notification, with_id
from kandev_lsp.lsp.diagnostics import DiagnosticsStore
from kandev_lsp.lsp.documents import DocumentNotOpen, DocumentVersions
from kandev_lsp.lsp.progress import ProgressSnapshot, ProgressTracker
from kandev_lsp.lsp.registrations import Registration, RegistrationStore
from kandev_lsp.protocol.errors import MalformedMessage
from kandev_lsp.protocol.jsonrpc import (
    ErrorCode,
    MessageKind,
    RequestId,
    classify,
    error_response,
    notification,
    request,
    response,
)

__all__ = ["INITIALIZE_TOKEN", "STATE_BUDGET", "ConfigurationAnswerer", "LeasePeer", "PeerOutput"]

#: What one lease may keep: initialize params and result, registrations (K14.5).
STATE_BUDGET: Final = 4 * 1024 * 1024
#: The workDoneToken the broker puts in an ``initialize`` that carries none.
INITIALIZE_TOKEN: Final = "kandev-broker-initialize"
_INFO_PREFIX: Final = "kandev-broker-"

#: Server requests a client answers when one is attached; the neutral answer when none is.
_CLIENT_ANSWERED: Final[Mapping[str, Any]] = {
    "window/showMessageRequest": None,
    "workspace/applyEdit": {"applied": False, "failureReason": "no editor is attached"},
    "window/showDocument": {"success": False},
}
#: Server requests the broker answers ``null`` and also shows an attached client (its reply is dropped).
_INFORMATIONAL: Final = frozenset(
    {
        "window/workDoneProgress/create",
        "client/registerCapability",
        "client/unregisterCapability",
        "workspace/semanticTokens/refresh",
        "workspace/inlayHint/refresh",
        "workspace/inlineValue/refresh",
        "workspace/codeLens/refresh",
        "workspace/diagnostic/refresh",
        "workspace/foldingRange/refresh",
    }
)

ConfigurationAnswerer = Callable[[Any], Any]
_DEFAULT_BOUNDS: Final = RequestBounds()


def _null_configuration(params: Any) -> Any:
    items = params.get("items") if isinstance(params, Mapping) else None
    return [None] * len(items) if isinstance(items, list) else [None]


@dataclass(slots=True)
class PeerOutput:
    """What to write after one event: to the server, to the attached client, and whether the client
    asked to leave (its ``exit``: close it with 1000 and detach it)."""

    to_server: list[dict[str, Any]] = field(default_factory=list)
    to_client: list[dict[str, Any]] = field(default_factory=list)
    client_exit: bool = False
    #: The stop sequence's ``shutdown`` was answered and ``exit`` is in ``to_server``: stop the upstream.
    shutdown_done: bool = False
    #: The lease's ``initialize`` was just answered and the attached client resumed without sending its
    #: own: tell it the outcome with the ``initialized`` (or ``initialize_failed``) frame (item 4).
    initialize_outcome: bool = False


def _key(request_id: RequestId) -> tuple[bool, RequestId]:
    return (isinstance(request_id, str), request_id)


class LeasePeer:
    """The protocol state of one lease (rules in the module docstring).

    :param configuration: answers ``workspace/configuration`` params from the owner's latest settings.
    :param clock: monotonic seconds (timeouts, progress times).
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        configuration: ConfigurationAnswerer = _null_configuration,
        bounds: RequestBounds = _DEFAULT_BOUNDS,
        server_generation: int = 1,
        state_budget: int = STATE_BUDGET,
    ) -> None:
        self._clock = clock
        self._configuration = configuration
        self.requests = RequestMap(bounds, clock=clock)
        self.documents = DocumentVersions()
        self.client_versions = ClientVersions()  # the attached client's own, per server-facing version
        self.diagnostics = DiagnosticsStore(server_generation)
        self.registrations = RegistrationStore()
        self.progress = ProgressTracker(server_generation)
        self.server_generation = server_generation
        self.state_budget = state_budget
        # initialize, once per lease
        self.initialize_params: dict[str, Any] | None = None
        self.initialize_result: dict[str, Any] | None = None
        self._initialize_response: dict[str, Any] | None = None  # the whole answer, an error included
        self.initialize_sent_at: float | None = None
        self._initialize_id: int | None = None
        self._initialize_waiters: list[tuple[int, RequestId]] = []
        self._initialize_generation = 0  # the attachment that sent the lease's initialize
        self._initialized_forwarded = False
        # the attachment
        self.generation = 0
        self.attached = False
        self.resumed = False
        self.synced = False
        self._client_initialized = False
        # server requests waiting for the attached client; informational copies shown to it
        self._at_client: dict[tuple[bool, RequestId], tuple[int, RequestId, str]] = {}
        self._info_ids: set[str] = set()
        self._info_serial = 0
        self._shutdown_id: int | None = None

    # --- attachments -----------------------------------------------------------------------------

    def attach(self, generation: int) -> PeerOutput:
        """A client attached as ``generation``. It resumes when an ``initialize`` already went to the
        server; then its diagnostics wait for sync (attachment-ready, or its own initialize answered)."""
        self.generation = generation
        self.attached = True
        self.resumed = self.initialize_params is not None
        self.synced = not self.resumed
        self._client_initialized = False
        return PeerOutput()

    def attachment_ready(self) -> PeerOutput:
        """The client reopened its documents and registered its handlers (K17.5)."""
        self.synced = True
        return PeerOutput()

    def detach(self) -> PeerOutput:
        """The attached client left (K15.8, K17.1, K17.2): cancel its pending requests toward the server,
        close its documents there, clear diagnostics, answer what the server asked it."""
        out = PeerOutput()
        if not self.attached:
            return out
        for entry in self.requests.end_generation(self.generation):
            out.to_server.append(cancel_notification(entry.server_id))
        for uri in self.documents.close_all():
            out.to_server.append(notification("textDocument/didClose", {"textDocument": {"uri": uri}}))
        self.diagnostics.clear()
        for key, (generation, server_id, method) in list(self._at_client.items()):
            if generation == self.generation:
                del self._at_client[key]
                out.to_server.append(response(server_id, _CLIENT_ANSWERED[method]))
        self._initialize_waiters = [w for w in self._initialize_waiters if w[0] != self.generation]
        self._info_ids.clear()
        self.client_versions.forget()
        self.attached = False
        # The client that began the handshake left between the answer and its `initialized`: the broker,
        # the stable peer, finishes it (K14; issue 18 item 3), or the server would wait for it forever.
        self._finish_handshake(out)
        return out

    def _finish_handshake(self, out: PeerOutput) -> None:
        if self.initialize_result is not None and not self._initialized_forwarded:
            self._initialized_forwarded = True
            out.to_server.append(notification("initialized", {}))

    @property
    def handshake_complete(self) -> bool:
        """Whether the server got ``initialized``: what the ready frame's ``initialized`` says."""
        return self._initialized_forwarded

    @property
    def initialize_error(self) -> Mapping[str, Any] | None:
        """The server's error answer to the lease's ``initialize``, if it refused it."""
        response = self._initialize_response
        error = response.get("error") if response is not None else None
        return error if isinstance(error, Mapping) else None

    # --- from the client -------------------------------------------------------------------------

    def from_client(self, message: dict[str, Any]) -> PeerOutput:
        out = PeerOutput()
        try:
            kind = classify(message)
        except MalformedMessage:
            return out
        if kind is MessageKind.RESPONSE:
            self._client_response(message, out)
        elif kind is MessageKind.NOTIFICATION:
            self._client_notification(message, out)
        else:
            self._client_request(message, out)
        return out

    def _client_request(self, message: dict[str, Any], out: PeerOutput) -> None:
        client_id: RequestId = message["id"]
        method = message["method"]
        if method == "initialize":
            self._client_initialize(client_id, message, out)
            return
        if method == "shutdown":  # the lease decides when the server stops
            out.to_client.append(response(client_id, None))
            return
        admitted = self.requests.admit(self.generation, client_id, method)
        if isinstance(admitted, Forward):
            out.to_server.append(with_id(message, admitted.server_id))
        else:
            out.to_client.append(admitted.error)

    def _client_initialize(self, client_id: RequestId, message: dict[str, Any], out: PeerOutput) -> None:
        if self._client_initialized:
            out.to_client.append(
                error_response(
                    client_id, ErrorCode.INVALID_REQUEST, "initialize was already sent on this connection"
                )
            )
            return
        self._client_initialized = True
        if self.initialize_params is None:
            raw = message.get("params")
            params: dict[str, Any] = copy.deepcopy(raw) if isinstance(raw, dict) else {}
            if "workDoneToken" not in params:
                params["workDoneToken"] = INITIALIZE_TOKEN
            # The broker takes work-done progress whatever the client supports: it answers `create` and
            # keeps the snapshot for the next client (K6.1, K6.2). An explicit client value is kept.
            capabilities = params.get("capabilities")
            if isinstance(capabilities, dict):
                window = capabilities.get("window")
                if window is None:
                    capabilities["window"] = {"workDoneProgress": True}
                elif isinstance(window, dict):
                    window.setdefault("workDoneProgress", True)
            self.progress.accept(params["workDoneToken"])
            self.initialize_params = params
            self.initialize_sent_at = self._clock()
            self._initialize_id = self.requests.next_server_id()
            self._initialize_generation = self.generation
            self._initialize_waiters.append((self.generation, client_id))
            out.to_server.append(request(self._initialize_id, "initialize", params))
            return
        # A resuming client: the server was initialized (or is being) by an earlier attachment (K17.4).
        self.synced = True
        if self._initialize_response is not None:
            out.to_client.append(with_id(self._initialize_response, client_id))
        else:
            self._initialize_waiters.append((self.generation, client_id))

    def _client_notification(self, message: dict[str, Any], out: PeerOutput) -> None:
        method = message["method"]
        params = message.get("params")
        if method == "initialized":
            if self._initialized_forwarded:  # the server gets it once per lease (K17.4)
                return
            self._initialized_forwarded = True
            out.to_server.append(message)
        elif method == "exit":
            out.client_exit = True
        elif method == "$/cancelRequest":
            client_id = params.get("id") if isinstance(params, Mapping) else None
            if isinstance(client_id, int | str) and not isinstance(client_id, bool):
                server_id = self.requests.cancel(self.generation, client_id)
                if server_id is not None:
                    out.to_server.append(cancel_notification(server_id))
        elif method in ("textDocument/didOpen", "textDocument/didChange"):
            self._document_sync(message, out)
        elif method == "textDocument/didClose":
            uri = _document_uri(params)
            if uri is not None and self.documents.close(uri):
                self.diagnostics.clear(uri)
                self.client_versions.forget(uri)
                out.to_server.append(message)
        else:
            out.to_server.append(message)

    def _document_sync(self, message: dict[str, Any], out: PeerOutput) -> None:
        params = message.get("params")
        uri = _document_uri(params)
        if uri is None or not isinstance(params, Mapping):
            return
        document = dict(params["textDocument"])
        if message["method"] == "textDocument/didOpen":
            language_id = document.get("languageId")
            version = self.documents.open(uri, language_id if isinstance(language_id, str) else "")
            self.client_versions.forget(uri)  # a reopen starts the client's numbering over
        else:
            try:
                version = self.documents.change(uri)
            except DocumentNotOpen:
                return  # the server never saw this document open: a change would be an error there
        self.client_versions.record(uri, version, document.get("version"))
        document["version"] = version
        out.to_server.append({**message, "params": {**params, "textDocument": document}})

    def _client_response(self, message: dict[str, Any], out: PeerOutput) -> None:
        reply_id = message.get("id")
        if isinstance(reply_id, str) and reply_id in self._info_ids:
            self._info_ids.discard(reply_id)  # the broker already answered the server
            return
        if not isinstance(reply_id, int | str) or isinstance(reply_id, bool):
            return
        waiting = self._at_client.pop(_key(reply_id), None)
        if waiting is not None and waiting[0] == self.generation:
            out.to_server.append(message)

    # --- from the server -------------------------------------------------------------------------

    def from_server(self, message: dict[str, Any]) -> PeerOutput:
        out = PeerOutput()
        try:
            kind = classify(message)
        except MalformedMessage:
            return out
        if kind is MessageKind.RESPONSE:
            self._server_response(message, out)
        elif kind is MessageKind.REQUEST:
            self._server_request(message, out)
        else:
            self._server_notification(message, out)
        return out

    def _server_response(self, message: dict[str, Any], out: PeerOutput) -> None:
        server_id = message.get("id")
        if server_id is not None and server_id == self._initialize_id:
            self._initialize_id = None
            result = message.get("result")
            size = _json_size(result)
            if isinstance(result, dict) and self._over_budget(size):
                # Not kept beyond the budget (K14.5): every client of the lease gets this error instead.
                why = (
                    f"the server's initialize result is {size} bytes; the broker keeps at most "
                    f"{self.state_budget} bytes of state per lease"
                )
                message = error_response(server_id, ErrorCode.REQUEST_FAILED, why)
            self._initialize_response = message
            if isinstance(message.get("result"), dict):
                self.initialize_result = message["result"]
            asked_here = False
            for generation, client_id in self._initialize_waiters:
                if self.attached and generation == self.generation:
                    out.to_client.append(with_id(message, client_id))
                    asked_here = True
            self._initialize_waiters.clear()
            if not (self.attached and self.generation == self._initialize_generation):
                # The client that began the handshake is gone: nobody else will send `initialized`.
                self._finish_handshake(out)
            if self.attached and self.resumed and not asked_here:
                out.initialize_outcome = True  # a resumed client was told capabilities: null (item 4)
            return
        if server_id is not None and server_id == self._shutdown_id:
            self._shutdown_id = None
            out.to_server.append(notification("exit"))
            out.shutdown_done = True
            return
        entry = self.requests.complete(server_id) if server_id is not None else None
        if entry is not None and self.attached and entry.generation == self.generation:
            out.to_client.append(with_id(message, entry.client_id))
        # else: a late reply for a detached generation or a timed-out request: dropped (K15.8)

    def _server_request(self, message: dict[str, Any], out: PeerOutput) -> None:
        server_id: RequestId = message["id"]
        method: str = message["method"]
        params = message.get("params")
        if method in _CLIENT_ANSWERED:
            if self.attached:
                self._at_client[_key(server_id)] = (self.generation, server_id, method)
                out.to_client.append(message)
            else:
                out.to_server.append(response(server_id, _CLIENT_ANSWERED[method]))
            return
        if method == "window/workDoneProgress/create":
            token = params.get("token") if isinstance(params, Mapping) else None
            self.progress.accept(token)
        elif method == "client/registerCapability":
            if self._over_budget(_json_size(params)):
                # Refused rather than kept beyond the budget or silently forgotten (K14.5).
                why = f"the broker keeps at most {self.state_budget} bytes of state for this server"
                out.to_server.append(error_response(server_id, ErrorCode.REQUEST_FAILED, why))
                return
            self.registrations.register(params)
        elif method == "client/unregisterCapability":
            self.registrations.unregister(params)
        elif method == "workspace/configuration":
            out.to_server.append(response(server_id, self._configuration(params)))
            return
        elif method == "workspace/workspaceFolders":
            out.to_server.append(response(server_id, self._workspace_folders()))
            return
        elif method not in _INFORMATIONAL:
            out.to_server.append(
                error_response(
                    server_id, ErrorCode.METHOD_NOT_FOUND, f"the broker does not handle {method[:64]}"
                )
            )
            return
        out.to_server.append(response(server_id, None))
        if self.attached:
            self._info_serial += 1
            info_id = f"{_INFO_PREFIX}{self._info_serial}"
            self._info_ids.add(info_id)
            out.to_client.append(with_id(message, info_id))

    def _server_notification(self, message: dict[str, Any], out: PeerOutput) -> None:
        method = message["method"]
        params = message.get("params")
        if method == "$/progress":
            self.progress.on_progress(params, self._clock())
        elif method == "textDocument/publishDiagnostics":
            entry = self.diagnostics.publish(params, self._clock())
            if entry is None or not self._diagnostics_visible(entry.uri, entry.version):
                return
            if entry.version is not None and self.client_versions.knows(entry.uri):
                # In the client's own numbering (item 5); older than what is kept: stale, not shown.
                own = self.client_versions.client_version(entry.uri, entry.version)
                if own is None:
                    return
                message = {**message, "params": {**dict(params or {}), "version": own}}
        if self.attached:
            out.to_client.append(message)

    def _diagnostics_visible(self, uri: str, version: int | None) -> bool:
        if not self.attached:
            return False
        if not self.resumed:
            return True  # a fresh lease's first client: as from the server itself (K17.8)
        return self.synced and version is not None and version == self.documents.current(uri)

    # --- timeouts and stop -----------------------------------------------------------------------

    def expire(self) -> PeerOutput:
        """Requests past their timeout: cancelled toward the server, answered with an error (K15.5)."""
        out = PeerOutput()
        for timed_out in self.requests.expire():
            out.to_server.append(timed_out.cancel)
            if self.attached and timed_out.request.generation == self.generation:
                out.to_client.append(timed_out.error)
        return out

    def begin_stop(self) -> PeerOutput:
        """Stop or release: reject outstanding client requests, send ``shutdown`` (K16.2). When the
        server answers, :meth:`from_server` returns ``exit`` with ``shutdown_done``; a server that does
        not answer in the bounded wait is stopped by the I/O layer anyway."""
        out = PeerOutput()
        for entry in self.requests.reject_all():
            out.to_server.append(cancel_notification(entry.server_id))
            if self.attached and entry.generation == self.generation:
                out.to_client.append(
                    error_response(
                        entry.client_id, ErrorCode.REQUEST_CANCELLED, "the language server is stopping"
                    )
                )
        if self.initialize_result is None:
            # Never initialized: the server would reject shutdown; skip straight to exit.
            out.to_server.append(notification("exit"))
            out.shutdown_done = True
            return out
        self._shutdown_id = self.requests.next_server_id()
        out.to_server.append(request(self._shutdown_id, "shutdown"))
        return out

    # --- what a (re)attaching client is told ---------------------------------------------------------

    @property
    def capabilities(self) -> Mapping[str, Any] | None:
        result = self.initialize_result
        capabilities = result.get("capabilities") if result else None
        return capabilities if isinstance(capabilities, Mapping) else None

    @property
    def server_info(self) -> Mapping[str, Any] | None:
        info = self.initialize_result.get("serverInfo") if self.initialize_result else None
        return info if isinstance(info, Mapping) else None

    @property
    def position_encoding(self) -> str:
        encoding = (self.capabilities or {}).get("positionEncoding")
        return encoding if isinstance(encoding, str) else "utf-16"

    def effective_registrations(self) -> tuple[Registration, ...]:
        return self.registrations.snapshot()

    def progress_snapshot(self) -> ProgressSnapshot:
        return self.progress.snapshot()

    def progress_for_client(self) -> dict[str, Any]:
        """The snapshot as the ready frame carries it (K5.10-K5.12): times as elapsed milliseconds, since
        the broker's clock means nothing on the client's machine."""
        snapshot = self.progress.snapshot()
        now = self._clock()
        ended = snapshot.last_ended
        return {
            "active": [
                {
                    "token": item.token,
                    "title": item.title,
                    "message": item.message,
                    "percentage": item.percentage,
                    "elapsedMs": int((now - item.started_at) * 1000),
                }
                for item in snapshot.active
            ],
            "lastEnded": None
            if ended is None
            else {"token": ended.token, "title": ended.title, "message": ended.message},
            "seenAny": snapshot.seen_any,
        }

    def state_bytes(self) -> int:
        """All the state the lease keeps, in bytes (K14.5): as JSON, the initialize params and result,
        the registrations, the progress snapshot and the diagnostics held for the attached client; and
        per-URI version counters (the URI's bytes and 8) and the client's versions (16 each)."""
        registrations = [registration.to_json() for registration in self.registrations.snapshot()]
        held = [list(entry.diagnostics) for entry in self.diagnostics.snapshot().values()]
        return (
            _json_size(self.initialize_params)
            + _json_size(self.initialize_result)
            + _json_size(registrations)
            + _json_size(self.progress_for_client())
            + _json_size(held)
            + sum(len(uri.encode("utf-8")) + 8 for uri in self.documents.counted_uris())
            + 16 * len(self.client_versions)
        )

    def _over_budget(self, extra: int) -> bool:
        return self.state_bytes() + extra > self.state_budget

    def _workspace_folders(self) -> Any:
        params = self.initialize_params or {}
        folders = params.get("workspaceFolders")
        if isinstance(folders, list):
            return folders
        root = params.get("rootUri")
        if isinstance(root, str):
            return [{"uri": root, "name": root.rstrip("/").rsplit("/", 1)[-1]}]
        return None


def _json_size(value: object) -> int:
    if value is None:
        return 0
    try:
        return len(
            json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        )
    except (TypeError, ValueError):
        return 0


def _document_uri(params: object) -> str | None:
    if not isinstance(params, Mapping):
        return None
    document = params.get("textDocument")
    uri = document.get("uri") if isinstance(document, Mapping) else None
    return uri if isinstance(uri, str) else None
