"""``dispatch(op, payload, ctx) -> result`` (B2.3-B2.6): one entry point for every surface.

The MCP server, the ``kandev-lsp code`` command and Python callers all go through :class:`Dispatcher`:
it finds the tool (by op ``navigate``, runtime type ``lsp.navigate`` or tool name ``code_navigate``),
refuses disabled ones (``lsp_disabled_tools``, B9.1), validates the payload against the schema the client
was shown, parses it into typed arguments, runs the tool, and turns every
:class:`~kandev_lsp.intel.errors.IntelError` into the ``ok: false`` result of B2.5. Each result carries a
one-line ``summary`` (B9.4).

The tool bodies sit behind the :class:`ReadTools` protocol. :class:`UnwiredTools` is the implementation
until the language servers are wired in: each call fails with a clear :class:`NotWired` result.

The six mutating tools (B6.16-B6.29) sit behind a second protocol, :class:`MutationTools`; a dispatcher
built without one neither lists nor accepts them (B2.2: only what can be called is offered). Mutations
never accept ``firstMatch`` (B4.6): the call is refused with what to send instead, before any other
check. A mutating call carrying ``transactionId`` (in the payload, with ``approve``, or in
:attr:`IntelContext.transaction_id`) is the second step of a parked mutation and goes to
:meth:`MutationTools.approve` (B2.4, issue 11 "Approval, headless").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kandev_lsp.cancel import CancelToken
from kandev_lsp.intel.errors import IntelError, InvalidArguments, NotWired, UnknownTool
from kandev_lsp.intel.runtime.executor import DEFAULT_DEADLINE
from kandev_lsp.intel.surface.arguments import (
    PARSERS,
    ActionsArgs,
    DiagnosticsArgs,
    FormatArgs,
    HierarchyArgs,
    HoverArgs,
    InlayHintsArgs,
    InsertArgs,
    NavigateArgs,
    RenameArgs,
    ReplaceArgs,
    ReplaceBatchArgs,
    SymbolsArgs,
    approval_request,
    refuse_first_match,
    repeated_differences,
)
from kandev_lsp.intel.surface.rejections import rejected_receipt
from kandev_lsp.intel.surface.schemas import ALL_TOOLS, ToolSpec, tool_by_name
from kandev_lsp.intel.surface.summaries import summarize
from kandev_lsp.intel.surface.validation import compile_check, validate

__all__ = [
    "DispatchOutcome",
    "Dispatcher",
    "Elicit",
    "IntelContext",
    "MutationTools",
    "ReadTools",
    "UnwiredTools",
]

#: Asks the person behind the client to approve a mutation: ``(message, preview)`` -> True (approve),
#: False (decline), or None (the client cannot ask, or the person cancelled).
Elicit = Callable[[str, Mapping[str, Any]], Awaitable[bool | None]]


@dataclass(frozen=True, slots=True)
class IntelContext:
    """Per-call context (B2.4): approval state, a cancel signal, a transaction id, the call's deadline.

    ``elicit`` is set by a host that can ask its user (MCP elicitation): a mutation then asks with the
    preview instead of parking a transaction. ``auto_approve`` applies previewable edits at once; edits
    whose effect cannot be previewed (resource operations, commands) still need an explicit yes (B6.22).
    """

    auto_approve: bool = False
    cancel: CancelToken | None = None
    transaction_id: str | None = None
    deadline: float = DEFAULT_DEADLINE
    elicit: Elicit | None = None


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


class MutationTools(Protocol):
    """The six mutating tools' bodies (B6.16-B6.29) and the second step of a parked mutation.

    Each goes through the workspace's mutation coordinator (preview, approval, atomic apply, receipt).
    """

    async def rename(self, args: RenameArgs, ctx: IntelContext) -> dict[str, Any]: ...
    async def actions(self, args: ActionsArgs, ctx: IntelContext) -> dict[str, Any]: ...
    async def format(self, args: FormatArgs, ctx: IntelContext) -> dict[str, Any]: ...
    async def insert(self, args: InsertArgs, ctx: IntelContext) -> dict[str, Any]: ...
    async def replace(self, args: ReplaceArgs, ctx: IntelContext) -> dict[str, Any]: ...
    async def replace_batch(self, args: ReplaceBatchArgs, ctx: IntelContext) -> dict[str, Any]: ...
    async def approve(
        self, tool: str, transaction_id: str, approve: bool, ctx: IntelContext
    ) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class DispatchOutcome:
    """What a host gets from :meth:`Dispatcher.dispatch_for_host`: the model's result, and whether the
    user approved "all" (B2.6: the host keeps it for the session; the model never sees it)."""

    result: dict[str, Any]
    auto_approve_all: bool = False


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


#: Each tool's compiled schema check (the schemas are constants of the catalogue).
_CHECKS: dict[str, Callable[[Any], bool]] = {}

#: First-step arguments remembered (the transactions' own bound is 64 waiting at once).
_PREVIEWED_KEPT = 128


class Dispatcher:
    """Routes tool calls to a :class:`ReadTools` and, when given, a :class:`MutationTools` implementation.

    :param tools: the read tools' bodies.
    :param mutations: the mutating tools' bodies; without them the six mutating tools are not offered.
    :param disabled: tool names turned off (``lsp_disabled_tools``); they are neither listed nor callable.
    """

    def __init__(
        self, tools: ReadTools, *, mutations: MutationTools | None = None, disabled: Iterable[str] = ()
    ) -> None:
        self._tools = tools
        self._mutations = mutations
        self.disabled = frozenset(disabled)
        #: The arguments of the calls that parked a change, by transaction id (a second step may repeat
        #: them; they must match). Bounded like the transactions themselves.
        self._previewed: dict[str, tuple[str, Mapping[str, Any]]] = {}
        names = [tool.name for tool in ALL_TOOLS]
        unknown = sorted(self.disabled - set(names))
        if unknown:
            raise ValueError(f"cannot disable unknown tools {unknown}; the tools are: {', '.join(names)}")

    def _offered(self, tool: ToolSpec) -> bool:
        return tool.read_only or self._mutations is not None

    def tools(self) -> list[ToolSpec]:
        """The enabled tools, in catalogue order (B2.2: only what can be called is offered)."""
        return [tool for tool in ALL_TOOLS if self._offered(tool) and tool.name not in self.disabled]

    def _find(self, op: str) -> ToolSpec:
        tool = tool_by_name(op)
        if tool is not None and self._offered(tool) and tool.name not in self.disabled:
            return tool
        enabled = ", ".join(t.name for t in self.tools())
        if tool is None or not self._offered(tool):
            raise UnknownTool(f"no tool {op!r}; the tools are: {enabled}")
        raise UnknownTool(
            f"{tool.name} is disabled (the lsp_disabled_tools setting or --disable-tool); enabled: {enabled}"
        )

    async def dispatch(self, op: str, payload: Any, ctx: IntelContext | None = None) -> dict[str, Any]:
        """Run one tool call; always returns a result dict with ``ok``, and a ``summary``.

        ``autoApproveAll`` is stripped (B2.6); a host that keeps it uses :meth:`dispatch_for_host`.
        """
        return (await self.dispatch_for_host(op, payload, ctx)).result

    async def dispatch_for_host(
        self, op: str, payload: Any, ctx: IntelContext | None = None
    ) -> DispatchOutcome:
        """:meth:`dispatch`, also telling the host whether the user approved "all" (B2.5-B2.6)."""
        ctx = ctx or IntelContext()
        name = op
        try:
            tool = self._find(op)
            name = tool.name
            if type(payload) is not dict and not isinstance(payload, Mapping):
                raise InvalidArguments(
                    tool.name, [f"the arguments must be an object, got {type(payload).__name__}"]
                )
            if tool.read_only:
                result = await self._run(tool, self._tools, payload, ctx)
            else:
                assert self._mutations is not None  # _find offers mutations only when wired
                try:
                    result = await self._mutate(tool, self._mutations, payload, ctx)
                except IntelError as error:
                    # B7.5: a mutation refused before it started (arguments, firstMatch) still answers
                    # with a receipt saying nothing was changed.
                    result = {**error.to_result(), "receipt": rejected_receipt()}
        except IntelError as error:
            result = error.to_result()
        result.setdefault("ok", True)
        # B2.6: autoApproveAll is for the host, never the model.
        approve_all = result.pop("autoApproveAll", None) is True
        result["summary"] = summarize(name, result)
        return DispatchOutcome(result, approve_all)

    async def _run(
        self, tool: ToolSpec, body_of: object, payload: Mapping[str, Any], ctx: IntelContext
    ) -> dict[str, Any]:
        check = _CHECKS.get(tool.name)
        if check is None:
            check = _CHECKS[tool.name] = compile_check(tool.input_schema)
        arguments = payload if type(payload) is dict else dict(payload)
        if not check(arguments):  # the messages are built only for a payload that has problems
            problems = validate(tool.input_schema, arguments)
            if problems:
                raise InvalidArguments(tool.name, problems)
        args = PARSERS[tool.name](payload)
        body = getattr(body_of, tool.op)
        return dict(await body(args, ctx))

    async def _mutate(
        self, tool: ToolSpec, mutations: MutationTools, payload: Mapping[str, Any], ctx: IntelContext
    ) -> dict[str, Any]:
        refuse_first_match(tool.name, payload)  # B4.6, before the schema's generic "unknown argument"
        approval = approval_request(tool.name, payload, ctx.transaction_id)
        if approval is not None:
            previewed = self._previewed.get(approval.transaction_id)
            same_tool = previewed[1] if previewed is not None and previewed[0] == tool.name else None
            differ = repeated_differences(same_tool, approval.repeated)
            if differ:
                raise InvalidArguments(
                    tool.name,
                    [
                        f"{', '.join(differ)} differ{'s' if len(differ) == 1 else ''} from the call that "
                        f"previewed transaction {approval.transaction_id!r}"
                        + (
                            ""
                            if same_tool is not None
                            else f" (it was previewed by {previewed[0]})"
                            if previewed is not None
                            else " (no such call in this session)"
                        )
                        + ": the second step applies the previewed change as it was; send transactionId "
                        "and approve alone (or with the same arguments), or call without transactionId to "
                        "preview a changed edit"
                    ],
                )
            result = dict(await mutations.approve(tool.name, approval.transaction_id, approval.approve, ctx))
            if result.get("transactionId") != approval.transaction_id or not result.get("needsApproval"):
                self._previewed.pop(approval.transaction_id, None)  # used up (or unknown): forget it
            return result
        result = await self._run(tool, mutations, payload, ctx)
        transaction_id = result.get("transactionId")
        if result.get("needsApproval") and isinstance(transaction_id, str):
            if len(self._previewed) >= _PREVIEWED_KEPT:
                del self._previewed[next(iter(self._previewed))]
            self._previewed[transaction_id] = (tool.name, dict(payload))
        return result
