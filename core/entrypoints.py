"""Entry points of one group, found without importing :mod:`importlib.metadata`.

Why: ``kandev-lsp resolve`` and ``run`` are short-lived processes on an agent's and an editor's hot path.
``importlib.metadata`` pulls in ``email``, ``zipfile``, ``csv`` and ``socket`` and parses every installed
distribution's metadata as an e-mail message; that was the largest single cost of a cold ``resolve``.
The plugin group only needs each distribution's ``entry_points.txt``.

The walk follows ``importlib.metadata.entry_points(group=...)`` exactly for the ordinary layout: every
``sys.path`` folder in order, ``*.dist-info`` folders before ``*.egg-info`` ones, a distribution name
seen first shadowing later copies, sections parsed the same way, ``load()`` importing ``module:attr``.
Whenever the layout is anything else (a zip or ``.egg`` on ``sys.path``, an import hook that declares
distributions of its own), the standard library answers instead, so third-party plugins always load
with the standard semantics. ``distribution name`` and ``version`` are read lazily, from the metadata
file's header lines only.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

__all__ = ["DistributionLike", "EntryPoint", "EntryPointLike", "entry_points"]

# The syntax importlib.metadata accepts: ``package.module[:object.attr] [extras]``.
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")
_SEPARATORS = re.compile(r"[-_.]+")


class DistributionLike(Protocol):
    """What kandev-lsp reads of the distribution that declares an entry point."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...


class EntryPointLike(Protocol):
    """What kandev-lsp uses of an entry point (``importlib.metadata.EntryPoint`` matches it too)."""

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str: ...

    @property
    def group(self) -> str: ...

    @property
    def dist(self) -> DistributionLike | None: ...

    def load(self) -> Any: ...


class _Distribution:
    """A ``*.dist-info`` / ``*.egg-info`` folder; its header fields are read on first use."""

    __slots__ = ("_fields", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self._fields: dict[str, str] | None = None

    def _header(self, field: str) -> str:
        if self._fields is None:
            self._fields = _read_header(self.path)
        return self._fields.get(field.lower(), "")

    @property
    def name(self) -> str:
        return self._header("Name")

    @property
    def version(self) -> str:
        return self._header("Version")

    def __repr__(self) -> str:
        return f"<distribution at {self.path}>"


class EntryPoint:
    """One ``name = value`` line of a group, bound to the distribution that declares it."""

    __slots__ = ("dist", "group", "name", "value")

    def __init__(self, name: str, value: str, group: str, dist: _Distribution | None = None) -> None:
        self.name = name
        self.value = value
        self.group = group
        self.dist = dist

    def load(self) -> Any:
        """Import the module and walk the attribute path, as ``importlib.metadata`` does."""
        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"entry point {self.name!r} has a malformed value {self.value!r}")
        target: Any = importlib.import_module(match.group("module"))
        for attr in filter(None, (match.group("attr") or "").split(".")):
            target = getattr(target, attr)
        return target

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EntryPoint):
            return NotImplemented
        return (self.name, self.value, self.group) == (other.name, other.value, other.group)

    def __hash__(self) -> int:
        return hash((self.name, self.value, self.group))


def entry_points(group: str) -> list[EntryPointLike]:
    """Every entry point of ``group`` across the installed distributions, in ``importlib`` order."""
    if not _ordinary_layout():
        from importlib import metadata

        return list(metadata.entry_points(group=group))
    found: list[EntryPointLike] = []
    seen: set[str] = set()
    for folder in sys.path:
        for normalized, path in _distribution_folders(str(folder)):
            if normalized in seen:
                continue
            seen.add(normalized)
            found.extend(_group_of(path, group))
    return found


def _ordinary_layout() -> bool:
    """True when only plain folders (or missing entries) are on ``sys.path`` and only the standard
    path finder declares distributions: the layout the fast walk reproduces exactly."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if finder is not PathFinder and getattr(finder, "find_distributions", None) is not None:
            return False
    for entry in sys.path:
        folder = str(entry)  # a pathlib.Path on sys.path works with importlib too
        if folder.lower().endswith(".egg") or (folder and os.path.isfile(folder)):
            return False
    return True


def _normalize(name: str) -> str:
    return _SEPARATORS.sub("-", name).lower().replace("-", "_")


def _distribution_folders(folder: str) -> Iterator[tuple[str, str]]:
    """(normalized name, path) of each distribution in ``folder``, grouped by name as importlib does."""
    try:
        children = os.listdir(folder or ".")
    except OSError:
        return
    grouped: dict[str, list[str]] = {}
    for child in children:
        low = child.lower()
        if low.endswith((".dist-info", ".egg-info")):
            name = _normalize(low.rpartition(".")[0].partition("-")[0])
            grouped.setdefault(name, []).append(os.path.join(folder, child))
    for paths in grouped.values():
        for path in paths:
            yield _unique_key(path), path


def _unique_key(path: str) -> str:
    """The key ``importlib.metadata`` deduplicates on: the name in the folder's stem, normalized."""
    stem = os.path.basename(path)
    filename, ext = os.path.splitext(stem)
    if ext in (".dist-info", ".egg-info"):
        return _normalize(filename.partition("-")[0])
    return _normalize(_Distribution(path).name)


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def _group_of(path: str, group: str) -> Iterable[EntryPoint]:
    text = _read_text(os.path.join(path, "entry_points.txt"))
    if not text:
        return []
    dist = _Distribution(path)
    points: list[EntryPoint] = []
    section: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section != group:
            continue
        name, sep, value = line.partition("=")
        if sep:
            points.append(EntryPoint(name.strip(), value.strip(), group, dist))
    return points


def _read_header(path: str) -> dict[str, str]:
    """The first value of each header field of ``METADATA`` (or ``PKG-INFO``), keys lower-cased."""
    text = _read_text(os.path.join(path, "METADATA"))
    if text is None:
        text = _read_text(os.path.join(path, "PKG-INFO")) or ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line:
            break  # the body (long description) starts after the first empty line
        if line[0] in " \t":
            continue
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip().lower(), value.strip())
    return fields
