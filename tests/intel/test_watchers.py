"""Which created/removed files a server asked to hear (intel/watchers.py): its registered globs and kinds."""

from __future__ import annotations

from typing import Any

import pytest
from kandev_lsp.intel.runtime.watchers import CHANGED, CREATED, DELETED, wanted_events


def _uri(path: str) -> str:
    return "file://" + path


def _events(options: list[Any], created: list[str], removed: list[str] = []) -> list[tuple[str, int]]:  # noqa: B006
    return [(event["uri"], event["type"]) for event in wanted_events(options, created, removed, _uri)]


PYRIGHT_LIKE = [{"watchers": [{"globPattern": "**/*.{py,pyi}", "kind": 7}, {"globPattern": "**"}]}]


def test_created_and_removed_files_matching_a_watcher_are_events() -> None:
    options = [{"watchers": [{"globPattern": "**/*.{py,pyi}"}]}]
    assert _events(options, ["/w/src/b.py", "/w/src/a.pyi", "/w/notes.txt"], ["/w/old.py"]) == [
        ("file:///w/src/a.pyi", CREATED),
        ("file:///w/src/b.py", CREATED),
        ("file:///w/old.py", DELETED),
    ]


@pytest.mark.parametrize(
    ("watcher", "expected"),
    [
        ({"globPattern": "**/*.ts", "kind": 1}, [("file:///w/a.ts", CREATED)]),  # create only
        ({"globPattern": "**/*.ts", "kind": 4}, [("file:///w/b.ts", DELETED)]),  # delete only
        ({"globPattern": "**/*.ts", "kind": 2}, []),  # change only: neither
        (
            {"globPattern": {"baseUri": "file:///w", "pattern": "*.ts"}},
            [("file:///w/a.ts", CREATED), ("file:///w/b.ts", DELETED)],
        ),
        ({"globPattern": 3}, []),  # malformed: skipped
    ],
)
def test_a_watchers_kind_and_pattern_shape_decide(
    watcher: dict[str, Any], expected: list[tuple[str, int]]
) -> None:
    assert _events([{"watchers": [watcher]}], ["/w/a.ts"], ["/w/b.ts"]) == expected


def test_no_registration_no_events() -> None:
    assert _events([], ["/w/a.py"]) == []
    assert _events([None, {"watchers": "x"}], ["/w/a.py"]) == []


def test_written_files_are_change_events_where_a_watcher_asks_for_changes() -> None:
    """Issue 20 item 3: a file written on disk that no tool opened reaches the server as a change."""
    options = [{"watchers": [{"globPattern": "**/*.py", "kind": 2}, {"globPattern": "**/*.md", "kind": 1}]}]
    events = wanted_events(options, [], [], _uri, changed=["/w/b.py", "/w/a.py", "/w/notes.md"])
    assert [(event["uri"], event["type"]) for event in events] == [
        ("file:///w/a.py", CHANGED),
        ("file:///w/b.py", CHANGED),
    ]
