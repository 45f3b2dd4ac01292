"""Lease transitions to log lines (K19.2): ``event=lease_<what> key=value ...`` on ``kandev_lsp.broker``.

The book's :class:`~kandev_lsp.broker.leases.Transition` values already hold only bounded metadata
(language, reason, generation, counts) and never a lease id, hint, session or execution id; this module
only writes them, in the same format as ``serve``'s logs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kandev_lsp.broker.leases import Action, Transition
from kandev_lsp.session import log_event

__all__ = ["LOGGER", "log_transitions"]

LOGGER = logging.getLogger("kandev_lsp.broker")

#: Transitions that mean something went wrong for a client are logged one level up.
_WARNINGS = frozenset({"lease_rejected"})


def log_transitions(actions: Iterable[Action], logger: logging.Logger = LOGGER) -> None:
    """Log every :class:`Transition` among ``actions``, in order; other actions are ignored."""
    for action in actions:
        if isinstance(action, Transition):
            level = logging.WARNING if action.event in _WARNINGS else logging.INFO
            log_event(logger, action.event, level, **action.fields)
