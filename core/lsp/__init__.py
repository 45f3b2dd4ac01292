"""A real LSP peer over a running server: the sans-io endpoint, its asyncio driver, and protocol state.

Rooms (each a small module with one concern):

* :mod:`~kandev_lsp.lsp.endpoint`: the conversation as a state machine (ids, pending table and bounds,
  timeouts, ``$/cancelRequest``, the server-request router with defaults, the initialize exchange);
* :mod:`~kandev_lsp.lsp.client`: :class:`LspClient`, the asyncio task that moves bytes around it;
* :mod:`~kandev_lsp.lsp.progress`, :mod:`~kandev_lsp.lsp.registrations`,
  :mod:`~kandev_lsp.lsp.documents`, :mod:`~kandev_lsp.lsp.diagnostics`: pure protocol state;
* :mod:`~kandev_lsp.lsp.positions`: position encodings and line/character <-> offset conversion;
* :mod:`~kandev_lsp.lsp.readiness`: when a server gives complete answers, per the language's declaration;
* :mod:`~kandev_lsp.lsp.roots`: the project root of a file from a language's root markers;
* :mod:`~kandev_lsp.lsp.capabilities`: the client capabilities and ``initialize`` params we send.

Messages are plain dicts (``json.loads`` output): lsprotocol's typed structures cost 4-7x the parse on
every message and nothing here needs them.
"""

from __future__ import annotations

from kandev_lsp.lsp.capabilities import (
    base_client_capabilities,
    initialize_params,
    merge_capabilities,
    workspace_folder,
)
from kandev_lsp.lsp.client import LspClient, Subscription
from kandev_lsp.lsp.diagnostics import DiagnosticsEntry, DiagnosticsStore
from kandev_lsp.lsp.documents import DocumentNotOpen, DocumentState, DocumentVersions
from kandev_lsp.lsp.endpoint import (
    Endpoint,
    EndpointLimits,
    Event,
    MessageRejected,
    NotificationReceived,
    PendingRequest,
    RequestTimedOut,
    ResponseReceived,
    ServerCancelledRequest,
    ServerRequestReceived,
    UnmatchedResponse,
    configuration_handler,
)
from kandev_lsp.lsp.errors import (
    HandlerError,
    LspError,
    RequestRefused,
    RequestTimeout,
    ResponseError,
    ServerClosed,
)
from kandev_lsp.lsp.positions import LineIndex, PositionEncoding, negotiated_encoding, offset_at, position_at
from kandev_lsp.lsp.progress import ProgressItem, ProgressSnapshot, ProgressTracker
from kandev_lsp.lsp.readiness import ReadinessStatus, ReadinessTracker
from kandev_lsp.lsp.registrations import Registration, RegistrationStore
from kandev_lsp.lsp.roots import find_project_root, project_root

__all__ = [
    "DiagnosticsEntry",
    "DiagnosticsStore",
    "DocumentNotOpen",
    "DocumentState",
    "DocumentVersions",
    "Endpoint",
    "EndpointLimits",
    "Event",
    "HandlerError",
    "LineIndex",
    "LspClient",
    "LspError",
    "MessageRejected",
    "NotificationReceived",
    "PendingRequest",
    "PositionEncoding",
    "ProgressItem",
    "ProgressSnapshot",
    "ProgressTracker",
    "ReadinessStatus",
    "ReadinessTracker",
    "Registration",
    "RegistrationStore",
    "RequestRefused",
    "RequestTimedOut",
    "RequestTimeout",
    "ResponseError",
    "ResponseReceived",
    "ServerCancelledRequest",
    "ServerClosed",
    "ServerRequestReceived",
    "Subscription",
    "UnmatchedResponse",
    "base_client_capabilities",
    "configuration_handler",
    "find_project_root",
    "initialize_params",
    "merge_capabilities",
    "negotiated_encoding",
    "offset_at",
    "position_at",
    "project_root",
    "workspace_folder",
]
