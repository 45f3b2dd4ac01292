"""The twelve tools as data (B2.1, B6): names, titles, descriptions and JSON schemas.

:data:`TOOLS` are the six read tools; :data:`MUTATING_TOOLS` the six that change files (B6.16-B6.29), each
with MCP annotations that say so (not read-only; destructive unless it only adds text or re-formats), a
``transactionId``/``approve`` pair for the second step of a parked change, and no ``firstMatch`` (B4.6):
a mutation needs an exact target. :data:`ALL_TOOLS` is the catalogue in order.

These dicts are what an MCP client sees (``tools/list``: name, title, description, ``inputSchema``,
``annotations``) and what :mod:`~kandev_lsp.intel.surface.validation` checks payloads against, so the schema a
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

from kandev_lsp.intel.reading.output import DEFAULT_LIMIT, MAX_CONTEXT, MAX_LIMIT

__all__ = [
    "ALL_TOOLS",
    "HIERARCHY_KINDS",
    "INSERT_POSITIONS",
    "MAX_BATCH",
    "MUTATING_TOOLS",
    "NAVIGATE_KINDS",
    "SEVERITIES",
    "TOOLS",
    "ToolSpec",
    "tool_by_name",
]

NAVIGATE_KINDS: Final = ("definition", "typeDefinition", "declaration", "implementation", "references")
HIERARCHY_KINDS: Final = ("callers", "callees", "supertypes", "subtypes")
SEVERITIES: Final = ("error", "warning", "info", "hint")
MAX_DEPTH: Final = 4
MAX_ACTIVATION: Final = 200
INSERT_POSITIONS: Final = ("before", "after", "start", "end")
#: Most replacements in one code_replace_batch call.
MAX_BATCH: Final = 50

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
    "description": "When several symbols match target.symbol (or target.matchText occurs several times "
    "on its line), use the first instead of returning the candidates.",
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
    #: Mutations only: may overwrite or remove existing text (MCP ``destructiveHint``).
    destructive: bool = False
    #: Mutations only: a second identical call changes nothing more (MCP ``idempotentHint``).
    idempotent: bool = False

    @property
    def runtime_type(self) -> str:
        return f"lsp.{self.op}"

    def annotations(self) -> dict[str, Any]:
        """MCP tool annotations: read tools are read-only; mutations say whether they are destructive."""
        if self.read_only:
            return {"title": self.title, **READ_ONLY}
        return {
            "title": self.title,
            "readOnlyHint": False,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": False,
        }

    def mcp_definition(self) -> dict[str, Any]:
        """The tool as MCP ``tools/list`` shows it (a deep copy: callers may not alter the spec)."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": copy.deepcopy(self.input_schema),
            "annotations": self.annotations(),
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
                "since": {
                    "type": "string",
                    "minLength": 1,
                    "description": "After editing with your own file tools: diagnostics introduced "
                    "and resolved since an earlier answer's baselineId ('last': the previous answer), "
                    "in the files changed since and those re-checked.",
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

#: A target for a mutation: the read target without firstMatch, described briefly (the catalogue's size
#: is paid in every prompt).
MUTATION_TARGET: Final = {
    "type": "object",
    "description": "As in code_navigate: a symbol by name or candidate id (it must be unique), or a line "
    "with matchText or column.",
    "properties": {
        "path": {"type": "string", "minLength": 1, "description": "File path, as in code_navigate."},
        "rootId": {"type": "string", "minLength": 1},
        "symbol": {"type": "string", "minLength": 1, "description": "'name', 'Container.member' or an id."},
        "kind": {"type": "string", "minLength": 1},
        "line": {"type": "integer", "minimum": 1},
        "column": {"type": "integer", "minimum": 1},
        "matchText": {"type": "string", "minLength": 1},
    },
    "required": ["path"],
    "additionalProperties": False,
}

_TRANSACTION: Final = {
    "transactionId": {
        "type": "string",
        "minLength": 1,
        "description": "Second step of a change that answered needsApproval: send only transactionId "
        "and approve.",
    },
    "approve": {"type": "boolean", "description": "With transactionId: true applies, false discards."},
}
_APPROVAL_NOTE: Final = (
    " Shows a preview and asks for approval (or answers needsApproval with a transactionId); the result "
    "carries a receipt with post-edit diagnostics."
)


def _mutation(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return _object({**properties, **copy.deepcopy(_TRANSACTION)}, required)


def _line(description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "description": description}


_TEXT: Final = {"type": "string", "description": "The new text."}

MUTATING_TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        "code_rename",
        "rename",
        "Rename Symbol",
        "Rename a symbol everywhere it is used, as the language server sees it (prepareRename checks the "
        "position first; a refusal is returned as the server gave it)." + _APPROVAL_NOTE,
        _mutation(
            {
                "target": copy.deepcopy(MUTATION_TARGET),
                "newName": {"type": "string", "minLength": 1, "description": "The new name."},
            },
            ["target", "newName"],
        ),
        read_only=False,
        destructive=True,
    ),
    ToolSpec(
        "code_actions",
        "actions",
        "Code Action",
        "List the server's quick fixes and refactorings for lines of a file (each with an actionId bound "
        "to the file's version), or apply one by actionId or exact title." + _APPROVAL_NOTE,
        _mutation(
            {
                "path": _path(),
                "rootId": _ROOT_ID,
                "line": _line("First line (1-based)."),
                "endLine": _line("Last line (1-based, inclusive); defaults to line."),
                "only": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Action kind prefix: quickfix, refactor, source.organizeImports, ...",
                },
                "apply": {
                    "type": "string",
                    "minLength": 1,
                    "description": "An actionId from a listing (preferred), or an action's exact title.",
                },
            },
            ["path", "line"],
        ),
        read_only=False,
        destructive=True,
    ),
    ToolSpec(
        "code_format",
        "format",
        "Format",
        "Format a file, or a line range of it, with the language server's formatter." + _APPROVAL_NOTE,
        _mutation(
            {
                "path": _path(),
                "rootId": _ROOT_ID,
                "range": {
                    "type": "object",
                    "description": "Lines to format (1-based, inclusive); the whole file when omitted.",
                    "properties": {"startLine": _line("First line."), "endLine": _line("Last line.")},
                    "required": ["startLine", "endLine"],
                    "additionalProperties": False,
                },
            },
            ["path"],
        ),
        read_only=False,
        idempotent=True,
    ),
    ToolSpec(
        "code_insert",
        "insert",
        "Insert",
        "Insert text relative to a symbol or line: before/after insert whole lines above its first or "
        "below its last line; start/end insert exactly at the start or end of the symbol's range (or the "
        "line's text)." + _APPROVAL_NOTE,
        _mutation(
            {
                "target": copy.deepcopy(MUTATION_TARGET),
                "position": {"type": "string", "enum": list(INSERT_POSITIONS), "description": "Where."},
                "text": {**_TEXT, "minLength": 1, "description": "The text to insert."},
            },
            ["target", "position", "text"],
        ),
        read_only=False,
    ),
    ToolSpec(
        "code_replace",
        "replace",
        "Replace",
        "Replace a symbol's whole range as the server reports it (declaration included; no body-only "
        "semantics), or the lines target.line..endLine, or the matchText on target.line, with text. "
        "Made against the file's current version: a file changed before approval is a conflict."
        + _APPROVAL_NOTE,
        _mutation(
            {
                "target": copy.deepcopy(MUTATION_TARGET),
                "text": copy.deepcopy(_TEXT),
                "endLine": _line("Last line (1-based, inclusive) of a line range starting at target.line."),
            },
            ["target", "text"],
        ),
        read_only=False,
        destructive=True,
    ),
    ToolSpec(
        "code_replace_batch",
        "replace_batch",
        "Replace Batch",
        "Several code_replace edits as one atomic change: every target is resolved first, overlapping "
        "targets are refused, and the result lists each target's location." + _APPROVAL_NOTE,
        _mutation(
            {
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_BATCH,
                    "description": f"The replacements (1-{MAX_BATCH}), each as code_replace takes them.",
                    "items": _object(
                        {
                            "target": copy.deepcopy(MUTATION_TARGET),
                            "text": copy.deepcopy(_TEXT),
                            "endLine": _line("Last line of a line range starting at target.line."),
                        },
                        ["target", "text"],
                    ),
                }
            },
            ["edits"],
        ),
        read_only=False,
        destructive=True,
    ),
)

#: Every tool, reads first (the order clients list them in).
ALL_TOOLS: Final[tuple[ToolSpec, ...]] = TOOLS + MUTATING_TOOLS

_BY_NAME: Final = {tool.name: tool for tool in ALL_TOOLS}
_BY_OP: Final = {tool.op: tool for tool in ALL_TOOLS}


def tool_by_name(name: str) -> ToolSpec | None:
    """The tool called ``name`` (``code_navigate``), or with that op (``navigate``, ``lsp.navigate``)."""
    return _BY_NAME.get(name) or _BY_OP.get(name.removeprefix("lsp."))
