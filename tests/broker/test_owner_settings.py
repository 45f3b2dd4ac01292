"""``kandev-lsp broker --owner-settings DIR``: an owner's settings are ``DIR/<owner>.json`` and no other
file (issue 18 read-through, the security of owner names).

An owner name reaches the folder from a page ticket's ``owner`` (checked when minted) and from an
embedder's own authorizer (``Caller.owner``, checked nowhere before this): a name that is a path (``../x``,
an absolute one, a dot name, a separator) must read nothing, even where the file it names exists.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kandev_lsp.broker.owner_settings import SettingsDirectory

SETTINGS = {"lsp_server_configs": {"go": {"gopls": {"staticcheck": True}}}}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    owners = tmp_path / "owners"
    (owners / "team").mkdir(parents=True)
    for place in (tmp_path / "x.json", owners / "alice.json", owners / "team" / "bob.json"):
        place.write_text(json.dumps(SETTINGS))
    (owners / "..json").write_text(json.dumps(SETTINGS))  # what the dot names would become
    (owners / "...json").write_text(json.dumps(SETTINGS))
    return owners


def test_an_owner_reads_its_own_file(folder: Path) -> None:
    assert SettingsDirectory(folder).language_settings("alice", "go") == {"gopls": {"staticcheck": True}}
    assert SettingsDirectory(folder).language_settings("carol", "go") == {}  # no file: none


@pytest.mark.parametrize(
    "owner", ["../x", "..", ".", "team/bob", "team\\bob", "/abs/x", "", "alice.json/..", "a" * 129]
)
def test_an_owner_name_that_is_a_path_reads_nothing(folder: Path, owner: str) -> None:
    name = owner.replace("/abs/x", str(folder.parent / "x"))  # an absolute name of a file that exists
    assert SettingsDirectory(folder).language_settings(name, "go") == {}
