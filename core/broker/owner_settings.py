"""Whose settings a lease's server runs with: the lease owner's (issue 18 items 8-9; K14.8-K14.11).

A lease belongs to the owner of the caller that created it (``Caller.owner``; a page ticket's ``owner``).
The broker reads that owner's latest persisted settings for the lease's language from an
:class:`OwnerSettings` and hands them to the lease's ``serve`` in its settings frame
(``{"control":"settings","settings":{...}}``, docs/stream-contract.md): serve then answers the server's
``workspace/configuration`` from them, in place of the task host's settings file, and tells an
initialized server ``workspace/didChangeConfiguration`` when they change. The broker pushes them when
the upstream is ready, whenever they change (a save reaches detached leases too, K14.10), and, before a
resumed client gets ``ready``, waits until serve has them (K14.11).

``kandev-lsp broker --owner-settings DIR`` uses :class:`SettingsDirectory`: owner ``O``'s settings are
``DIR/O.json``, in the format of the user settings file (``lsp_server_configs`` per language; the other
fields are the task host's business and are not sent). Embedders implement :class:`OwnerSettings` over
their own settings store.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, Protocol

from kandev_lsp.broker.tickets import valid_owner
from kandev_lsp.errors import SettingsError
from kandev_lsp.session import log_event
from kandev_lsp.settings import SettingsFile

__all__ = ["OwnerSettings", "SettingsDirectory"]

log = logging.getLogger("kandev_lsp.broker")


class OwnerSettings(Protocol):
    """The latest persisted settings of each owner. Called on every settings check (each lease every
    ``BrokerConfig.settings_poll_interval``, and before each resumed ``ready``): keep it cheap."""

    def language_settings(self, owner: str, language: str) -> Mapping[str, Any]:
        """``owner``'s configuration for ``language`` (what ``lsp_server_configs[language]`` holds in a
        settings file); ``{}`` when the owner has none."""
        ...


class SettingsDirectory:
    """:class:`OwnerSettings` over a folder of settings files, one per owner: ``DIR/<owner>.json``.

    Each file is re-read when its modification time or size changes (:class:`SettingsFile`); a missing
    file means no settings (the plugin's defaults); a file that turns invalid keeps its last good
    contents (logged once, without the path: it names the owner). An owner name that could leave the
    folder (a separator, ``.`` or ``..``, anything outside ``tickets.valid_owner``'s rule) reads nothing,
    whoever named it: a ticket's owner is checked when minted, an embedder authorizer's ``Caller.owner``
    only here. On a case-insensitive file system (macOS, Windows) ``Alice`` and ``alice`` are one file:
    an embedder there gives its owners names of one case."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        if not os.path.isdir(self.path):
            raise SettingsError(
                f"--owner-settings {self.path} is not a folder; give the folder that holds each owner's "
                "settings as <owner>.json (docs/broker-contract.md, owner settings)"
            )
        self._files: dict[str, SettingsFile] = {}

    def language_settings(self, owner: str, language: str) -> Mapping[str, Any]:
        if not valid_owner(owner):
            return {}
        settings = self._files.get(owner)
        if settings is None:
            path = os.path.join(self.path, f"{owner}.json")
            if not os.path.exists(path):
                return {}
            try:
                settings = SettingsFile(path)
            except SettingsError as exc:
                log_event(log, "owner_settings_unusable", logging.WARNING, detail=type(exc).__name__)
                return {}
            self._files[owner] = settings
        user, _ = settings.current()
        return dict(user.server_config(language))
