"""What kandev-lsp tells a server it can do as a client, and how a language adds to it.

A headless client must not claim what it does not do: ``workspace.applyEdit`` is offered only when the
owner installs an applier; ``window.workDoneProgress`` is offered because the endpoint answers
``window/workDoneProgress/create`` itself and tracks the progress (K6.1). Languages add their own
entries (rust-analyzer's ``experimental.serverStatusNotification``) through the plugin contract; the
result is merged with :func:`merge_capabilities`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kandev_lsp.lsp.positions import CLIENT_POSITION_ENCODINGS

__all__ = ["base_client_capabilities", "initialize_params", "merge_capabilities", "workspace_folder"]


#: Code action kinds the client understands (LSP 3.17's base kinds; servers send sub-kinds of these).
CODE_ACTION_KINDS: Final = (
    "",
    "quickfix",
    "refactor",
    "refactor.extract",
    "refactor.inline",
    "refactor.rewrite",
    "source",
    "source.organizeImports",
    "source.fixAll",
)


def base_client_capabilities(*, apply_edit: bool = False, pull_diagnostics: bool = False) -> dict[str, Any]:
    """The client capabilities every server started by kandev-lsp receives (a fresh dict each call).

    ``pull_diagnostics`` offers ``textDocument/diagnostic``: a server that supports it (pyright) then
    stops publishing diagnostics and waits to be asked, so offer it only when the owner will ask.
    """
    capabilities: dict[str, Any] = {
        "general": {"positionEncodings": [encoding.value for encoding in CLIENT_POSITION_ENCODINGS]},
        "window": {"workDoneProgress": True, "showMessage": {}},
        "workspace": {
            "applyEdit": apply_edit,
            "configuration": True,
            "workspaceFolders": True,
            "didChangeConfiguration": {"dynamicRegistration": True},
            "didChangeWatchedFiles": {"dynamicRegistration": True, "relativePatternSupport": True},
            "workspaceEdit": {"documentChanges": True},
            "symbol": {},
        },
        "textDocument": {
            "synchronization": {"dynamicRegistration": False, "didSave": True},
            "publishDiagnostics": {"relatedInformation": True, "versionSupport": True},
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "signatureHelp": {"signatureInformation": {"parameterInformation": {"labelOffsetSupport": True}}},
            "definition": {"linkSupport": True},
            "typeDefinition": {"linkSupport": True},
            "declaration": {"linkSupport": True},
            "implementation": {"linkSupport": True},
            "references": {},
            "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
            "callHierarchy": {},
            "typeHierarchy": {},
            "inlayHint": {},
            # The intel mutating tools (issue 11): prepareRename's refusal, code actions as literals with
            # their disabled reasons and lazy resolution, document and range formatting.
            "rename": {"prepareSupport": True},
            "codeAction": {
                "codeActionLiteralSupport": {"codeActionKind": {"valueSet": list(CODE_ACTION_KINDS)}},
                "isPreferredSupport": True,
                "disabledSupport": True,
                "dataSupport": True,
                "resolveSupport": {"properties": ["edit", "command"]},
            },
            "formatting": {},
            "rangeFormatting": {},
        },
    }
    if pull_diagnostics:
        capabilities["textDocument"]["diagnostic"] = {
            "dynamicRegistration": True,
            "relatedDocumentSupport": False,
        }
    return capabilities


def merge_capabilities(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``extra`` merged in depth: nested objects merge, any other value in ``extra`` wins."""
    merged = copy.deepcopy(dict(base))
    for key, value in extra.items():
        current = merged.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            merged[key] = merge_capabilities(current, value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def workspace_folder(uri: str, name: str | None = None) -> dict[str, str]:
    """A ``WorkspaceFolder`` value; the name defaults to the last segment of the URI."""
    return {"uri": uri, "name": name or uri.rstrip("/").rsplit("/", 1)[-1] or uri}


def initialize_params(
    *,
    workspace_folders: Sequence[Mapping[str, str]] = (),
    capabilities: Mapping[str, Any] | None = None,
    initialization_options: Mapping[str, Any] | None = None,
    work_done_token: str | int | None = None,
    client_name: str = "kandev-lsp",
    process_id: int | None = None,
) -> dict[str, Any]:
    """``InitializeParams`` for a server: the first folder is also the legacy ``rootUri``.

    ``process_id`` defaults to this process (servers exit when their parent dies).
    """
    folders = [dict(folder) for folder in workspace_folders]
    params: dict[str, Any] = {
        "processId": os.getpid() if process_id is None else process_id,
        "clientInfo": {"name": client_name},
        "rootUri": folders[0]["uri"] if folders else None,
        "workspaceFolders": folders or None,
        "capabilities": dict(capabilities) if capabilities is not None else base_client_capabilities(),
    }
    if initialization_options is not None:
        params["initializationOptions"] = dict(initialization_options)
    if work_done_token is not None:
        params["workDoneToken"] = work_done_token
    return params
