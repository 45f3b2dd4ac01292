"""The cache folder's atomic steps, receipts, and progress fan-out, on a real temporary folder."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from kandev_lsp.install.cache import ServerCache, cached_languages, remove_tree
from kandev_lsp.install.errors import InstallError
from kandev_lsp.install.progress import InstallProgress, ProgressFanout
from kandev_lsp.install.receipts import RECEIPT_NAME, InstallReceipt, read_receipt, utc_now, write_receipt


def receipt(**changes: object) -> InstallReceipt:
    values: dict[str, object] = {
        "language": "fakego",
        "plugin": "fakes",
        "plugin_version": "1.0",
        "recipe": "go",
        "version": "v0.1.0",
        "packages": ("example.com/fakels@v0.1.0",),
        "identity": "go example.com/fakels@v0.1.0",
        "source": "Go module proxy off",
        "executable": "bin/fakels",
        "installed_at": "2026-11-30T04:41:16Z",
        "toolchain": {"go": "go1.19.8"},
    }
    values.update(changes)
    return InstallReceipt(**values)  # type: ignore[arg-type]


def installed_version(cache: ServerCache, name: str) -> Path:
    folder = cache.versions / name
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "fakels").write_text("x")
    write_receipt(receipt(), folder)
    return folder


def test_receipts_round_trip_and_record_where_they_were_read(tmp_path: Path) -> None:
    write_receipt(receipt(sha256="ab" * 32), tmp_path)
    got = read_receipt(tmp_path)
    assert got == receipt(sha256="ab" * 32, directory=str(tmp_path))
    assert got.executable_path == str(tmp_path / "bin" / "fakels")
    data = json.loads((tmp_path / RECEIPT_NAME).read_text())
    assert data["schema"] == "kandev-lsp/install-receipt" and data["version"] == 1
    assert [p.name for p in tmp_path.iterdir()] == [RECEIPT_NAME]  # no temporary file left
    npm = receipt(interpreter="/usr/bin/node", script="node_modules/pyright/langserver.index.js")
    write_receipt(npm, tmp_path)
    assert read_receipt(tmp_path) == dataclasses.replace(npm, directory=str(tmp_path))


@pytest.mark.parametrize(
    "change",
    [
        {"schema": "other"},
        {"version": 2},
        {"executable": "../../bin/sh"},
        {"executable": "/bin/sh"},
        {"packages": "not a list"},
        {"identity": 3},
        {"script": "../../node_modules/evil.js"},
        {"script": "/tmp/evil.js"},
        {"interpreter": ""},
        {"interpreter": ["node"]},
    ],
)
def test_receipts_this_version_cannot_trust_read_as_none(tmp_path: Path, change: dict[str, object]) -> None:
    data = receipt().to_json() | change
    (tmp_path / RECEIPT_NAME).write_text(json.dumps(data))
    assert read_receipt(tmp_path) is None


def test_missing_or_corrupt_receipts_read_as_none(tmp_path: Path) -> None:
    assert read_receipt(tmp_path) is None
    (tmp_path / RECEIPT_NAME).write_text("{not json")
    assert read_receipt(tmp_path) is None


def test_utc_now_is_iso_utc() -> None:
    assert utc_now().endswith("Z") and "T" in utc_now()


def test_switch_points_current_at_a_version_with_a_relative_link(tmp_path: Path) -> None:
    cache = ServerCache(tmp_path, "fakego")
    cache.prepare()
    installed_version(cache, "v1+aaaa")
    installed_version(cache, "v2+bbbb")
    cache.switch("v1+aaaa")
    assert os.readlink(cache.current) == os.path.join("versions", "v1+aaaa")
    assert cache.current_name() == "v1+aaaa"
    cache.switch("v2+bbbb")
    assert cache.current_name() == "v2+bbbb"
    assert (cache.current / "bin" / "fakels").is_file()
    assert cache.leftovers() == []  # the temporary link was renamed over current


def test_current_that_dangles_or_points_elsewhere_is_no_current(tmp_path: Path) -> None:
    cache = ServerCache(tmp_path, "fakego")
    cache.prepare()
    assert cache.current_name() is None
    os.symlink("versions/gone", cache.current)
    assert cache.current_name() is None
    os.unlink(cache.current)
    os.symlink("/etc", cache.current)
    assert cache.current_name() is None and cache.current_receipt() is None


def test_leftovers_of_dead_installs_are_found_and_cleaned_but_versions_stay(tmp_path: Path) -> None:
    cache = ServerCache(tmp_path, "fakego")
    cache.prepare()
    installed_version(cache, "v1+aaaa")
    cache.switch("v1+aaaa")
    staging = cache.new_staging()
    (staging / "node_modules").mkdir()
    (staging / "node_modules" / "ro").write_text("x")
    os.chmod(staging / "node_modules", 0o555)  # read-only folders must not stop the cleanup
    scratch = cache.new_staging(suffix=".cwd")
    os.symlink("versions/v1+aaaa", cache.folder / ".current-123")
    assert set(cache.leftovers()) == {staging, scratch, cache.folder / ".current-123"}
    cache.clean_leftovers()
    assert cache.leftovers() == []
    assert cache.version_names() == ["v1+aaaa"] and cache.current_name() == "v1+aaaa"


def test_publish_replaces_a_broken_folder_of_the_same_name(tmp_path: Path) -> None:
    cache = ServerCache(tmp_path, "fakego")
    cache.prepare()
    (cache.versions / "v1+aaaa").mkdir()  # no receipt, no binary: a broken folder
    staging = cache.new_staging()
    (staging / "marker").write_text("new")
    target = cache.publish(staging, "v1+aaaa")
    assert (target / "marker").read_text() == "new"
    assert not staging.exists() and cache.leftovers() == []


def test_prune_keeps_only_the_named_versions(tmp_path: Path) -> None:
    cache = ServerCache(tmp_path, "fakego")
    cache.prepare()
    for name in ("v1+a", "v2+b", "v3+c"):
        installed_version(cache, name)
    cache.prune({"v3+c", "v2+b"})
    assert cache.version_names() == ["v2+b", "v3+c"]


def test_remove_all_keeps_the_lock_file(tmp_path: Path) -> None:
    cache = ServerCache(tmp_path, "fakego")
    cache.prepare()
    cache.lock_path.write_text("")
    installed_version(cache, "v1+a")
    cache.switch("v1+a")
    assert cache.remove_all() is True
    assert sorted(p.name for p in cache.folder.iterdir()) == [".lock"]
    assert cache.remove_all() is False


@pytest.mark.parametrize("linked", ["versions", "language folder"])
def test_nothing_is_deleted_through_a_linked_cache_folder(tmp_path: Path, linked: str) -> None:
    """A ``versions`` (or language) folder that is a link out of the cache: uninstall, the install's
    clean-up and pruning refuse, and the folders the link leads to stay. Before, ``remove_all`` listed
    ``versions/`` through the link and retired every folder it found there."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "versions" / "keep").mkdir(parents=True)
    (elsewhere / "versions" / ".staging-keep").mkdir()
    (elsewhere / "keep").mkdir()
    cache = ServerCache(tmp_path / "cache", "fakego")
    cache.folder.parent.mkdir()
    if linked == "versions":
        cache.folder.mkdir()
        cache.versions.symlink_to(elsewhere)
    else:
        cache.folder.symlink_to(elsewhere)
    for step in (cache.remove_all, cache.clean_leftovers, lambda: cache.prune(set()), cache.prepare):
        with pytest.raises(InstallError, match=r"is a symbolic link .* Remove the link"):
            step()
    kept = sorted(str(path.relative_to(elsewhere)) for path in elsewhere.rglob("*"))
    assert kept == ["keep", "versions", "versions/.staging-keep", "versions/keep"]


def test_prepare_creates_nothing_through_a_linked_language_folder(tmp_path: Path) -> None:
    """The refusal comes before the folders are made: before, ``versions/`` was created in whatever the
    linked language folder led to, and only then refused."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache = ServerCache(tmp_path / "cache", "fakego")
    cache.folder.parent.mkdir()
    cache.folder.symlink_to(elsewhere)
    with pytest.raises(InstallError, match=r"is a symbolic link .* Remove the link"):
        cache.prepare()
    assert list(elsewhere.iterdir()) == []


def test_cached_languages_ignores_the_flat_layout_of_older_task_hosts(tmp_path: Path) -> None:
    (tmp_path / "node_modules" / ".bin").mkdir(parents=True)
    (tmp_path / "typescript" / "versions").mkdir(parents=True)
    (tmp_path / ".hidden" / "versions").mkdir(parents=True)
    (tmp_path / "stray").mkdir()
    assert cached_languages(tmp_path) == ["typescript"]
    assert cached_languages(tmp_path / "missing") == []


def test_remove_tree_handles_read_only_files_links_and_missing_paths(tmp_path: Path) -> None:
    folder = tmp_path / "mod"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "f").write_text("x")
    os.chmod(folder / "sub" / "f", 0o444)
    os.chmod(folder / "sub", 0o555)
    remove_tree(folder)
    assert not folder.exists()
    link = tmp_path / "link"
    os.symlink(tmp_path, link)
    remove_tree(link)
    assert not os.path.lexists(link) and tmp_path.exists()
    remove_tree(tmp_path / "nothing")


def test_fanout_replays_the_latest_phase_to_a_late_listener_and_drops_a_failing_one() -> None:
    fanout = ProgressFanout("fakego")
    early: list[str] = []
    late: list[str] = []
    fanout.add(lambda report: early.append(report.phase))
    fanout.phase("installing", "go install")

    def broken(report: InstallProgress) -> None:
        raise OSError("socket closed")

    fanout.add(broken)  # fails on the replay and is dropped, quietly for the others
    fanout.add(lambda report: late.append(report.phase))
    fanout.phase("verifying")
    fanout.phase("done")
    assert early == ["installing", "verifying", "done"]
    assert late == ["installing", "verifying", "done"]


def test_fanout_rate_limits_byte_reports_but_keeps_the_last() -> None:
    now = [0.0]
    fanout = ProgressFanout("fakerel", clock=lambda: now[0])
    seen: list[tuple[int | None, int | None]] = []
    fanout.add(lambda report: seen.append((report.bytes_done, report.bytes_total)))
    for done in range(0, 100, 10):
        fanout.bytes(done, 100)
        now[0] += 0.03
    fanout.bytes(100, 100)
    assert seen[0] == (0, 100) and seen[-1] == (100, 100)
    assert 3 <= len(seen) <= 5
    assert InstallProgress("x", "downloading", 1, 2).to_json() == {
        "language": "x",
        "phase": "downloading",
        "bytesDone": 1,
        "bytesTotal": 2,
        "message": "",
    }
