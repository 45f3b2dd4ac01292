"""Workspace roots, model-facing paths and path safety (B8.6, B8.11), on real files and real symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kandev_lsp.intel.errors import AmbiguousPath, IntelError, PathNotFound, PathOutsideWorkspace
from kandev_lsp.intel.files.workspace import Workspace


def _file(path: Path, text: str = "x = 1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def single(tmp_path: Path) -> Workspace:
    root = tmp_path / "proj"
    _file(root / "src" / "app.py")
    _file(root / "README.md")
    return Workspace([root])


@pytest.fixture
def multi(tmp_path: Path) -> Workspace:
    for name in ("front", "back"):
        _file(tmp_path / name / "src" / "index.ts")
    _file(tmp_path / "front" / "only_front.ts")
    return Workspace([tmp_path / "front", tmp_path / "back"])


def test_single_root_paths_are_workspace_relative(single: Workspace) -> None:
    found = single.resolve("src/app.py")
    assert found.display == "src/app.py"
    assert found.relative == "src/app.py"
    assert found.root.id == "proj"
    assert found.uri.startswith("file:///") and found.uri.endswith("/proj/src/app.py")
    assert single.resolve(found.absolute).display == "src/app.py"
    assert single.resolve(found.uri).display == "src/app.py"
    assert single.resolve("./src/../src/app.py").display == "src/app.py"


def test_root_ids_default_to_base_names_made_unique(tmp_path: Path) -> None:
    (tmp_path / "a" / "app").mkdir(parents=True)
    (tmp_path / "b" / "app").mkdir(parents=True)
    (tmp_path / "lib").mkdir()
    workspace = Workspace([tmp_path / "a" / "app", tmp_path / "b" / "app", tmp_path / "lib"])
    assert [root.id for root in workspace.roots] == ["app", "app-2", "lib"]
    assert workspace.multi_root


@pytest.mark.parametrize(
    ("ids", "message"),
    [(["x"], "1 root ids given for 2 roots"), (["x", "x"], "unique"), (["x", "a/b"], "path segment")],
)
def test_explicit_root_ids_are_checked(tmp_path: Path, ids: list[str], message: str) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(ValueError, match=message):
        Workspace([tmp_path / "a", tmp_path / "b"], ids=ids)


def test_a_root_must_be_an_absolute_existing_directory_given_once(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"not absolute"):
        Workspace(["relative/dir"])
    with pytest.raises(ValueError, match=r"not a directory"):
        Workspace([tmp_path / "missing"])
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    with pytest.raises(ValueError, match=r"given twice"):
        Workspace([tmp_path / "real", tmp_path / "alias"])
    with pytest.raises(ValueError, match=r"at least one root"):
        Workspace([])


def test_duplicate_relative_path_in_two_roots_is_ambiguous_until_a_root_is_named(multi: Workspace) -> None:
    with pytest.raises(AmbiguousPath) as caught:
        multi.resolve("src/index.ts")
    result = caught.value.to_result()
    assert result["ok"] is False and result["ambiguous"] is True
    assert result["candidates"] == [
        {"rootId": "front", "path": "front/src/index.ts"},
        {"rootId": "back", "path": "back/src/index.ts"},
    ]
    assert "rootId" in result["error"]
    front = multi.resolve("src/index.ts", "front")
    back = multi.resolve("src/index.ts", "back")
    assert (front.display, back.display) == ("front/src/index.ts", "back/src/index.ts")
    assert front.absolute != back.absolute
    # The root-qualified form the tools hand out resolves back to the same file.
    assert multi.resolve("back/src/index.ts").absolute == back.absolute
    assert multi.resolve("only_front.ts").display == "front/only_front.ts"


def test_unknown_root_id_lists_the_roots(multi: Workspace) -> None:
    with pytest.raises(PathNotFound, match=r"unknown rootId 'side'.*front, back"):
        multi.resolve("src/index.ts", "side")


def test_missing_files_say_where_they_were_looked_for(single: Workspace, multi: Workspace) -> None:
    with pytest.raises(PathNotFound, match=r"no file 'src/nope.py'"):
        single.resolve("src/nope.py")
    with pytest.raises(PathNotFound, match=r"in any workspace root"):
        multi.resolve("src/nope.ts")
    assert single.resolve("src/new.py", must_exist=False).display == "src/new.py"
    with pytest.raises(PathNotFound, match=r"empty"):
        single.resolve("")


@pytest.mark.parametrize(
    "path",
    ["../outside.py", "src/../../outside.py", "..", "..\\outside.py", "/etc/passwd", "file:///etc/passwd"],
)
def test_traversal_and_absolute_paths_outside_fail_closed(single: Workspace, path: str) -> None:
    with pytest.raises(PathOutsideWorkspace):
        single.resolve(path)


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("https://example.com/a.py", "scheme 'https'"),
        ("untitled:Untitled-1", "scheme 'untitled'"),
        ("jdt://contents/rt.jar/java.lang/String.class", "scheme 'jdt'"),
        ("file://remote-host/proj/src/app.py", "host 'remote-host'"),
        ("file:relative/app.py", "without an absolute path"),
        ("file:///etc/passwd", "outside the workspace"),
    ],
)
def test_server_uris_that_leave_the_workspace_fail_closed(single: Workspace, uri: str, message: str) -> None:
    with pytest.raises(PathOutsideWorkspace, match=message):
        single.from_uri(uri)


def test_server_uris_percent_decoded_and_query_refused(tmp_path: Path) -> None:
    root = tmp_path / "my proj"
    target = _file(root / "é x.py")
    workspace = Workspace([root])
    found = workspace.from_uri(target.as_uri())
    assert found.display == "é x.py"
    assert found.uri == target.as_uri()
    assert workspace.from_uri(target.as_uri().replace("file://", "file://localhost")).display == "é x.py"
    with pytest.raises(PathOutsideWorkspace, match=r"query or fragment"):
        workspace.from_uri(target.as_uri() + "?x=1")
    # An encoded "../" inside the URI path is decoded, then the real path is checked.
    escape = root.as_uri() + "/%2E%2E/%2E%2E/etc/passwd"
    with pytest.raises(PathOutsideWorkspace):
        workspace.from_uri(escape)


def test_nul_characters_are_refused(single: Workspace) -> None:
    with pytest.raises(PathOutsideWorkspace, match=r"NUL"):
        single.resolve("src/app.py\x00.txt")
    with pytest.raises(PathOutsideWorkspace, match=r"NUL"):
        single.from_uri("file:///tmp/a%00b")


def test_symlink_escapes_fail_closed_in_inputs_and_server_uris(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    secret = _file(tmp_path / "secret" / "key.pem", "PRIVATE")
    _file(root / "src" / "app.py")
    (root / "linked_dir").symlink_to(tmp_path / "secret", target_is_directory=True)
    (root / "key.pem").symlink_to(secret)
    workspace = Workspace([root])
    for path in ("linked_dir/key.pem", "key.pem", str(root / "key.pem"), (root / "key.pem").as_uri()):
        with pytest.raises(PathOutsideWorkspace, match=r"symbolic link"):
            workspace.resolve(path)
    with pytest.raises(PathOutsideWorkspace, match=r"symbolic link"):
        workspace.from_uri((root / "linked_dir" / "key.pem").as_uri())
    # A file that does not exist yet behind an escaping directory link is refused too.
    with pytest.raises(PathOutsideWorkspace):
        workspace.resolve("linked_dir/new.txt", must_exist=False)


def test_symlinks_inside_the_workspace_resolve_to_the_real_file(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    real = _file(root / "src" / "real.py")
    (root / "alias.py").symlink_to(real)
    workspace = Workspace([root])
    found = workspace.resolve("alias.py")
    assert found.display == "src/real.py"
    assert found.absolute == os.path.realpath(real)


def test_a_workspace_given_through_a_symlink_accepts_both_spellings(tmp_path: Path) -> None:
    real_root = tmp_path / "real"
    _file(real_root / "a.py")
    (tmp_path / "link").symlink_to(real_root, target_is_directory=True)
    workspace = Workspace([tmp_path / "link"])
    assert workspace.roots[0].path == str(real_root)
    assert workspace.resolve(str(tmp_path / "link" / "a.py")).display == "a.py"
    assert workspace.from_uri((real_root / "a.py").as_uri()).display == "a.py"


def test_nested_roots_attribute_files_to_the_innermost_root(tmp_path: Path) -> None:
    outer = tmp_path / "mono"
    _file(outer / "packages" / "web" / "index.ts")
    workspace = Workspace([outer, outer / "packages" / "web"])
    found = workspace.from_absolute(str(outer / "packages" / "web" / "index.ts"))
    assert (found.root.id, found.display) == ("web", "web/index.ts")


def test_try_uri_returns_the_refusal(single: Workspace) -> None:
    refusal = single.try_uri("https://x/y")
    assert isinstance(refusal, PathOutsideWorkspace)


_SEGMENTS = ["..", ".", "src", "app.py", "out", "in", "secret", "x", "", "%2e%2e", "~"]


@pytest.fixture(scope="module")
def fenced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, Path]:
    base = tmp_path_factory.mktemp("fenced")
    root = base / "proj"
    _file(root / "src" / "app.py")
    _file(base / "secret" / "key.pem", "PRIVATE")
    (root / "out").symlink_to(base / "secret", target_is_directory=True)
    (root / "in").symlink_to(root / "src", target_is_directory=True)
    return Workspace([root]), base


@settings(max_examples=300, deadline=None)
@given(
    segments=st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=6),
    separator=st.sampled_from(["/", "\\"]),
    form=st.sampled_from(["relative", "absolute", "uri"]),
)
def test_no_input_path_ever_lands_outside_the_root(
    fenced: tuple[Workspace, Path], segments: list[str], separator: str, form: str
) -> None:
    """Property (B8.11): whatever the spelling, a path either fails or resolves to a real path in the root."""
    workspace, base = fenced
    relative = separator.join(segments)
    if form == "absolute":
        path = str(base / "proj") + "/" + relative.replace("\\", "/")
    elif form == "uri":
        path = (base / "proj").as_uri() + "/" + relative.replace("\\", "/")
    else:
        path = relative
    try:
        found = workspace.resolve(path, must_exist=False)
    except IntelError:
        return
    real_root = os.path.realpath(base / "proj")
    real = os.path.realpath(found.absolute)  # what opening the path would really reach
    assert os.path.commonpath([real, real_root]) == real_root
    secret = os.path.realpath(base / "secret")
    assert os.path.commonpath([real, secret]) != secret


def test_one_operations_lookup_remembers_folders_but_still_checks_each_file(tmp_path: Path) -> None:
    """uri_lookup shares folders' real paths between files (one lstat per file): a symlinked file, a
    symlinked folder and a plain file beside them are each judged as os.path.realpath would."""
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("x = 1\n")
    (root / "src" / "plain.py").write_text("y = 2\n")
    (root / "src" / "link.py").symlink_to(outside / "secret.py")
    (root / "linked").symlink_to(outside)
    workspace = Workspace([root])
    lookup = workspace.uri_lookup()
    plain = lookup((root / "src" / "plain.py").as_uri())
    assert not isinstance(plain, IntelError) and plain.display == "src/plain.py"
    assert isinstance(lookup((root / "src" / "link.py").as_uri()), PathOutsideWorkspace)
    assert isinstance(lookup((root / "linked" / "secret.py").as_uri()), PathOutsideWorkspace)
    dotted = lookup((root / "src").as_uri() + "/../src/plain.py")
    assert not isinstance(dotted, IntelError) and dotted.display == "src/plain.py"


def test_a_file_that_becomes_an_escaping_symlink_is_refused_by_the_next_lookup(tmp_path: Path) -> None:
    """The workspace remembers string work across calls (a URI's path, a real path's place), never the
    file system's answer: a server URI accepted once is refused once its file is a symlink out (B8.11)."""
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("x = 1\n")
    target = root / "mod.py"
    target.write_text("y = 2\n")
    workspace = Workspace([root])
    uri = target.as_uri()
    for _ in range(2):  # the second lookup is answered from the memos
        found = workspace.uri_lookup()(uri)
        assert not isinstance(found, IntelError) and found.display == "mod.py"
        assert workspace.from_uri(uri).display == "mod.py"
    target.unlink()
    target.symlink_to(outside / "secret.py")
    assert isinstance(workspace.uri_lookup()(uri), PathOutsideWorkspace)
    with pytest.raises(PathOutsideWorkspace):
        workspace.from_uri(uri)
    with pytest.raises(PathOutsideWorkspace):
        workspace.resolve("mod.py")
    target.unlink()
    target.write_text("y = 3\n")
    assert workspace.from_uri(uri).display == "mod.py"


def test_roots_in_place_until_a_folder_above_a_root_becomes_a_link(tmp_path: Path) -> None:
    base = Path(os.path.realpath(tmp_path))
    (base / "a" / "ws").mkdir(parents=True)
    (base / "b" / "ws").mkdir(parents=True)
    workspace = Workspace([base / "a" / "ws", base / "b" / "ws"])
    assert workspace.roots_in_place()
    (base / "b").rename(base / "b-moved")
    (base / "b").symlink_to(base / "b-moved", target_is_directory=True)  # same folder, through a link now
    assert not workspace.roots_in_place()
    (base / "b").unlink()
    (base / "b-moved").rename(base / "b")
    assert workspace.roots_in_place()
    (base / "a" / "ws").rename(base / "a" / "ws-moved")  # a root gone: not in place either
    assert not workspace.roots_in_place()


def test_a_file_named_in_bytes_that_are_not_utf8_has_a_uri_of_those_bytes(tmp_path: Path) -> None:
    """A file whose name is Latin-1 (an archive unpacked as it was made): Python holds the name with a lone
    surrogate, and its URI raised UnicodeEncodeError, which ended every tool call once such a file
    appeared in a project tree (a round-4 trial). Its URI now percent-encodes its bytes, and reads back."""
    name = os.fsdecode(b"caf\xe9.py")
    (tmp_path / name).write_text("x = 1\n")
    workspace = Workspace([tmp_path])
    file = workspace.resolve(name)
    assert file.uri == (tmp_path / "x").as_uri()[: -len("x")] + "caf%E9.py"
    assert workspace.from_uri(file.uri) == file
    assert workspace.from_uri((tmp_path / "é.py").as_uri()).relative == "é.py"  # UTF-8 names as before
