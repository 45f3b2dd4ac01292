"""Locations for the model (B5.1-B5.5): Location and LocationLink, paths, snippets, limits, size budgets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kandev_lsp.intel.files.text import Document, PositionEncoding, TextCache
from kandev_lsp.intel.files.workspace import Workspace, WorkspaceFile
from kandev_lsp.intel.reading.output import (
    BODY_MAX_LINES,
    DEFAULT_MAX_CHARS,
    Located,
    LocationOptions,
    build_locations,
    locate,
)

UTF16 = PositionEncoding.UTF16


def _range(line: int, start: int, end_line: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": end_line, "character": end}}


def _loc(uri: str, line: int, start: int, end: int | None = None) -> dict[str, Any]:
    return {"uri": uri, "range": _range(line, start, line, start + 3 if end is None else end)}


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.ts").write_text(
        "import { fetchModels } from './b';\n"
        "\n"
        "export function main() {\n"
        "  const m = fetchModels();\n"
        "  return m;\n"
        "}\n"
    )
    (root / "src" / "b.ts").write_text(
        "export function fetchModels() {\n" + "".join(f"  step({n});\n" for n in range(300)) + "}\n"
    )
    (root / "min.js").write_text("var a=1;" * 5000 + "fetchModels();" + "var b=2;" * 5000 + "\n")
    return Workspace([root])


def _uri(workspace: Workspace, relative: str) -> str:
    return workspace.resolve(relative).uri


def _build(workspace: Workspace, answer: Any, **options: Any) -> dict[str, Any]:
    max_chars = options.pop("max_chars", DEFAULT_MAX_CHARS)
    opts = LocationOptions(max_chars=max_chars, **options)
    return build_locations(locate(answer, workspace.uri_lookup()), TextCache(), UTF16, opts)


def _groups(located: Located) -> dict[str, dict[Any, Any]]:
    return {path: spans for path, (_, spans) in located.by_path.items()}


def test_locate_accepts_every_shape(workspace: Workspace) -> None:
    a, b = _uri(workspace, "src/a.ts"), _uri(workspace, "src/b.ts")
    location = {"uri": a, "range": _range(1, 2, 1, 5)}
    link = {
        "originSelectionRange": _range(9, 0, 9, 3),
        "targetUri": b,
        "targetRange": _range(0, 0, 4, 1),
        "targetSelectionRange": _range(0, 16, 0, 27),
    }
    lookup = workspace.uri_lookup()
    assert _groups(locate(None, lookup)) == {}
    assert _groups(locate(location, lookup)) == {"src/a.ts": {(1, 2, 1, 5): None}}
    mixed = locate([location, link, {"uri": 3}, "x", {"targetUri": b}, location], lookup)
    assert _groups(mixed) == {
        "src/a.ts": {(1, 2, 1, 5): None},
        "src/b.ts": {(0, 16, 0, 27): _range(0, 0, 4, 1)},
    }
    assert [file.display for file in mixed.files] == ["src/a.ts", "src/b.ts"]
    without_selection = {"targetUri": b, "targetRange": _range(0, 0, 4, 1)}
    assert _groups(locate([without_selection], lookup)) == {"src/b.ts": {(0, 0, 4, 1): _range(0, 0, 4, 1)}}


@pytest.mark.parametrize(
    "span",
    [
        None,
        [],
        "0:0",
        {"start": {"line": 0, "character": 0}},
        {"start": {"line": 0, "character": 0}, "end": []},
        {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": 0}},
        {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": -5}},
        {"start": {"line": 0.0, "character": 0}, "end": {"line": 0, "character": 0}},
        {"start": {"line": "0", "character": 0}, "end": {"line": 0, "character": 0}},
        {"start": {"line": 0, "character": None}, "end": {"line": 0, "character": 0}},
        {"start": {"line": {}, "character": {}}, "end": {"line": {}, "character": {}}},
        {"start": {"character": 0}, "end": {"line": 0, "character": 0}},
    ],
)
def test_a_malformed_range_drops_its_location_and_keeps_the_rest(workspace: Workspace, span: Any) -> None:
    good = {"uri": _uri(workspace, "src/a.ts"), "range": _range(1, 2, 1, 5)}
    located = locate([{"uri": _uri(workspace, "src/b.ts"), "range": span}, good], workspace.uri_lookup())
    assert _groups(located) == {"src/a.ts": {(1, 2, 1, 5): None}}


def test_references_grouped_by_file_with_relative_paths_and_snippets(workspace: Workspace) -> None:
    a, b = _uri(workspace, "src/a.ts"), _uri(workspace, "src/b.ts")
    answer = [_loc(a, 3, 12, 23), _loc(b, 0, 16, 27), _loc(a, 0, 9, 20), _loc(a, 3, 12, 23)]  # one duplicate
    result = _build(workspace, answer)
    assert result == {
        "files": [
            {
                "path": "src/a.ts",
                "locations": [
                    {
                        "line": 1,
                        "column": 10,
                        "endColumn": 21,
                        "snippet": "import { fetchModels } from './b';",
                    },
                    {"line": 4, "column": 13, "endColumn": 24, "snippet": "const m = fetchModels();"},
                ],
            },
            {
                "path": "src/b.ts",
                "locations": [
                    {"line": 1, "column": 17, "endColumn": 28, "snippet": "export function fetchModels() {"}
                ],
            },
        ],
        "totalFound": 3,
        "shown": 3,
        "truncated": False,
    }


def test_context_widens_the_snippet_to_a_window(workspace: Workspace) -> None:
    a = _uri(workspace, "src/a.ts")
    location = _build(workspace, [_loc(a, 3, 12, 23)], context=1)["files"][0]["locations"][0]
    assert location["snippet"] == "export function main() {\n  const m = fetchModels();\n  return m;"
    assert location["snippetStartLine"] == 3
    first = _build(workspace, [_loc(a, 0, 9, 20)], context=3)["files"][0]["locations"][0]
    assert first["snippet"].splitlines()[0] == "import { fetchModels } from './b';"
    assert "snippetStartLine" not in first  # the window starts at the location's own line


def test_limit_truncates_and_keeps_the_total(workspace: Workspace) -> None:
    b = _uri(workspace, "src/b.ts")
    answer = [_loc(b, line, 2, 6) for line in range(1, 301)]
    default = _build(workspace, answer)
    assert (default["shown"], default["totalFound"], default["truncated"]) == (100, 300, True)
    assert default["truncatedBy"] == "limit"
    assert sum(len(group["locations"]) for group in default["files"]) == 100
    assert _build(workspace, answer, limit=500)["shown"] == 300
    with pytest.raises(ValueError, match="limit must be 1-500"):
        LocationOptions(limit=501)
    with pytest.raises(ValueError, match="context must be 0-3"):
        LocationOptions(context=4)


def test_the_size_budget_truncates_before_the_count_does(workspace: Workspace) -> None:
    b = _uri(workspace, "src/b.ts")
    answer = [_loc(b, line, 2, 6) for line in range(1, 301)]
    result = _build(workspace, answer, limit=500, context=3, max_chars=4000)
    assert result["truncated"] is True and result["truncatedBy"] == "size"
    assert 0 < result["shown"] < 300 and result["totalFound"] == 300
    assert len(json.dumps(result)) < 4000


def test_a_popular_symbol_stays_well_under_what_clients_accept(workspace: Workspace) -> None:
    """The widest default-budget answer (500 locations, context 3, bodies) stays under 128k characters."""
    b, minified = _uri(workspace, "src/b.ts"), _uri(workspace, "min.js")
    answer = [_loc(b, line, 2, 6) for line in range(0, 301)] + [_loc(minified, 0, 40000, 40011)] * 3
    result = _build(workspace, answer, limit=500, context=3, include_body=True)
    assert len(json.dumps(result)) <= DEFAULT_MAX_CHARS < 128_000


def test_long_lines_are_cut_around_the_match(workspace: Workspace) -> None:
    minified = _uri(workspace, "min.js")
    location = _build(workspace, [_loc(minified, 0, 40000, 40011)])["files"][0]["locations"][0]
    assert "fetchModels" in location["snippet"]
    assert location["snippet"].startswith("…") and location["snippet"].endswith("…")
    assert len(location["snippet"]) <= 242


def test_include_body_from_a_location_link_capped_at_200_lines(workspace: Workspace) -> None:
    b = _uri(workspace, "src/b.ts")
    link = {"targetUri": b, "targetRange": _range(0, 0, 301, 1), "targetSelectionRange": _range(0, 16, 0, 27)}
    location = _build(workspace, [link], include_body=True)["files"][0]["locations"][0]
    assert (location["line"], location["column"]) == (1, 17)
    assert location["body"].splitlines()[0] == "export function fetchModels() {"
    assert len(location["body"].splitlines()) == BODY_MAX_LINES
    assert (location["bodyStartLine"], location["bodyEndLine"]) == (1, 200)
    assert location["bodyTruncated"] is True and location["bodyLines"] == 302
    without = _build(workspace, [link])["files"][0]["locations"][0]
    assert "body" not in without


def test_include_body_asks_the_caller_for_a_plain_location(workspace: Workspace) -> None:
    a = _uri(workspace, "src/a.ts")
    asked: list[tuple[str, dict[str, Any]]] = []

    def finder(file: WorkspaceFile, rng: dict[str, Any]) -> dict[str, Any] | None:
        asked.append((file.display, rng))
        return _range(2, 0, 5, 1)

    located = locate([_loc(a, 2, 16, 20)], workspace.uri_lookup())
    result = build_locations(
        located, TextCache(), UTF16, LocationOptions(include_body=True), body_range=finder
    )
    location = result["files"][0]["locations"][0]
    assert location["body"] == "export function main() {\n  const m = fetchModels();\n  return m;\n}"
    assert asked == [("src/a.ts", _range(2, 16, 2, 20))]


def test_a_body_over_the_budget_is_dropped_before_the_location(workspace: Workspace) -> None:
    b = _uri(workspace, "src/b.ts")
    link = {"targetUri": b, "targetRange": _range(0, 0, 301, 1), "targetSelectionRange": _range(0, 16, 0, 27)}
    result = _build(workspace, [link], include_body=True, max_chars=1000)
    location = result["files"][0]["locations"][0]
    assert "body" not in location and location["bodyOmitted"] == "result size budget"
    assert result["truncated"] is False


def test_a_dropped_body_does_not_end_the_list(tmp_path: Path) -> None:
    """A body over the budget goes, its location stays, and later files that fit still come."""
    (tmp_path / "a.py").write_text("def big():\n" + "".join(f"    step({n})\n" for n in range(150)))
    (tmp_path / "b.py").write_text("big()\n")
    workspace = Workspace([tmp_path])
    link = {
        "targetUri": workspace.resolve("a.py").uri,
        "targetRange": _range(0, 0, 150, 0),
        "targetSelectionRange": _range(0, 4, 0, 7),
    }
    answer = [link, _loc(workspace.resolve("b.py").uri, 0, 0, 3)]
    result = _build(workspace, answer, include_body=True, max_chars=1000)
    assert [group["path"] for group in result["files"]] == ["a.py", "b.py"]
    assert result["files"][0]["locations"][0]["bodyOmitted"] == "result size budget"
    assert result["files"][1]["locations"] == [{"line": 1, "column": 1, "endColumn": 4, "snippet": "big()"}]
    assert (result["shown"], result["truncated"]) == (2, False)


def test_uris_outside_the_workspace_are_omitted_and_counted(workspace: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "site-packages" / "lib.py"
    outside.parent.mkdir()
    outside.write_text("SECRET = 1\n")
    (Path(workspace.roots[0].path) / "escape.py").symlink_to(outside)
    answer = [
        _loc(outside.as_uri(), 0, 0),
        _loc((Path(workspace.roots[0].path) / "escape.py").as_uri(), 0, 0),
        _loc("untitled:Untitled-1", 0, 0),
        _loc(_uri(workspace, "src/a.ts"), 0, 9),
    ]
    result = _build(workspace, answer)
    assert result["omitted"] == {"outsideWorkspace": 2, "nonFileUri": 1}
    assert [group["path"] for group in result["files"]] == ["src/a.ts"]
    assert "SECRET" not in json.dumps(result) and "site-packages" not in json.dumps(result)


def test_multi_root_paths_are_root_qualified(tmp_path: Path) -> None:
    for name in ("front", "back"):
        (tmp_path / name / "src").mkdir(parents=True)
        (tmp_path / name / "src" / "index.ts").write_text(f"export const {name} = 1;\n")
    workspace = Workspace([tmp_path / "front", tmp_path / "back"])
    answer = [_loc((tmp_path / n / "src" / "index.ts").as_uri(), 0, 13) for n in ("front", "back")]
    result = _build(workspace, answer)
    assert [group["path"] for group in result["files"]] == ["back/src/index.ts", "front/src/index.ts"]


def test_unreadable_files_keep_their_positions(workspace: Workspace) -> None:
    root = Path(workspace.roots[0].path)
    (root / "blob.bin").write_bytes(b"\x00\x01binary")
    result = _build(workspace, [_loc((root / "blob.bin").as_uri(), 4, 2)])
    assert result["files"][0]["locations"] == [{"line": 5, "column": 3}]


def test_columns_are_characters_not_utf16_units(tmp_path: Path) -> None:
    (tmp_path / "e.py").write_text('s = "😀"; name = 1\n')
    workspace = Workspace([tmp_path])
    answer = [_loc(workspace.resolve("e.py").uri, 0, 10, 14)]  # UTF-16 units: the emoji counts two
    location = _build(workspace, answer)["files"][0]["locations"][0]
    assert (location["column"], location["endColumn"]) == (10, 14)
    doc = TextCache().document(workspace.resolve("e.py"))
    assert isinstance(doc, Document) and doc.line(0)[location["column"] - 1 :].startswith("name")


def test_text_cache_reads_each_file_once_and_prefers_the_overlay(workspace: Workspace) -> None:
    file = workspace.resolve("src/a.ts")
    cache = TextCache({file.absolute: Document(file, "open buffer\n", version=3)})
    document = cache.document(file)
    assert document is not None and document.line(0) == "open buffer" and document.version == 3
    other = workspace.resolve("src/b.ts")
    first = cache.document(other)
    Path(other.absolute).write_text("changed\n")
    assert cache.document(other) is first  # one operation sees one text
    assert TextCache().document(other).line(0) == "changed"  # type: ignore[union-attr]
    assert TextCache(max_bytes=4).document(other) is None


@pytest.mark.parametrize(
    "entry",
    [
        {},
        {"line": 1},
        {"line": 12, "column": 3, "endColumn": 9, "snippet": 'say "hi" \\ é 😀\tx\u2028', "flag": True},
        {"nothing": None, "ratio": 1.5, "no": False, "list": [1, {"a": "b"}], "body": "l1\nl2"},
    ],
)
def test_the_size_of_an_entry_is_its_json_length(entry: dict[str, Any]) -> None:
    from kandev_lsp.intel.reading.output import _size

    assert _size(entry) == len(json.dumps(entry, ensure_ascii=False)) + 2


def _budgeted(full: dict[str, Any], max_chars: int, limit: int) -> dict[str, Any]:
    """What the size budget keeps of an unbudgeted result, written plainly: 120 characters for the
    envelope, each entry at its JSON size plus its separator, each new group at its path plus 40, a body
    dropped before its location."""
    from kandev_lsp.intel.reading.output import _size

    used, files, shown = 120, [], 0
    by = "limit"
    for group in full["files"]:
        kept: list[dict[str, Any]] = []
        for entry in group["locations"]:
            grouping = 0 if kept else len(group["path"]) + 40
            if used + _size(entry) + grouping > max_chars and "body" in entry:
                entry = {k: v for k, v in entry.items() if not k.startswith("body")}
                entry["bodyOmitted"] = "result size budget"
            if used + _size(entry) + grouping > max_chars:
                by = "size"
                break
            used += _size(entry) + grouping
            kept.append(entry)
            shown += 1
        if kept:
            files.append({"path": group["path"], "locations": kept})
        if by == "size":
            break
    out = {
        "files": files,
        "totalFound": full["totalFound"],
        "shown": shown,
        "truncated": shown < full["totalFound"],
    }
    if shown < full["totalFound"]:
        out["truncatedBy"] = by
        out["totalFiles"] = full.get("totalFiles", len(full["files"]))  # every file, shown or not (item 10)
    return out


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.text(alphabet=st.sampled_from('ab "\\\té😀\u2028\x01'), max_size=300), min_size=1, max_size=6
    ),
    spans=st.lists(
        st.tuples(st.integers(0, 7), st.integers(0, 320), st.integers(0, 7), st.integers(0, 320)),
        min_size=1,
        max_size=40,
    ),
    context=st.integers(0, 3),
    include_body=st.booleans(),
    max_chars=st.integers(150, 6000),
    limit=st.integers(1, 30),
)
def test_the_budget_keeps_what_entry_by_entry_accounting_keeps(
    lines: list[str],
    spans: list[tuple[int, int, int, int]],
    context: int,
    include_body: bool,
    max_chars: int,
    limit: int,
) -> None:
    """Whether the entries fit is decided from their JSON at once when they clearly do; the result must be
    what counting them one by one keeps (and never over the budget), for any text, ranges and budget."""
    workspace = Workspace([Path(__file__).parent])  # files named, their texts given: no disk per example
    files = [workspace.resolve(name) for name in (Path(__file__).name, "conftest.py", "intel_projects.py")]
    text = "\n".join(lines)
    answer = [
        {
            "uri": files[n % 3].uri,
            "range": {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}},
        }
        for n, (sl, sc, el, ec) in enumerate(spans)
    ]

    def build(budget: int) -> dict[str, Any]:
        texts = TextCache({file.absolute: Document(file, text) for file in files})
        options = LocationOptions(limit=limit, context=context, include_body=include_body, max_chars=budget)
        return build_locations(locate(answer, workspace.uri_lookup()), texts, UTF16, options)

    full, budgeted = build(10**9), build(max_chars)
    assert budgeted == _budgeted(full, max_chars, limit)
    assert len(json.dumps(budgeted["files"], ensure_ascii=False)) + 120 <= max_chars or not budgeted["files"]


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.text(alphabet=st.sampled_from('ab "\\\té😀\u2028\x01'), max_size=300), min_size=1, max_size=6
    ),
    start=st.tuples(st.integers(0, 7), st.integers(0, 320)),
    end=st.tuples(st.integers(0, 7), st.integers(0, 320)),
    context=st.integers(0, 3),
)
def test_a_location_entry_is_sized_as_its_json(
    lines: list[str], start: tuple[int, int], end: tuple[int, int], context: int
) -> None:
    """``_location`` sizes its entry as it builds it; the size must be the entry's JSON length (+ 2 for the
    separator), or the result's size budget would drift."""
    from kandev_lsp.intel.reading.output import _location

    root = Workspace([Path(__file__).parent])
    file = root.resolve(Path(__file__).name)
    document = Document(file, "\n".join(lines))
    entry, size = _location(
        file, (*start, *end), None, document, UTF16, LocationOptions(context=context), None
    )
    assert size == len(json.dumps(entry, ensure_ascii=False)) + 2


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.text(alphabet=st.sampled_from(' ab"\\\t\x01'), max_size=300), min_size=1, max_size=6),
    spans=st.lists(
        st.tuples(st.integers(0, 7), st.integers(0, 320), st.integers(0, 7), st.integers(0, 320)), max_size=8
    ),
)
def test_an_ascii_file_s_plain_entries_are_what_each_location_gives(
    lines: list[str], spans: list[tuple[int, int, int, int]]
) -> None:
    """The one-loop entries of an ASCII file without context or bodies equal :func:`_location`'s, sizes
    included (those are checked against JSON above)."""
    from kandev_lsp.intel.reading.output import _location, _plain_entries

    root = Workspace([Path(__file__).parent])
    file = root.resolve(Path(__file__).name)
    document = Document(file, "\n".join(lines))
    keys = sorted(set(spans))
    expected = [_location(file, key, None, document, UTF16, LocationOptions(), None) for key in keys]
    entries, sizes = _plain_entries(document.lines, keys)
    assert list(zip(entries, sizes, strict=True)) == expected
