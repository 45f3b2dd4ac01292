"""Diagnostics baselines: the receipt of the agent's own file edits (issue 20 item 11; B3.1, B7.3).

An agent mostly edits with its own file tools, which give no receipt: no word on what the edit broke or
fixed. ``code_diagnostics`` gives it one. Every answer records what the servers' diagnostics were (the
files it answered about, and every other file whose diagnostics were final then) under a short id,
``baselineId``; a later call with ``since: <that id>`` (or ``since: "last"``, this session's previous
answer) adds the delta since: introduced, resolved and persisting diagnostics, compared by keys without
positions (:mod:`~kandev_lsp.intel.reading.deltas`), over the files changed since the baseline (the
servers' change ledgers), the files the servers re-checked since (publications received after it), and
the files of the call's own scope, each with the same freshness rule as any diagnostics answer.

Pure bookkeeping: bounded (:data:`MAX_BASELINES`, the oldest go first); ids are random, not guessable
across sessions, and mean nothing outside the session that made them.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["LAST", "MAX_BASELINES", "Baseline", "Baselines"]

#: ``since`` value naming this session's previous answer.
LAST: Final = "last"
#: Baselines kept per session.
MAX_BASELINES: Final = 32


@dataclass(frozen=True, slots=True)
class Baseline:
    """What the diagnostics were at ``at`` (the servers' clock): model-facing path -> diagnostics."""

    id: str
    at: float
    problems: Mapping[str, Sequence[Mapping[str, Any]]]


class Baselines:
    """The baselines one session handed out (see the module docstring)."""

    def __init__(self) -> None:
        self._kept: dict[str, Baseline] = {}
        self._last: str | None = None

    def record(self, at: float, problems: Mapping[str, Sequence[Mapping[str, Any]]]) -> Baseline:
        baseline = Baseline(f"b{secrets.token_hex(4)}", at, dict(problems))
        self._kept[baseline.id] = baseline
        while len(self._kept) > MAX_BASELINES:
            self._kept.pop(next(iter(self._kept)))
        self._last = baseline.id
        return baseline

    def find(self, name: str) -> Baseline | None:
        """The baseline ``name`` names (an id, or :data:`LAST`), if it is still kept."""
        if name == LAST:
            return self._kept.get(self._last) if self._last is not None else None
        return self._kept.get(name)
