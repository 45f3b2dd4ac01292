"""Mutations through the warm daemon keep their approval model, with real pyright: a dry run writes
nothing and its transaction survives the call; ``--approve=ID`` applies exactly the previewed edit once,
``--discard=ID`` drops one; a replay, a one-shot run and a daemon that is gone are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from daemon_kit import Caller, wait_until

pytestmark = [pytest.mark.real_server, pytest.mark.network_registry, pytest.mark.timeout(300)]

RENAME = {"target": {"path": "lib.py", "symbol": "greet"}, "newName": "salute"}


def _disk(folder: Path) -> dict[str, str]:
    return {name: (folder / name).read_text() for name in ("lib.py", "app.py")}


def test_a_previewed_edit_survives_the_call_and_is_applied_once_by_approve(caller: Caller) -> None:
    before = _disk(caller.workspace)
    status, dry = caller.call("code_rename", RENAME)
    assert status == 0 and dry["dryRun"] is True and dry["needsApproval"] is True
    transaction = dry["transactionId"]
    assert f"kandev-lsp code code_rename --approve={transaction}" in dry["next"]
    assert "+def salute" in dry["preview"]["diff"]
    assert _disk(caller.workspace) == before  # a dry run writes nothing

    applied = caller.run("code_rename", f"--approve={transaction}")
    assert applied.returncode == 0, applied.stderr
    receipt = json.loads(applied.stdout)["receipt"]
    assert receipt["outcome"] == "applied" and receipt["saved"] == "saved"
    after = _disk(caller.workspace)
    assert "def salute(" in after["lib.py"] and "greet" not in after["lib.py"]
    assert "salute(" in after["app.py"] and "greet" not in after["app.py"]

    replay = caller.run("code_rename", f"--approve={transaction}")
    assert replay.returncode == 1
    refused = json.loads(replay.stdout)
    assert refused["transactionStatus"] == "used" and refused["receipt"]["outcome"] == "rejected"
    assert _disk(caller.workspace) == after


def test_discard_drops_a_previewed_edit(caller: Caller) -> None:
    before = _disk(caller.workspace)
    transaction = caller.call("code_rename", RENAME)[1]["transactionId"]
    discarded = caller.run("code_rename", f"--discard={transaction}")
    assert discarded.returncode == 0, discarded.stderr
    assert json.loads(discarded.stdout)["receipt"]["outcome"] == "declined"
    assert caller.run("code_rename", f"--approve={transaction}").returncode == 1  # used up
    assert _disk(caller.workspace) == before


def test_approve_needs_the_daemon_that_holds_the_edit(caller: Caller) -> None:
    transaction = caller.call("code_rename", RENAME)[1]["transactionId"]
    one_shot = caller.run("code_rename", f"--approve={transaction}", "--no-daemon", check=False)
    assert one_shot.returncode == 2 and "--approve and --discard need the warm daemon" in one_shot.stderr

    assert caller.run("--stop").returncode == 0
    wait_until(lambda: not caller.daemons(), timeout=30, what="the stopped daemon to exit")
    gone = caller.run("code_rename", f"--approve={transaction}", check=False)
    assert gone.returncode == 1 and "no daemon is running for these workspaces" in gone.stderr
    assert gone.stdout == "" and caller.daemons() == []  # nothing was started to answer it
