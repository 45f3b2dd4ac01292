"""Code action handles (B6.18-B6.24): opaque, short-lived, bound to a document URI and version.

``code_actions`` lists what the server offers for some lines; each entry gets an ``actionId`` that a
later call applies. The id is opaque (``secrets.token_urlsafe``: nothing to guess or to build from a
title), expires (:data:`DEFAULT_TTL`), and is bound to the URI and the document version the server made
the action against: a file changed since the listing makes the handle stale, and applying it is refused
with what to do (list again). A handle is not consumed by applying it (an apply that was declined or
parked can be retried), but the version check makes a second apply after a change impossible.

Applying by title (the reference's compatibility path) needs the *exact* title of exactly one action of
a fresh listing: a prefix or a near miss is refused with the titles there are, never guessed. A disabled
action (``disabled.reason``) is listed with its reason and never runs.

Pure: the registry keeps plain values and a clock; the tool asks the server.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from kandev_lsp.intel.errors import IntelError

__all__ = [
    "DEFAULT_TTL",
    "MAX_HANDLES",
    "ActionHandle",
    "ActionNotApplicable",
    "ActionRegistry",
    "action_entry",
    "by_title",
    "command_of",
    "edit_of",
    "is_command",
    "needs_resolve",
    "refuse_disabled",
]

#: Seconds an actionId stays valid.
DEFAULT_TTL: Final = 300.0
#: Handles kept at most (the oldest go first).
MAX_HANDLES: Final = 500


class ActionNotApplicable(IntelError):
    """An action cannot be applied: unknown or expired id, stale version, disabled, no unique title."""


def is_command(item: Mapping[str, Any]) -> bool:
    """Whether ``item`` is a bare LSP ``Command`` (``command`` is a string) rather than a ``CodeAction``."""
    return isinstance(item.get("command"), str)


def edit_of(item: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``WorkspaceEdit`` of a ``CodeAction``, or None."""
    edit = None if is_command(item) else item.get("edit")
    return edit if isinstance(edit, Mapping) and edit else None


def command_of(item: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``Command`` an item runs: the item itself for a bare command, a ``CodeAction``'s ``command``."""
    if is_command(item):
        return item
    command = item.get("command")
    return command if isinstance(command, Mapping) and isinstance(command.get("command"), str) else None


def needs_resolve(item: Mapping[str, Any]) -> bool:
    """A ``CodeAction`` with neither edit nor command (the server fills them in ``codeAction/resolve``)."""
    return not is_command(item) and edit_of(item) is None and command_of(item) is None


@dataclass(frozen=True, slots=True)
class ActionHandle:
    """One listed action: its id, where and against which version it was made, and the server's item."""

    action_id: str
    uri: str
    version: int | None
    item: Mapping[str, Any]
    #: Which server made it (``id()`` of the managed server): only that server resolves or runs it.
    server: int
    created: float
    resolved: bool = False

    @property
    def title(self) -> str:
        return str(self.item.get("title", ""))

    @property
    def kind(self) -> str | None:
        kind = None if is_command(self.item) else self.item.get("kind")
        return kind if isinstance(kind, str) else None

    @property
    def disabled(self) -> str | None:
        """The server's reason the action cannot run now, or None."""
        disabled = None if is_command(self.item) else self.item.get("disabled")
        if isinstance(disabled, Mapping):
            return str(disabled.get("reason") or "disabled by the server")
        return None


def action_entry(handle: ActionHandle) -> dict[str, Any]:
    """How a listing shows one action (B6.18): id, title, kind, preferred/disabled, edit/command flags,
    and the source version it is bound to."""
    item = handle.item
    entry: dict[str, Any] = {"actionId": handle.action_id, "title": handle.title}
    if handle.kind is not None:
        entry["kind"] = handle.kind
    entry["preferred"] = bool(not is_command(item) and item.get("isPreferred"))
    if handle.disabled is not None:
        entry["disabled"] = handle.disabled
    entry["hasEdit"] = edit_of(item) is not None
    entry["hasCommand"] = command_of(item) is not None
    if needs_resolve(item) and handle.disabled is None:
        entry["resolvedOnApply"] = True  # its edit/command is asked for when applied
    entry["sourceVersion"] = handle.version
    return entry


class ActionRegistry:
    """The live handles of one session (see the module docstring).

    :param clock: monotonic seconds (a parameter, so expiry is tested without waiting).
    """

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        max_handles: int = MAX_HANDLES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.max_handles = max_handles
        self._clock = clock
        self._handles: OrderedDict[str, ActionHandle] = OrderedDict()

    def register(
        self, uri: str, version: int | None, server: int, items: Sequence[Mapping[str, Any]]
    ) -> list[ActionHandle]:
        """A handle for each of ``items`` (the server's answer for ``uri`` at ``version``)."""
        self._expire()
        now = self._clock()
        handles = []
        for item in items:
            handle = ActionHandle(secrets.token_urlsafe(9), uri, version, dict(item), server, now)
            self._handles[handle.action_id] = handle
            handles.append(handle)
        while len(self._handles) > self.max_handles:
            self._handles.popitem(last=False)
        return handles

    def update(self, handle: ActionHandle, item: Mapping[str, Any]) -> ActionHandle:
        """Keep the resolved form of a handle's item (``codeAction/resolve``)."""
        updated = replace(handle, item=dict(item), resolved=True)
        if handle.action_id in self._handles:
            self._handles[handle.action_id] = updated
        return updated

    def get(self, action_id: str) -> ActionHandle | None:
        """The live handle with this id, or None (unknown or expired)."""
        self._expire()
        return self._handles.get(action_id)

    def take(self, action_id: str, uri: str, version: int | None, *, display: str) -> ActionHandle:
        """The handle ``action_id`` checked against the document it is applied to (B6.20).

        :param display: the file as the model names it (for messages).
        :raises ActionNotApplicable: unknown or expired, another file, a changed document, disabled.
        """
        handle = self.get(action_id)
        if handle is None:
            raise ActionNotApplicable(
                f"actionId {action_id!r} is unknown or expired (ids live {self.ttl:g} s): call code_actions "
                f"for {display} without apply to list the current actions and their ids",
                actionId=action_id,
            )
        if handle.uri != uri:
            raise ActionNotApplicable(
                f"actionId {action_id!r} was listed for another file, not {display}: apply it with that "
                "file's path, or list this file's actions",
                actionId=action_id,
            )
        if handle.version != version:
            raise ActionNotApplicable(
                f"{display} changed since action {handle.title!r} was listed (version {handle.version}, "
                f"now {version}): its edit would be made against old text. List the actions again",
                actionId=action_id,
                status="stale",
            )
        refuse_disabled(handle)
        return handle

    def _expire(self) -> None:
        cutoff = self._clock() - self.ttl
        while self._handles:
            oldest = next(iter(self._handles.values()))
            if oldest.created > cutoff:
                break
            self._handles.popitem(last=False)


def refuse_disabled(handle: ActionHandle) -> None:
    """:raises ActionNotApplicable: the action is disabled (B6.20: never run), with the server's reason."""
    if handle.disabled is not None:
        raise ActionNotApplicable(
            f"action {handle.title!r} is disabled: {handle.disabled}. Nothing was run",
            actionId=handle.action_id,
            disabled=handle.disabled,
        )


def by_title(handles: Sequence[ActionHandle], title: str) -> ActionHandle:
    """The one handle whose title is exactly ``title`` (B6.19: prefixes are rejected, not guessed).

    :raises ActionNotApplicable: no exact match (listing the titles, and which ones ``title`` starts),
        or several (listing their ids), or the match is disabled.
    """
    exact = [h for h in handles if h.title == title]
    if len(exact) == 1:
        refuse_disabled(exact[0])
        return exact[0]
    titles = [h.title for h in handles]
    if len(exact) > 1:
        raise ActionNotApplicable(
            f"{len(exact)} actions are titled {title!r}: apply one by its actionId",
            candidates=[action_entry(h) for h in exact],
        )
    prefixed = [t for t in titles if t.startswith(title) or t.lower().startswith(title.lower())]
    if prefixed:
        hint = f"; titles starting so: {', '.join(map(repr, prefixed[:5]))} (titles match exactly, not by prefix)"
    elif titles:
        hint = f"; the actions there: {', '.join(map(repr, titles[:10]))}"
    else:
        hint = "; the server offers no actions there"
    raise ActionNotApplicable(
        f"no action is titled exactly {title!r}{hint}. Apply by actionId from a listing, or by an exact title",
        titles=titles[:20],
    )
