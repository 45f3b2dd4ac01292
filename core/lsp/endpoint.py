"""The LSP conversation with one server, without I/O: plain values in, plain values out (h11 style).

:class:`Endpoint` holds what a client of one running server must remember: the ids of requests in flight
and their deadlines, the server's own requests and their answers, the initialize exchange, and the
protocol state (progress, registrations, documents, diagnostics). It never reads, writes, sleeps or looks
at a clock: the caller passes message bodies it received (:meth:`Endpoint.receive`) and the current time,
gets back :data:`Event` values, and sends whatever :meth:`Endpoint.data_to_send` returns. The asyncio
driver (:class:`~kandev_lsp.lsp.client.LspClient`) only moves bytes around this; the broker can drive it
from its own pump, and tests drive it with plain values.

The server's requests are answered so that nothing ever hangs (K15.9, K6.2, K14.6), in this order:

1. a handler the owner installed with :meth:`Endpoint.set_handler` (synchronous, returns the result);
2. a method the owner claimed with :meth:`Endpoint.defer`: a :class:`ServerRequestReceived` event with
   ``answered=False``; the owner answers later with :meth:`Endpoint.respond`;
3. the defaults: ``window/workDoneProgress/create`` -> null (the token is tracked);
   ``client/registerCapability`` / ``client/unregisterCapability`` -> applied to
   :attr:`Endpoint.registrations`, null; ``window/showMessageRequest`` -> null (never "the first action":
   it may have side effects); ``workspace/workspaceFolders`` -> the folders sent in ``initialize``;
   ``workspace/<feature>/refresh`` -> null; ``workspace/configuration`` -> :attr:`Endpoint.configuration`
   (null per item without one); ``workspace/applyEdit`` -> :attr:`Endpoint.apply_edit`, or refused with
   ``applied: false`` and a reason;
4. anything else -> JSON-RPC error -32601 (method not found).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from kandev_lsp.lsp.diagnostics import DiagnosticsStore
from kandev_lsp.lsp.documents import DocumentVersions
from kandev_lsp.lsp.errors import HandlerError, RequestRefused
from kandev_lsp.lsp.positions import PositionEncoding, negotiated_encoding
from kandev_lsp.lsp.progress import ProgressTracker
from kandev_lsp.lsp.registrations import RegistrationStore
from kandev_lsp.protocol.errors import MalformedMessage
from kandev_lsp.protocol.jsonrpc import ErrorCode, RequestId, parse_message

if TYPE_CHECKING:
    from kandev_lsp.settings import ConfigurationAnswerer

__all__ = [
    "APPLY_EDIT_REFUSED",
    "DEFAULT",
    "DEFAULT_LIMITS",
    "Endpoint",
    "EndpointLimits",
    "Event",
    "HandlerError",
    "MessageRejected",
    "NotificationReceived",
    "PendingRequest",
    "RequestRefused",
    "RequestTimedOut",
    "ResponseReceived",
    "ServerCancelledRequest",
    "ServerRequestReceived",
    "UnmatchedResponse",
    "UseDefault",
    "configuration_handler",
    "id_size",
]

#: Bookkeeping cost of one pending request on top of its id and method (a rough dict-entry size), so the
#: tracked-bytes bound (K15.3) counts many tiny requests too.
_ENTRY_OVERHEAD: Final = 64
_REFRESH: Final = re.compile(r"workspace/[A-Za-z]+/refresh")
#: Why ``workspace/applyEdit`` is refused when the owner installed no applier.
APPLY_EDIT_REFUSED: Final = (
    "kandev-lsp applied nothing: no editor or edit applier is attached to this server. The server should "
    "return its edit to the caller instead."
)


@dataclass(frozen=True, slots=True)
class EndpointLimits:
    """Bounds of one endpoint, checked before a request is sent (K15.1-K15.5).

    :param max_pending: requests in flight at once.
    :param max_id_bytes: longest request id accepted, in bytes of its JSON text (a server's request with
        a longer id is answered with an error, id null).
    :param max_tracked_bytes: bookkeeping of the pending table (ids, methods, a fixed cost per entry).
    :param default_timeout: seconds a request may wait for its answer unless the caller says otherwise;
        None waits forever.
    """

    max_pending: int = 256
    max_id_bytes: int = 256
    max_tracked_bytes: int = 64 * 1024
    default_timeout: float | None = 30.0


DEFAULT_LIMITS: Final = EndpointLimits()


def id_size(value: RequestId) -> int:
    """Bytes of a request id's JSON text (quotes excluded), for the id bound (K15.2)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    return len(str(value))


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A request sent to the server and not answered yet.

    ``tag`` is the owner's label (a broker's attachment generation, a tool call) for
    :meth:`Endpoint.cancel_tagged`. ``generation`` is the server generation it was sent to.
    """

    id: RequestId
    method: str
    sent_at: float
    deadline: float | None
    generation: int
    tag: object = None
    size: int = 0


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    """The server answered ``request``: ``error`` is the JSON-RPC error object, or None with ``result``."""

    request: PendingRequest
    result: Any
    error: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class NotificationReceived:
    """A notification from the server (after the endpoint applied it to its own state)."""

    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class ServerRequestReceived:
    """A request from the server. ``answered``: the endpoint already queued the answer; otherwise the
    owner claimed the method with :meth:`Endpoint.defer` and must call :meth:`Endpoint.respond`."""

    id: RequestId
    method: str
    params: Any
    answered: bool


@dataclass(frozen=True, slots=True)
class ServerCancelledRequest:
    """The server sent ``$/cancelRequest`` for one of its deferred requests still unanswered."""

    id: RequestId


@dataclass(frozen=True, slots=True)
class RequestTimedOut:
    """``request`` reached its deadline; ``$/cancelRequest`` was queued and a late answer will be dropped."""

    request: PendingRequest


@dataclass(frozen=True, slots=True)
class UnmatchedResponse:
    """A response to no pending request: late (timed out, cancelled, another generation) or bogus."""

    id: RequestId | None


@dataclass(frozen=True, slots=True)
class MessageRejected:
    """A body that is not a JSON-RPC message; ``reason`` says what is wrong (never the body itself)."""

    reason: str


Event: TypeAlias = (
    ResponseReceived
    | NotificationReceived
    | ServerRequestReceived
    | ServerCancelledRequest
    | RequestTimedOut
    | UnmatchedResponse
    | MessageRejected
)

ServerRequestHandler: TypeAlias = Callable[[Any], Any]


class UseDefault(Enum):
    """Type of :data:`DEFAULT`: "the endpoint's default timeout" (an enum, so type checkers narrow it)."""

    DEFAULT = "DEFAULT"


#: Pass as ``timeout`` to use :attr:`EndpointLimits.default_timeout`.
DEFAULT: Final = UseDefault.DEFAULT


def configuration_handler(
    answerer: ConfigurationAnswerer, settings: Callable[[], Mapping[str, Any]]
) -> Callable[[Any], list[Any]]:
    """Answer ``workspace/configuration`` with a language's :class:`~kandev_lsp.settings.ConfigurationAnswerer`
    and its current settings (called for every request, so live settings are seen, K14.8)."""

    def answer(params: Any) -> list[Any]:
        return answerer.answer(settings(), params)

    return answer


def _null_per_item(params: Any) -> list[Any]:
    items = params.get("items") if isinstance(params, Mapping) else None
    return [None] * len(items) if isinstance(items, list) else [None]


# One encoder and one decoder for every message: json.dumps/json.loads with options build a new one per
# call, which costs as much as encoding a small message. Same rules as kandev_lsp.protocol.jsonrpc:
# compact UTF-8, and NaN/Infinity refused both ways (they are not JSON).
_ENCODE: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODE: Final = json.JSONDecoder(parse_constant=_reject_constant).decode


def _encode(message: Mapping[str, Any]) -> bytes:
    return _ENCODE(message).encode("utf-8", "surrogatepass")


def _parse(body: bytes | str) -> dict[str, Any] | MessageRejected:
    """A message body as a dict, or why it is not one (the precise reason from the shared parser)."""
    try:
        message = _DECODE(body if isinstance(body, str) else body.decode("utf-8"))
    except (ValueError, RecursionError):
        message = None
    if isinstance(message, dict):
        return message
    try:
        parse_message(body)
    except MalformedMessage as error:
        return MessageRejected(str(error))
    return MessageRejected("a message body is not a JSON object")  # pragma: no cover - parse_message agrees


@dataclass
class _Initialize:
    params: dict[str, Any] | None = None
    sent_at: float | None = None
    request_id: RequestId | None = None
    result: dict[str, Any] | None = None
    answered_at: float | None = None
    error: Mapping[str, Any] | None = None


class Endpoint:
    """One client-side LSP conversation with one running server, as a state machine (see module docs).

    :param limits: bounds of the pending table and the default timeout.
    :param configuration: answers ``workspace/configuration`` params with the result array; None answers
        null per item (pyright treats null as "no value", ``{}`` as an empty value).
    :param apply_edit: answers ``workspace/applyEdit`` params with an ``ApplyWorkspaceEditResult``;
        None refuses every edit.
    """

    def __init__(
        self,
        *,
        limits: EndpointLimits = DEFAULT_LIMITS,
        configuration: Callable[[Any], Any] | None = None,
        apply_edit: Callable[[Any], Any] | None = None,
        id_prefix: str | None = None,
    ) -> None:
        self.limits = limits
        #: With a prefix, request ids are strings (``"<prefix>1"``): for an endpoint that shares the
        #: server with clients whose integer ids (and late answers to them) must never match its own.
        self.id_prefix = id_prefix
        self.configuration = configuration
        self.apply_edit = apply_edit
        self.generation = 1
        self.progress = ProgressTracker(self.generation)
        self.registrations = RegistrationStore()
        self.documents = DocumentVersions()
        self.diagnostics = DiagnosticsStore(self.generation)
        self.closed = False
        self._ids = itertools.count(1)
        self._pending: dict[RequestId, PendingRequest] = {}
        self._tracked = 0
        self._deferred: dict[RequestId, str] = {}
        self._outbox: list[bytes] = []
        self._handlers: dict[str, ServerRequestHandler] = {}
        self._deferred_methods: set[str] = set()
        self._init = _Initialize()
        self.position_encoding = PositionEncoding.UTF16

    # -- the initialize exchange -----------------------------------------------------------------------
    @property
    def initialize_params(self) -> dict[str, Any] | None:
        """The params of the ``initialize`` request sent to this server generation."""
        return self._init.params

    @property
    def initialize_sent_at(self) -> float | None:
        """When ``initialize`` was sent (the caller's clock), for "initialization is taking long" (K5.3)."""
        return self._init.sent_at

    @property
    def initialize_result(self) -> dict[str, Any] | None:
        """The whole ``InitializeResult`` (K14.2), once the server answered."""
        return self._init.result

    @property
    def initialized_at(self) -> float | None:
        """When the server answered ``initialize`` (successfully or not)."""
        return self._init.answered_at

    @property
    def initializing(self) -> bool:
        """``initialize`` was sent and is not answered yet."""
        return self._init.sent_at is not None and self._init.answered_at is None

    @property
    def server_capabilities(self) -> dict[str, Any]:
        result = self._init.result or {}
        capabilities = result.get("capabilities")
        return capabilities if isinstance(capabilities, dict) else {}

    @property
    def workspace_folders(self) -> list[Any] | None:
        """The folders sent in ``initialize`` (the answer to ``workspace/workspaceFolders``)."""
        params = self._init.params or {}
        folders = params.get("workspaceFolders")
        return folders if isinstance(folders, list) else None

    def send_initialize(
        self, params: Mapping[str, Any], *, now: float, timeout: float | UseDefault | None = DEFAULT
    ) -> PendingRequest:
        """Queue ``initialize``: remember its params and time, track its ``workDoneToken`` (K6.2)."""
        request = self.send_request("initialize", dict(params), now=now, timeout=timeout)
        self._init = _Initialize(params=dict(params), sent_at=now, request_id=request.id)
        token = params.get("workDoneToken")
        if token is not None:
            self.progress.accept(token)
        return request

    def _note_initialize(self, request: PendingRequest, message: Mapping[str, Any], now: float) -> None:
        if request.id != self._init.request_id:
            return
        self._init.answered_at = now
        result = message.get("result")
        if "error" in message or not isinstance(result, dict):
            self._init.error = message.get("error") if isinstance(message.get("error"), Mapping) else {}
            return
        self._init.result = result
        offered = ((self._init.params or {}).get("capabilities") or {}).get("general", {})
        capabilities = result.get("capabilities")
        chosen = capabilities.get("positionEncoding") if isinstance(capabilities, Mapping) else None
        self.position_encoding = negotiated_encoding(
            offered.get("positionEncodings") if isinstance(offered, Mapping) else None, chosen
        )

    # -- sending ---------------------------------------------------------------------------------------
    def send_request(
        self,
        method: str,
        params: Any = None,
        *,
        now: float,
        timeout: float | UseDefault | None = DEFAULT,
        tag: object = None,
    ) -> PendingRequest:
        """Queue a request; its answer arrives as a :class:`ResponseReceived` event.

        ``params=None`` omits the member. ``timeout`` (seconds from ``now``) defaults to
        ``limits.default_timeout``; None waits forever.

        :raises RequestRefused: a bound would be exceeded or the endpoint is closed; nothing was queued.
        """
        if self.closed:
            raise RequestRefused(f"cannot send {method}: the server's connection is closed")
        limits = self.limits
        if len(self._pending) >= limits.max_pending:
            raise RequestRefused(
                f"cannot send {method}: {limits.max_pending} requests are already waiting for this server "
                "(EndpointLimits.max_pending); wait for answers or cancel some"
            )
        number = next(self._ids)
        request_id: RequestId = number if self.id_prefix is None else f"{self.id_prefix}{number}"
        size = _ENTRY_OVERHEAD + len(method) + id_size(request_id)
        if self._tracked + size > limits.max_tracked_bytes:
            raise RequestRefused(
                f"cannot send {method}: the pending requests already use {self._tracked} of "
                f"{limits.max_tracked_bytes} tracked bytes (EndpointLimits.max_tracked_bytes)"
            )
        seconds = limits.default_timeout if timeout is DEFAULT else timeout
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._outbox.append(_encode(message))
        request = PendingRequest(
            request_id,
            method,
            now,
            None if seconds is None else now + seconds,
            self.generation,
            tag,
            size,
        )
        self._pending[request_id] = request
        self._tracked += size
        return request

    def send_notification(self, method: str, params: Any = None) -> None:
        """Queue a notification (``params=None`` omits the member)."""
        if self.closed:
            raise RequestRefused(f"cannot send {method}: the server's connection is closed")
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._outbox.append(_encode(message))

    def cancel(self, request_id: RequestId) -> PendingRequest | None:
        """Stop waiting for ``request_id`` and queue ``$/cancelRequest``; a late answer is dropped.

        Returns the request, or None when it was not pending (already answered, timed out or cancelled).
        """
        request = self._forget(request_id)
        if request is not None and not self.closed:
            self.send_notification("$/cancelRequest", {"id": request_id})
        return request

    def cancel_tagged(self, tag: object) -> list[PendingRequest]:
        """Cancel every pending request carrying ``tag`` (a detached attachment's, K15.8)."""
        return [
            request
            for request_id, pending in list(self._pending.items())
            if pending.tag == tag and (request := self.cancel(request_id)) is not None
        ]

    def _forget(self, request_id: RequestId) -> PendingRequest | None:
        request = self._pending.pop(request_id, None)
        if request is not None:
            self._tracked -= request.size
        return request

    @property
    def pending(self) -> Mapping[RequestId, PendingRequest]:
        """Requests waiting for an answer, by id (read-only view)."""
        return self._pending

    @property
    def tracked_bytes(self) -> int:
        return self._tracked

    def next_deadline(self) -> float | None:
        """The earliest deadline of a pending request, for the driver's timer."""
        deadlines = [request.deadline for request in self._pending.values() if request.deadline is not None]
        return min(deadlines) if deadlines else None

    def expire(self, now: float) -> list[RequestTimedOut]:
        """Time out every request whose deadline has passed: each is cancelled toward the server (K15.5)."""
        expired = [
            request
            for request in self._pending.values()
            if request.deadline is not None and request.deadline <= now
        ]
        for request in expired:
            self.cancel(request.id)
        return [RequestTimedOut(request) for request in expired]

    def respond(self, request_id: RequestId, result: Any) -> bool:
        """Answer a deferred server request; False when it is not waiting (answered, cancelled, unknown)."""
        if self._deferred.pop(request_id, None) is None:
            return False
        self._queue_response(request_id, result)
        return True

    def respond_error(self, request_id: RequestId, code: int, message: str, data: Any = None) -> bool:
        """Answer a deferred server request with an error; False when it is not waiting."""
        if self._deferred.pop(request_id, None) is None:
            return False
        self._queue_error(request_id, code, message, data)
        return True

    @property
    def deferred(self) -> Mapping[RequestId, str]:
        """Server requests the owner has yet to answer: id -> method."""
        return self._deferred

    def data_to_send(self) -> list[bytes]:
        """Take every queued message body, in order (frame them, or send them as WebSocket messages)."""
        out, self._outbox = self._outbox, []
        return out

    def _queue_response(self, request_id: RequestId | None, result: Any) -> None:
        if not self.closed:
            self._outbox.append(_encode({"jsonrpc": "2.0", "id": request_id, "result": result}))

    def _queue_error(self, request_id: RequestId | None, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": int(code), "message": message}
        if data is not None:
            error["data"] = data
        if not self.closed:
            self._outbox.append(_encode({"jsonrpc": "2.0", "id": request_id, "error": error}))

    # -- server requests: the router -------------------------------------------------------------------
    def set_handler(self, method: str, handler: ServerRequestHandler | None) -> None:
        """Answer the server's ``method`` requests with ``handler(params)`` (None removes it).

        The handler returns the result, or raises :class:`HandlerError` for a JSON-RPC error. Any other
        exception is answered as an internal error (its type only; messages may carry source text).
        """
        if handler is None:
            self._handlers.pop(method, None)
        else:
            self._handlers[method] = handler

    def defer(self, method: str, deferred: bool = True) -> None:
        """Let the owner answer ``method`` itself, asynchronously (see :class:`ServerRequestReceived`)."""
        if deferred:
            self._deferred_methods.add(method)
        else:
            self._deferred_methods.discard(method)

    def _default_answer(self, method: str, params: Any, now: float) -> Any:
        if method == "window/workDoneProgress/create":
            token = params.get("token") if isinstance(params, Mapping) else None
            if not self.progress.accept(token, created_at=now):
                raise HandlerError(
                    ErrorCode.INVALID_PARAMS, "the progress token must be a string or an integer"
                )
            return None
        if method == "client/registerCapability":
            self.registrations.register(params)
            return None
        if method == "client/unregisterCapability":
            self.registrations.unregister(params)
            return None
        if method == "window/showMessageRequest":
            return None
        if method == "workspace/workspaceFolders":
            return self.workspace_folders
        if method == "workspace/configuration":
            return (self.configuration or _null_per_item)(params)
        if method == "workspace/applyEdit":
            if self.apply_edit is not None:
                return self.apply_edit(params)
            return {"applied": False, "failureReason": APPLY_EDIT_REFUSED}
        if _REFRESH.fullmatch(method):
            return None
        raise HandlerError(ErrorCode.METHOD_NOT_FOUND, f"kandev-lsp does not handle {method}")

    def _answer(self, request_id: RequestId, method: str, params: Any, now: float) -> bool:
        """Answer a server request now, or leave it to the owner; return whether it was answered."""
        handler = self._handlers.get(method)
        if handler is None and method in self._deferred_methods:
            self._deferred[request_id] = method
            return False
        try:
            result = handler(params) if handler is not None else self._default_answer(method, params, now)
        except HandlerError as error:
            self._queue_error(request_id, error.code, error.message, error.data)
            return True
        except Exception as error:  # a broken handler must not stall the server or the reader
            self._queue_error(
                request_id,
                ErrorCode.INTERNAL_ERROR,
                f"kandev-lsp failed to answer {method}: {type(error).__name__}",
            )
            return True
        self._queue_response(request_id, result)
        return True

    # -- receiving -------------------------------------------------------------------------------------
    def receive(self, body: bytes | str, now: float) -> list[Event]:
        """Take one message body from the server; return what happened (usually one event).

        Whatever must be answered is queued for :meth:`data_to_send`. A body that is not JSON-RPC is
        reported as :class:`MessageRejected` and otherwise ignored (a server request whose id cannot be
        read is answered with an error, id null, as JSON-RPC says).
        """
        message = _parse(body)
        if isinstance(message, MessageRejected):
            return [message]
        return self.receive_message(message, now)

    def receive_message(self, message: Mapping[str, Any], now: float) -> list[Event]:
        """:meth:`receive` for a message already parsed into a dict."""
        if message.get("jsonrpc") != "2.0":
            return [MessageRejected('a message lacks "jsonrpc": "2.0"')]
        method = message.get("method")
        if method is None:
            return [self._response(message, now)]
        if not isinstance(method, str):
            return [MessageRejected('a message has a "method" that is not a string')]
        params = message.get("params")
        if "id" not in message:
            return [self._notification(method, params, now)]
        request_id = message["id"]
        if (
            isinstance(request_id, bool)
            or not isinstance(request_id, int | str)
            or id_size(request_id) > self.limits.max_id_bytes
        ):
            self._queue_error(
                None, ErrorCode.INVALID_REQUEST, "the request id is not an integer or a short string"
            )
            return [MessageRejected(f"a {method} request has an unusable id")]
        answered = self._answer(request_id, method, params, now)
        return [ServerRequestReceived(request_id, method, params, answered)]

    def _response(self, message: Mapping[str, Any], now: float) -> Event:
        request_id = message.get("id")
        if ("result" in message) == ("error" in message):
            return MessageRejected('a response must carry exactly one of "result" and "error"')
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return UnmatchedResponse(None)
        request = self._forget(request_id)
        if request is None:
            return UnmatchedResponse(request_id)
        error = message.get("error")
        if request.method == "initialize":
            self._note_initialize(request, message, now)
        if error is not None:
            if not isinstance(error, Mapping):
                error = {"code": ErrorCode.INTERNAL_ERROR, "message": "the server sent a malformed error"}
            return ResponseReceived(request, None, error)
        return ResponseReceived(request, message.get("result"), None)

    def _notification(self, method: str, params: Any, now: float) -> Event:
        if method == "$/progress":
            self.progress.on_progress(params, now)
        elif method == "textDocument/publishDiagnostics":
            self.diagnostics.publish(params, now)
        elif method == "$/cancelRequest":
            target = params.get("id") if isinstance(params, Mapping) else None
            if isinstance(target, int | str) and target in self._deferred:
                return ServerCancelledRequest(target)
        return NotificationReceived(method, params)

    # -- lifetime --------------------------------------------------------------------------------------
    def connection_lost(self) -> list[PendingRequest]:
        """The server's output ended (exit, crash, broken framing): fail everything in flight.

        Returns the requests that will never be answered; the endpoint refuses new ones afterwards.
        """
        self.closed = True
        lost = list(self._pending.values())
        self._pending.clear()
        self._tracked = 0
        self._deferred.clear()
        self._outbox.clear()
        return lost

    def new_generation(self) -> int:
        """Start over for a new server process: a fresh protocol state under the next generation number.

        Pending requests of the old generation are dropped (their late answers would be unmatched);
        request ids keep counting, so an old id never names a new request.
        """
        self.generation += 1
        self.closed = False
        self._pending.clear()
        self._tracked = 0
        self._deferred.clear()
        self._outbox.clear()
        self.progress.reset(self.generation)
        self.registrations.clear()
        self.documents = DocumentVersions()
        self.diagnostics.reset(self.generation)
        self._init = _Initialize()
        self.position_encoding = PositionEncoding.UTF16
        return self.generation
