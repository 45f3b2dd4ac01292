"""Registrations, server-facing document versions and diagnostics: pure state, table- and property-tested."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kandev_lsp.lsp.diagnostics import DiagnosticsStore
from kandev_lsp.lsp.documents import DocumentNotOpen, DocumentVersions
from kandev_lsp.lsp.registrations import Registration, RegistrationStore


def test_register_unregister_and_snapshot() -> None:
    store = RegistrationStore()
    added = store.register(
        {
            "registrations": [
                {"id": "1", "method": "workspace/didChangeWatchedFiles", "registerOptions": {"watchers": []}},
                {"id": "2", "method": "workspace/didChangeConfiguration"},
                {"id": 3, "method": "bad id"},
                {"method": "no id"},
                "not an object",
            ]
        }
    )
    assert [reg.id for reg in added] == ["1", "2"]
    assert store.for_method("workspace/didChangeWatchedFiles") == [
        Registration("1", "workspace/didChangeWatchedFiles", {"watchers": []})
    ]
    store.register({"registrations": [{"id": "1", "method": "textDocument/didSave"}]})  # same id replaces
    assert [(reg.id, reg.method) for reg in store.snapshot()] == [
        ("2", "workspace/didChangeConfiguration"),
        ("1", "textDocument/didSave"),
    ]
    removed = store.unregister({"unregisterations": [{"id": "2", "method": "x"}, {"id": "9", "method": "y"}]})
    assert [reg.id for reg in removed] == ["2"]
    assert store.unregister({"unregistrations": [{"id": "1", "method": "x"}]})  # the other spelling
    assert len(store) == 0
    assert store.register(None) == [] and store.unregister({"unregisterations": "x"}) == []
    assert Registration("1", "m").to_json() == {"id": "1", "method": "m"}


def test_document_versions_increase_across_close_and_reopen() -> None:
    docs = DocumentVersions()
    assert docs.open("file:///a.py", "python") == 1
    assert docs.change("file:///a.py") == 2
    assert docs.close("file:///a.py") and not docs.close("file:///a.py")
    assert docs.current("file:///a.py") is None and docs.last_version("file:///a.py") == 2
    assert docs.open("file:///a.py", "python") == 3  # a second client starting again at 1 still gets 3
    with pytest.raises(DocumentNotOpen):
        docs.change("file:///b.py")
    docs.open("file:///b.py", "python")
    assert sorted(docs.close_all()) == ["file:///a.py", "file:///b.py"]
    assert docs.open_documents() == ()


operations = st.lists(
    st.tuples(st.sampled_from(["open", "change", "close", "close_all"]), st.sampled_from("abc")), max_size=60
)


@settings(max_examples=150, deadline=None)
@given(operations)
def test_versions_are_strictly_increasing_per_uri_for_the_life_of_the_server(
    ops: list[tuple[str, str]],
) -> None:
    docs = DocumentVersions()
    seen: dict[str, list[int]] = {}
    for op, uri in ops:
        version = None
        if op == "open":
            version = docs.open(uri, "x")
        elif op == "change" and docs.is_open(uri):
            version = docs.change(uri)
        elif op == "close":
            docs.close(uri)
        elif op == "close_all":
            docs.close_all()
        if version is not None:
            seen.setdefault(uri, []).append(version)
            assert docs.current(uri) == version
    for versions in seen.values():
        assert all(a < b for a, b in itertools.pairwise(versions))


def publish(uri: str, version: Any = None, count: int = 1) -> dict[str, Any]:
    params: dict[str, Any] = {"uri": uri, "diagnostics": [{"message": f"m{n}"} for n in range(count)]}
    if version is not None:
        params["version"] = version
    return params


def test_diagnostics_keep_version_and_generation_and_drop_stale_publications() -> None:
    store = DiagnosticsStore(generation=1)
    entry = store.publish(publish("file:///a", 3, 2), 1.0)
    assert entry is not None and (entry.version, entry.generation, len(entry.diagnostics)) == (3, 1, 2)
    assert entry.matches(3) and not entry.matches(4)
    assert store.publish(publish("file:///a", 2), 2.0) is None  # older than what is stored
    assert store.publish(publish("file:///a", 4, 0), 3.0) is not None
    assert store.publish(publish("file:///b"), 3.0) is not None  # unversioned
    b = store.get("file:///b")
    assert b is not None and b.version is None and not b.matches(None)
    assert store.publish(publish("file:///a", 9), 4.0, generation=0) is None  # a replaced server's
    assert store.publish({"uri": 1, "diagnostics": []}, 4.0) is None
    assert store.publish({"uri": "file:///c", "diagnostics": "x"}, 4.0) is None
    assert store.publish(publish("file:///c", True), 4.0) is not None  # a boolean is no version
    store.clear("file:///a")
    assert set(store.snapshot()) == {"file:///b", "file:///c"}
    store.reset(2)
    assert len(store) == 0 and store.generation == 2
