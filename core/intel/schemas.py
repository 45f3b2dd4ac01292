"""The six read tools as data (B2.1, B6): names, titles, descriptions and JSON schemas.

These dicts are what an MCP client sees (``tools/list``: name, title, description, ``inputSchema``,
``annotations``) and what :mod:`~kandev_lsp.intel.validation` checks payloads against, so the schema a
model reads and the rule the tool enforces cannot drift. The vocabulary is a small subset of JSON Schema
(``type``, ``properties``, ``required``, ``additionalProperties: false``, ``enum``, ``minimum``,
``maximum``, ``minLength``, ``default``, ``description``): every MCP client understands it, and the
validator implements all of it. ``Target`` is inlined in each tool (no ``$ref``): some clients do not
follow references.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Final

from kandev_lsp.intel.output import DEFAULT_LIMIT, MAX_CONTEXT, MAX_LIMIT

__all__ = ["HIERARCHY_KINDS", "NAVIGATE_KINDS", "SEVERITIES", "TOOLS", "ToolSpec", "tool_by_name"]

NAVIGATE_KINDS: Final = ("definition", "typeDefinition", "declaration", "implementation", "references")
HIERARCHY_KINDS: Final = ("callers", "callees", "supertypes", "subtypes")
SEVERITIES: Final = ("error", "warning", "info", "hint")
MAX_DEPTH: Final = 4
MAX_ACTIVATION: Final = 200

#: MCP tool annotations shared by every read tool.
READ_ONLY: Final = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}


def _path(required_text: str = "") -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "description": "File path, relative to the workspace (in a multi-root workspace, prefixed with the "
        "root id as results show it), or absolute inside the workspace." + required_text,
    }


_ROOT_ID: Final = {
    "type": "string",
    "minLength": 1,
    "description": "The workspace root to look in, when the same relative path exists in several roots.",
}

_LIMIT: Final = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_LIMIT,
    "default": DEFAULT_LIMIT,
    "description": f"Most results to return (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}); "
    "the result says truncated and totalFound when there were more.",
}

_FIRST_MATCH: Final = {
    "type": "boolean",
    "default": False,
    "description": "When several symbols match target.symbol, use the first instead of returning the "
    "candidates.",
}

TARGET: Final = {
    "type": "object",
    "description": "What to point at: a symbol by name (preferred), or a line with matchText or column.",
    "properties": {
        "path": _path(),
        "rootId": _ROOT_ID,
        "symbol": {
            "type": "string",
            "minLength": 1,
            "description": "Symbol name in that file: 'fetchModels', or 'Container.member' such as "
            "'ChatProvider.send', or a candidate id from an ambiguous answer ('ChatProvider.send@42').",
        },
        "kind": {
            "type": "string",
            "minLength": 1,
            "description": "Narrows symbol: class, method, function, variable, interface, property, field, "
            "constructor, enum, constant, module, ...",
        },
        "line": {
            "type": "integer",
            "minimum": 1,
            "description": "1-based line. With symbol: chooses between same-named symbols. Without: the "
            "line to point at (its first non-blank character unless matchText or column is given).",
        },
        "column": {"type": "integer", "minimum": 1, "description": "1-based column, in characters."},
        "matchText": {
            "type": "string",
            "minLength": 1,
            "description": "Text on that line to point at (more robust than a column); fails, showing the "
            "line, when the text is not there.",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: its MCP name, the dispatch op (runtime type ``lsp.<op>``, B2.3), and its schema."""

    name: str
    op: str
    title: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool = True

    @property
    def runtime_type(self) -> str:
        return f"lsp.{self.op}"

    def mcp_definition(self) -> dict[str, Any]:
        """The tool as MCP ``tools/list`` shows it (a deep copy: callers may not alter the spec)."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": copy.deepcopy(self.input_schema),
            "annotations": {"title": self.title, **READ_ONLY},
        }


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        "code_symbols",
        "symbols",
        "Symbols",
        "The symbols of a file as a nested outline (name, kind, lines, children), or with query, symbols "
        "matching a name across the workspace. The table of contents of the code.",
        _object(
            {
                "path": _path(" Give path, query, or both (query then filters the file's symbols)."),
                "rootId": _ROOT_ID,
                "query": {"type": "string", "minLength": 1, "description": "Symbol name or part of it."},
                "limit": _LIMIT,
            },
            [],
        ),
    ),
    ToolSpec(
        "code_navigate",
        "navigate",
        "Navigate",
        "Where a symbol is defined, its type's definition, declaration or implementations, or every "
        "reference to it; each location with a source snippet, grouped by file.",
        _object(
            {
                "target": copy.deepcopy(TARGET),
                "kind": {"type": "string", "enum": list(NAVIGATE_KINDS), "description": "What to find."},
                "includeBody": {
                    "type": "boolean",
                    "default": False,
                    "description": "Also return the whole declaration (up to 200 lines) of each location.",
                },
                "limit": _LIMIT,
                "context": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_CONTEXT,
                    "default": 0,
                    "description": f"Lines of source around each location (0-{MAX_CONTEXT}).",
                },
                "firstMatch": _FIRST_MATCH,
            },
            ["target", "kind"],
        ),
    ),
    ToolSpec(
        "code_hierarchy",
        "hierarchy",
        "Hierarchy",
        "Who calls a function or what it calls, or a type's supertypes or subtypes, up to 4 levels deep: "
        "the direct list plus a bounded graph with call sites.",
        _object(
            {
                "target": copy.deepcopy(TARGET),
                "kind": {"type": "string", "enum": list(HIERARCHY_KINDS), "description": "Which direction."},
                "depth": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_DEPTH,
                    "default": 1,
                    "description": f"Levels to follow (1-{MAX_DEPTH}).",
                },
                "limit": _LIMIT,
                "firstMatch": _FIRST_MATCH,
            },
            ["target", "kind"],
        ),
    ),
    ToolSpec(
        "code_hover",
        "hover",
        "Hover",
        "The type, signature and documentation of a symbol, with the active parameter of an enclosing "
        "call marked: what this is, without reading the file.",
        _object({"target": copy.deepcopy(TARGET), "firstMatch": _FIRST_MATCH}, ["target"]),
    ),
    ToolSpec(
        "code_diagnostics",
        "diagnostics",
        "Diagnostics",
        "The language servers' errors and warnings for a file, a root or the workspace, with counts, "
        "freshness and how much of the workspace they cover. Not a replacement for the compiler or tests.",
        _object(
            {
                "path": _path(" Omit for the whole workspace (or the root given by rootId)."),
                "rootId": _ROOT_ID,
                "severity": {
                    "type": "string",
                    "enum": list(SEVERITIES),
                    "description": "Lowest severity to list (counts always cover every severity).",
                },
                "limit": _LIMIT,
                "activateWorkspace": {
                    "type": "boolean",
                    "default": False,
                    "description": "Open the workspace's source files so their diagnostics are computed "
                    "(bounded by activationLimit); slower, broader coverage.",
                },
                "activationLimit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_ACTIVATION,
                    "default": 50,
                    "description": f"Most files to open with activateWorkspace (1-{MAX_ACTIVATION}).",
                },
            },
            [],
        ),
    ),
    ToolSpec(
        "code_inlay_hints",
        "inlay_hints",
        "Inlay Hints",
        "Inferred types and parameter names the language server would show inline, for a file or a line "
        "range: the types untyped code does not spell out.",
        _object(
            {
                "path": _path(),
                "rootId": _ROOT_ID,
                "range": {
                    "type": "object",
                    "description": "Lines to cover (1-based, inclusive); the whole file when omitted.",
                    "properties": {
                        "startLine": {"type": "integer", "minimum": 1},
                        "endLine": {"type": "integer", "minimum": 1},
                    },
                    "required": ["startLine", "endLine"],
                    "additionalProperties": False,
                },
                "limit": _LIMIT,
            },
            ["path"],
        ),
    ),
)

_BY_NAME: Final = {tool.name: tool for tool in TOOLS}
_BY_OP: Final = {tool.op: tool for tool in TOOLS}


def tool_by_name(name: str) -> ToolSpec | None:
    """The tool called ``name`` (``code_navigate``), or with that op (``navigate``, ``lsp.navigate``)."""
    return _BY_NAME.get(name) or _BY_OP.get(name.removeprefix("lsp."))
