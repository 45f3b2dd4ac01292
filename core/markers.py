"""The pluggy markers of the ``kandev_lsp`` project.

``hookimpl`` is public (plugins decorate their hook functions with it); ``hookspec`` is the core's own.
"""

from __future__ import annotations

import pluggy

PROJECT_NAME = "kandev_lsp"
ENTRY_POINT_GROUP = "kandev_lsp"

hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
