"""The broker's switches, read once from the environment at start (K11.8, K18.1).

Both are restart-required: the broker reads them when it starts and never again, so a running broker
never changes mode under its clients.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

CONTINUITY_ENV: Final = "KANDEV_FEATURES_LSP_BROWSER_CONTINUITY"
MAX_CONNECTIONS_ENV: Final = "KANDEV_LSP_MAX_CONNECTIONS"
DEFAULT_MAX_CONNECTIONS: Final = 8
#: A detached lease lives this long before it expires (K12.16); tests shorten it through LeaseConfig.
DEFAULT_DETACH_TIMEOUT: Final = 3600.0

_ON: Final = frozenset({"1", "true", "on", "yes"})


def continuity_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether browser continuity (leases) is on. Off unless explicitly turned on (K18.1): shipped
    profiles keep the plain authenticated proxy."""
    environ = os.environ if environ is None else environ
    return environ.get(CONTINUITY_ENV, "").strip().lower() in _ON


def max_connections(environ: Mapping[str, str] | None = None) -> int:
    """The capacity cap from ``KANDEV_LSP_MAX_CONNECTIONS``: a positive integer, else 8 (K11.7, K11.8).

    An invalid value (not an integer, zero or negative) means the default rather than an error, as in the
    reference system: a typo in an operator override must not take every editor down.
    """
    environ = os.environ if environ is None else environ
    raw = environ.get(MAX_CONNECTIONS_ENV, "").strip()
    try:
        value = int(raw, 10)
    except ValueError:
        return DEFAULT_MAX_CONNECTIONS
    return value if value >= 1 else DEFAULT_MAX_CONNECTIONS
