"""Answers to ``workspace/configuration`` requests, from per-language settings (pure).

The rules match the task host's reference contract: an item whose section equals the language gets the
whole per-language object; otherwise the ``<language>.`` prefix is stripped and the rest is looked up as a
dotted path, answering null when missing. A request with no items is answered ``[settings]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kandev_lsp._values import dataclass


@dataclass(frozen=True, slots=True)
class ConfigurationAnswer:
    """One item's answer; a wrapper because JSON ``null`` (``None``) is a valid answer."""

    value: Any


def merge_settings(defaults: Mapping[str, Any], user: Mapping[str, Any] | None) -> dict[str, Any]:
    """User values shallow-merged over the defaults (a user key replaces the default key whole)."""
    merged = dict(defaults)
    merged.update(user or {})
    return merged


def lookup_section(language: str, settings: Mapping[str, Any], section: str | None) -> Any:
    """The default answer for one item."""
    if section is None or section == "" or section == language:
        return dict(settings)
    path = section.removeprefix(language + ".")
    # A flat key that itself contains dots ("ui.semanticTokens") wins over nested lookup.
    if path in settings:
        return settings[path]
    node: Any = settings
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def configuration_items(params: Any) -> Sequence[Mapping[str, Any]] | None:
    """The ``items`` of a ``workspace/configuration`` request, or None when it has none."""
    if not isinstance(params, Mapping):
        return None
    items = params.get("items")
    if not isinstance(items, list) or not items:
        return None
    return [item if isinstance(item, Mapping) else {} for item in items]
