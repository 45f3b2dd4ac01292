"""Diagnostics pulled from typescript-language-server's TypeScript server (issue 20 item 2).

typescript-language-server answers no ``textDocument/diagnostic`` and publishes without versions, each
kind of diagnostics (syntax, semantic, suggestion) as it comes: after a change it published an empty set
from the syntax pass 1.4 s before the semantic pass reported the new error (zod, measured), and a
freshly opened file's empty first set 2 s before its error. No publication says it is the last one, so
no wait on publications can tell a clean file from one still being checked. The server offers an exact
answer through its own ``typescript.tsserverRequest`` command: ``syntacticDiagnosticsSync``,
``semanticDiagnosticsSync`` and ``suggestionDiagnosticsSync`` compute the file's diagnostics for the text
the TypeScript server has, after every change sent before them. :func:`lsp_diagnostics` turns their
answers into the ``Diagnostic`` values the server would have published (its own conversion: 1-based line
and offset to 0-based positions, category to severity, source ``typescript``), so pulled and published
diagnostics compare equal (post-edit receipts key them by source, code, severity and message).

Pure: the caller sends the commands (when the server lists the command in ``executeCommandProvider``).
:func:`configured_project` is the one reader of the disk here: which project file the TypeScript server
loads a file with, by its own search.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = [
    "PROJECT_FILES",
    "PULL_KINDS",
    "TSSERVER_REQUEST",
    "configured_project",
    "lsp_diagnostics",
    "offers_pull",
    "pull_params",
]

TSSERVER_REQUEST: Final = "typescript.tsserverRequest"
#: The TypeScript server's diagnostics requests, in the order the server publishes their kinds.
PULL_KINDS: Final = ("syntacticDiagnosticsSync", "semanticDiagnosticsSync", "suggestionDiagnosticsSync")
_SEVERITY: Final = {"error": 1, "warning": 2, "suggestion": 4}
#: The project files the TypeScript server looks for, in its order, in a file's folder and each one above.
PROJECT_FILES: Final = ("tsconfig.json", "jsconfig.json")


def configured_project(path: str, root: str, *, isfile: Callable[[str], bool] = os.path.isfile) -> str | None:
    """The ``tsconfig.json`` or ``jsconfig.json`` the TypeScript server finds for the file ``path``: the
    first in its folder or one above it, up to ``root`` (the server's workspace folder, which
    typescript-language-server hands tsserver as the search's ``projectRootPath``). None: the file is
    in an inferred project, which holds only the open files and what they import, so a search for the
    uses of a name (references, callers, implementations, workspace symbols) sees no other file."""
    folder = os.path.dirname(path)
    while True:
        for name in PROJECT_FILES:
            candidate = os.path.join(folder, name)
            if isfile(candidate):
                return candidate
        if folder == root or not folder.startswith(root + os.sep):
            return None
        folder = os.path.dirname(folder)


def offers_pull(capabilities: Mapping[str, Any]) -> bool:
    """Whether the server lists ``typescript.tsserverRequest`` among its commands."""
    provider = capabilities.get("executeCommandProvider")
    commands = provider.get("commands") if isinstance(provider, Mapping) else None
    return isinstance(commands, list) and TSSERVER_REQUEST in commands


def pull_params(kind: str, uri: str) -> dict[str, Any]:
    """``workspace/executeCommand`` params asking the TypeScript server for one kind of ``uri``'s
    diagnostics (the server maps an open document's URI to its file)."""
    return {"command": TSSERVER_REQUEST, "arguments": [kind, {"file": uri}]}


def _position(location: Any) -> dict[str, int] | None:
    if not isinstance(location, Mapping):
        return None
    line, offset = location.get("line"), location.get("offset")
    if type(line) is not int or type(offset) is not int:
        return None
    return {"line": max(line - 1, 0), "character": max(offset - 1, 0)}


def lsp_diagnostics(answers: list[Any]) -> list[dict[str, Any]] | None:
    """The ``Diagnostic`` list of the TypeScript server's answers (one per kind, in order), or None when
    an answer is not a successful response (the caller then waits for publications instead)."""
    found: list[dict[str, Any]] = []
    for answer in answers:
        body = answer.get("body") if isinstance(answer, Mapping) and answer.get("success") else None
        if not isinstance(body, list):
            return None
        for item in body:
            if not isinstance(item, Mapping):
                continue
            start, end = _position(item.get("start")), _position(item.get("end"))
            message = item.get("text")
            if start is None or end is None or not isinstance(message, str):
                continue
            diagnostic: dict[str, Any] = {
                "range": {"start": start, "end": end},
                "message": message,
                "severity": _SEVERITY.get(str(item.get("category")), 1),
                "source": item.get("source") or "typescript",
            }
            if isinstance(item.get("code"), int | str):
                diagnostic["code"] = item["code"]
            found.append(diagnostic)
    return found
