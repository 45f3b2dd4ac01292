"""The cheap entry-point walk gives what ``importlib.metadata`` gives, and keeps it off the resolve path."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from kandev_lsp import entrypoints


def as_rows(points: object) -> list[tuple[str, str, str, str, str]]:
    return [
        (p.name, p.value, p.group, p.dist.name if p.dist else "", p.dist.version if p.dist else "")
        for p in points  # type: ignore[attr-defined]
    ]


def write_dist(site: Path, folder: str, name: str, version: str, entry_points: str) -> None:
    info = site / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: x\n\nVersion: not-this\n"
    )
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


@pytest.mark.parametrize("group", ["kandev_lsp", "console_scripts", "pytest11", "no_such_group"])
def test_same_entry_points_as_importlib_in_this_environment(group: str) -> None:
    assert as_rows(entrypoints.entry_points(group)) == as_rows(metadata.entry_points(group=group))


def test_shadowing_order_and_parsing_match_importlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    write_dist(
        first,
        "Zed_Plugin-2.0.dist-info",
        "zed-plugin",
        "2.0",
        """
        # a comment
        [kandev_lsp]
        zed = zed_mod : make [extra]
          spaced   =   spaced_mod

        [other]
        nope = nope_mod
        """,
    )
    write_dist(second, "zed.plugin-1.0.dist-info", "zed.plugin", "1.0", "[kandev_lsp]\nold = old_mod\n")
    write_dist(second, "alpha-0.1.egg-info", "alpha", "0.1", "[kandev_lsp]\nalpha = alpha_mod:obj.attr\n")
    write_dist(second, "beta-3.dist-info", "beta", "3", "[kandev_lsp]\nbeta = beta_mod\n")
    (second / "gamma-1.egg-info").write_text("Name: gamma\n")  # an egg-info file: no entry points
    monkeypatch.setattr(sys, "path", [str(first), str(tmp_path / "missing"), str(second), *sys.path])
    ours = as_rows(entrypoints.entry_points("kandev_lsp"))
    assert ours == as_rows(metadata.entry_points(group="kandev_lsp"))
    names = [row[0] for row in ours]
    assert "old" not in names  # shadowed by the first zed-plugin on sys.path
    assert names.index("beta") < names.index("alpha")  # dist-info before egg-info within a folder
    assert ("zed", "zed_mod : make [extra]", "kandev_lsp", "zed-plugin", "2.0") in ours


def test_load_imports_module_and_attribute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ep_target_mod.py").write_text("class Obj:\n    attr = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    point = entrypoints.EntryPoint("t", "ep_target_mod:Obj.attr", "kandev_lsp")
    assert point.load() == 42
    with pytest.raises(ValueError, match="malformed"):
        entrypoints.EntryPoint("t", "not a value!", "kandev_lsp").load()


def test_unusual_layouts_are_answered_by_importlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("zipped-1.0.dist-info/METADATA", "Name: zipped\nVersion: 1.0\n")
        bundle.writestr("zipped-1.0.dist-info/entry_points.txt", "[kandev_lsp]\nzipped = zipped_mod\n")
    monkeypatch.setattr(sys, "path", [str(archive), *sys.path])
    rows = as_rows(entrypoints.entry_points("kandev_lsp"))
    assert rows == as_rows(metadata.entry_points(group="kandev_lsp"))
    assert ("zipped", "zipped_mod", "kandev_lsp", "zipped", "1.0") in rows


def test_resolve_does_not_import_importlib_metadata() -> None:
    probe = (
        "import sys; from kandev_lsp.cli import main\n"
        "try:\n    main(['resolve', 'go', '--json'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('importlib.metadata', 'email', 'zipfile') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
