"""``dispatch(op, payload, ctx) -> result`` (B2.3-B2.6): one entry point for every surface.

The MCP server, the ``kandev-lsp code`` command and Python callers all go through :class:`Dispatcher`:
it finds the tool (by op ``navigate``, runtime type ``lsp.navigate`` or tool name ``code_navigate``),
refuses disabled ones (``lsp_disabled_tools``, B9.1), validates the payload against the schema the client
was shown, parses it into typed arguments, runs the tool, and turns every
:class:`~kandev_lsp.intel.errors.IntelError` into the ``ok: false`` result of B2.5. Each result carries a
one-line ``summary`` (B9.4).

The tool bodies sit behind the :class:`ReadTools` protocol. :class:`UnwiredTools` is the implementation
until the language servers are wired in: each call fails with a clear :class:`NotWired` result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kandev_lsp.cancel import CancelToken
from kandev_lsp.intel.arguments import (
    PARSERS,
    DiagnosticsArgs,
    HierarchyArgs,
    HoverArgs,
    InlayHintsArgs,
    NavigateArgs,
    SymbolsArgs,
)
from kandev_lsp.intel.errors import IntelError, InvalidArguments, NotWired, UnknownTool
from kandev_lsp.intel.executor import DEFAULT_DEADLINE
from kandev_lsp.intel.schemas import TOOLS, ToolSpec, tool_by_name
from kandev_lsp.intel.summaries import summarize
from kandev_lsp.intel.validation import validate

__all__ = ["Dispatcher", "IntelContext", "ReadTools", "UnwiredTools"]


@dataclass(frozen=True, slots=True)
class IntelContext:
    """Per-call context (B2.4): approval state, a cancel signal, a transaction id, the call's deadline."""

    auto_approve: bool = False
    cancel: CancelToken | None = None
    transaction_id: str | None = None
    deadline: float = DEFAULT_DEADLINE


class ReadTools(Protocol):
    """The six read tools' bodies: typed arguments in, a result dict (``ok: true`` ...) out.

    They raise :class:`IntelError` subclasses for failures the model can act on.
    """

    async def symbols(self, args: SymbolsArgs, ctx: IntelContext) -> dict[str, Any]: ...
    async def navigate(self, args: NavigateArgs, ctx: IntelContext) -> dict[str, Any]: ...
    async def hierarchy(self, args: HierarchyArgs, ctx: IntelContext) -> dict[str, Any]: ...
    async def hover(self, args: HoverArgs, ctx: IntelContext) -> dict[str, Any]: ...
    async def diagnostics(self, args: DiagnosticsArgs, ctx: IntelContext) -> dict[str, Any]: ...
    async def inlay_hints(self, args: InlayHintsArgs, ctx: IntelContext) -> dict[str, Any]: ...


class UnwiredTools:
    """Every tool fails with :class:`NotWired`: the pure layer is complete, the servers are not connected."""

    @staticmethod
    def _fail(tool: str) -> NotWired:
        return NotWired(
            f"{tool} is not connected to a language server in this build yet: its arguments were valid, "
            "but nothing can answer them. Use file reads and search meanwhile."
        )

    async def symbols(self, args: SymbolsArgs, ctx: IntelContext) -> dict[str, Any]:
        raise self._fail("code_symbols")

    async def navigate(self, args: NavigateArgs, ctx: IntelContext) -> dict[str, Any]:
        raise self._fail("code_navigate")

    async def hierarchy(self, args: HierarchyArgs, ctx: IntelContext) -> dict[str, Any]:
        raise self._fail("code_hierarchy")

    async def hover(self, args: HoverArgs, ctx: IntelContext) -> dict[str, Any]:
        raise self._fail("code_hover")

    async def diagnostics(self, args: DiagnosticsArgs, ctx: IntelContext) -> dict[str, Any]:
        raise self._fail("code_diagnostics")

    async def inlay_hints(self, args: InlayHintsArgs, ctx: IntelContext) -> dict[str, Any]:
        raise self._fail("code_inlay_hints")


class Dispatcher:
    """Routes tool calls to a :class:`ReadTools` implementation.

    :param tools: the tool bodies.
    :param disabled: tool names turned off (``lsp_disabled_tools``); they are neither listed nor callable.
    """

    def __init__(self, tools: ReadTools, *, disabled: Iterable[str] = ()) -> None:
        self._tools = tools
        self.disabled = frozenset(disabled)
        unknown = sorted(self.disabled - {tool.name for tool in TOOLS})
        if unknown:
            raise ValueError(
                f"cannot disable unknown tools {unknown}; the tools are: {', '.join(t.name for t in TOOLS)}"
            )

    def tools(self) -> list[ToolSpec]:
        """The enabled tools, in catalogue order (B2.2: only what can be called is offered)."""
        return [tool for tool in TOOLS if tool.name not in self.disabled]

    def _find(self, op: str) -> ToolSpec:
        tool = tool_by_name(op)
        enabled = ", ".join(t.name for t in self.tools())
        if tool is None:
            raise UnknownTool(f"no tool {op!r}; the tools are: {enabled}")
        if tool.name in self.disabled:
            raise UnknownTool(
                f"{tool.name} is disabled by the lsp_disabled_tools setting; enabled: {enabled}"
            )
        return tool

    async def dispatch(self, op: str, payload: Any, ctx: IntelContext | None = None) -> dict[str, Any]:
        """Run one tool call; always returns a result dict with ``ok``, and a ``summary``."""
        ctx = ctx or IntelContext()
        name = op
        try:
            tool = self._find(op)
            name = tool.name
            if not isinstance(payload, Mapping):
                raise InvalidArguments(
                    tool.name, [f"the arguments must be an object, got {type(payload).__name__}"]
                )
            problems = validate(tool.input_schema, dict(payload))
            if problems:
                raise InvalidArguments(tool.name, problems)
            args = PARSERS[tool.name](payload)
            body = getattr(self._tools, tool.op)
            result: dict[str, Any] = dict(await body(args, ctx))
        except IntelError as error:
            result = error.to_result()
        result.setdefault("ok", True)
        # B2.6: autoApproveAll is for the host, never the model (read tools do not set it; mutations will).
        result.pop("autoApproveAll", None)
        result["summary"] = summarize(name, result)
        return result
