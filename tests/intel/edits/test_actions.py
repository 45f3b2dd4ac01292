"""Code action handles (B6.18-B6.20, B6.24): opaque, short-lived, bound to URI and version; apply by id or
an exact unique title; disabled actions never run."""

from __future__ import annotations

from typing import Any

import pytest
from kandev_lsp.intel.edits.actions import (
    ActionNotApplicable,
    ActionRegistry,
    action_entry,
    by_title,
    command_of,
    edit_of,
    needs_resolve,
)

URI = "file:///w/a.ts"
EDIT = {"changes": {URI: [{"range": {}, "newText": "x"}]}}
ORGANIZE = {"title": "Organize Imports", "kind": "source.organizeImports.ts", "edit": EDIT}
FIX = {"title": "Add missing import", "kind": "quickfix", "isPreferred": True, "edit": EDIT}
REFACTOR = {
    "title": "Convert named imports to namespace import",
    "kind": "refactor.rewrite.import.namespace",
    "command": {"title": "t", "command": "_typescript.applyRefactoring", "arguments": [1]},
}
DISABLED = {
    "title": "Convert to default export",
    "kind": "refactor",
    "disabled": {"reason": "no export here"},
}
LAZY = {"title": "Extract function", "kind": "refactor.extract", "data": {"id": 7}}
BARE_COMMAND = {"title": "Run fix", "command": "fix.run", "arguments": []}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def registry(clock: Clock | None = None, **kw: Any) -> ActionRegistry:
    return ActionRegistry(clock=clock or Clock(), **kw)


def test_a_listing_shows_ids_titles_kinds_flags_and_the_source_version() -> None:
    handles = registry().register(URI, 7, 1, [ORGANIZE, FIX, REFACTOR, DISABLED, LAZY, BARE_COMMAND])
    entries = [action_entry(h) for h in handles]
    assert entries[0] == {
        "actionId": handles[0].action_id,
        "title": "Organize Imports",
        "kind": "source.organizeImports.ts",
        "preferred": False,
        "hasEdit": True,
        "hasCommand": False,
        "sourceVersion": 7,
    }
    assert entries[1]["preferred"] is True
    assert entries[2]["hasCommand"] is True and entries[2]["hasEdit"] is False
    assert entries[3]["disabled"] == "no export here"
    assert entries[4]["resolvedOnApply"] is True and not entries[4]["hasEdit"]
    assert entries[5] == {
        "actionId": handles[5].action_id,
        "title": "Run fix",
        "preferred": False,
        "hasEdit": False,
        "hasCommand": True,
        "sourceVersion": 7,
    }
    ids = [h.action_id for h in handles]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 12 and "Organize" not in i for i in ids)  # opaque, not built from the title


def test_edit_command_and_resolve_shapes() -> None:
    assert edit_of(ORGANIZE) == EDIT and command_of(ORGANIZE) is None
    assert command_of(REFACTOR) == REFACTOR["command"] and edit_of(REFACTOR) is None
    assert command_of(BARE_COMMAND) == BARE_COMMAND and edit_of(BARE_COMMAND) is None
    assert needs_resolve(LAZY) and not needs_resolve(ORGANIZE) and not needs_resolve(BARE_COMMAND)
    assert edit_of({"title": "empty", "edit": {}}) is None


def test_take_checks_file_version_expiry_and_disabled() -> None:
    clock = Clock()
    actions = registry(clock, ttl=60)
    organize, disabled = actions.register(URI, 3, 1, [ORGANIZE, DISABLED])
    assert actions.take(organize.action_id, URI, 3, display="a.ts") == organize
    with pytest.raises(ActionNotApplicable, match=r"a.ts changed since action 'Organize Imports' was listed"):
        actions.take(organize.action_id, URI, 4, display="a.ts")
    with pytest.raises(ActionNotApplicable, match=r"was listed for another file, not b.ts"):
        actions.take(organize.action_id, "file:///w/b.ts", 3, display="b.ts")
    with pytest.raises(ActionNotApplicable, match=r"is disabled: no export here. Nothing was run"):
        actions.take(disabled.action_id, URI, 3, display="a.ts")
    clock.now += 61
    with pytest.raises(ActionNotApplicable, match="unknown or expired"):
        actions.take(organize.action_id, URI, 3, display="a.ts")
    with pytest.raises(ActionNotApplicable, match="unknown or expired"):
        actions.take("made-up-id", URI, 3, display="a.ts")


def test_the_registry_is_bounded_and_keeps_resolved_items() -> None:
    actions = registry(max_handles=3)
    first = actions.register(URI, 1, 1, [ORGANIZE, FIX])
    later = actions.register(URI, 1, 1, [REFACTOR, LAZY])
    assert actions.get(first[0].action_id) is None  # the oldest went first
    assert actions.get(first[1].action_id) is not None
    lazy = later[1]
    resolved = actions.update(lazy, {**LAZY, "edit": EDIT})
    assert resolved.resolved and actions.get(lazy.action_id) == resolved
    assert action_entry(resolved)["hasEdit"] is True and "resolvedOnApply" not in action_entry(resolved)


def test_titles_match_exactly_and_uniquely_never_by_prefix() -> None:
    handles = registry().register(URI, 1, 1, [ORGANIZE, FIX, REFACTOR, DISABLED])
    assert by_title(handles, "Add missing import") is handles[1]
    with pytest.raises(ActionNotApplicable, match=r"titles starting so: 'Organize Imports'.*not by prefix"):
        by_title(handles, "Organize")
    with pytest.raises(ActionNotApplicable, match="no action is titled exactly 'organize imports'"):
        by_title(handles, "organize imports")  # case matters too
    with pytest.raises(ActionNotApplicable, match="the actions there: 'Organize Imports'"):
        by_title(handles, "Sort lines")
    with pytest.raises(ActionNotApplicable, match="is disabled"):
        by_title(handles, "Convert to default export")
    twice = registry().register(URI, 1, 1, [FIX, {**FIX, "kind": "quickfix.other"}])
    with pytest.raises(ActionNotApplicable, match="2 actions are titled 'Add missing import'") as error:
        by_title(twice, "Add missing import")
    assert [c["actionId"] for c in error.value.fields["candidates"]] == [h.action_id for h in twice]
    with pytest.raises(ActionNotApplicable, match="the server offers no actions there"):
        by_title([], "Anything")
