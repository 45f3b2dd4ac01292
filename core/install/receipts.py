"""Install receipts: a small JSON file in each installed version's folder saying what is there.

The receipt is written into the staging folder before it is renamed into ``versions/``, so a version
folder and its receipt appear together, atomically. It records what was installed, from where, with which
toolchain, and when; never installer output or environment values (which may hold tokens).

The resolver reads receipts too (how an npm install is started: :mod:`kandev_lsp.launchers`), so reading
stays light: what only writing needs (``tempfile``, ``datetime``) is imported where it is used.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kandev_lsp import jsontext
from kandev_lsp._values import dataclass, field

SCHEMA = "kandev-lsp/install-receipt"
SCHEMA_VERSION = 1
RECEIPT_NAME = "receipt.json"


@dataclass(frozen=True, slots=True)
class InstallReceipt:
    """What one installed version is.

    ``executable`` is relative to ``directory`` with ``/`` separators (``node_modules/.bin/pyright-langserver``,
    ``bin/gopls``). ``directory`` is where the receipt was read from or written to; it is not stored, so a
    cache can be moved. ``source`` is where the files came from: the npm registry as configured for the
    task, the Go proxy setting, or the download URL (credentials removed). ``toolchain`` holds tool
    versions (``node``, ``npm``, ``go``).

    ``interpreter`` and ``script`` say how a server that needs one is started: for an npm install, the
    ``node`` kandev-lsp located by its trusted lookup (the one npm ran with, absolute) and the package's
    script relative to ``directory`` (``node_modules/pyright/langserver.index.js``), started as
    ``interpreter script``, never through the launcher's ``#!/usr/bin/env node`` (issue 17 item 1).
    None for kinds that produce an executable, and in receipts written before they were recorded.
    """

    language: str
    plugin: str
    plugin_version: str
    recipe: str
    version: str
    packages: tuple[str, ...]
    identity: str
    source: str
    executable: str
    installed_at: str
    toolchain: Mapping[str, str] = field(default_factory=dict)
    sha256: str | None = None
    interpreter: str | None = None
    script: str | None = None
    directory: str = ""

    @property
    def executable_path(self) -> str:
        return str(Path(self.directory, *self.executable.split("/")))

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "language": self.language,
            "plugin": self.plugin,
            "pluginVersion": self.plugin_version,
            "recipe": self.recipe,
            "serverVersion": self.version,
            "packages": list(self.packages),
            "identity": self.identity,
            "source": self.source,
            "sha256": self.sha256,
            "executable": self.executable,
            "installedAt": self.installed_at,
            "toolchain": dict(self.toolchain),
            "interpreter": self.interpreter,
            "script": self.script,
        }

    @classmethod
    def from_json(cls, data: Any, directory: str) -> InstallReceipt | None:
        """The receipt in ``data``, or None when it is not a receipt this version understands."""
        if (
            not isinstance(data, dict)
            or data.get("schema") != SCHEMA
            or data.get("version") != SCHEMA_VERSION
        ):
            return None
        try:
            text = {
                key: data[key]
                for key in (
                    "language",
                    "plugin",
                    "pluginVersion",
                    "recipe",
                    "serverVersion",
                    "identity",
                    "source",
                    "executable",
                    "installedAt",
                )
            }
            packages = data["packages"]
            toolchain = data.get("toolchain") or {}
            sha256 = data.get("sha256")
            interpreter = data.get("interpreter")
            script = data.get("script")
        except KeyError:
            return None
        if not all(isinstance(value, str) for value in text.values()):
            return None
        if not (isinstance(packages, list) and all(isinstance(p, str) for p in packages)):
            return None
        if not (isinstance(toolchain, dict) and all(isinstance(v, str) for v in toolchain.values())):
            return None
        if sha256 is not None and not isinstance(sha256, str):
            return None
        executable = text["executable"]
        if not _inside(executable) or (script is not None and not _inside(script)):
            return None  # a receipt never points outside its own folder
        if interpreter is not None and not (isinstance(interpreter, str) and interpreter):
            return None  # the path the trusted lookup found (checked again, by its rules, at each start)
        return cls(
            language=text["language"],
            plugin=text["plugin"],
            plugin_version=text["pluginVersion"],
            recipe=text["recipe"],
            version=text["serverVersion"],
            packages=tuple(packages),
            identity=text["identity"],
            source=text["source"],
            executable=executable,
            installed_at=text["installedAt"],
            toolchain=dict(toolchain),
            sha256=sha256,
            interpreter=interpreter,
            script=script,
            directory=directory,
        )


def _inside(relative: object) -> bool:
    """Whether ``relative`` is a ``/``-separated path that stays inside the receipt's folder."""
    return isinstance(relative, str) and not relative.startswith("/") and ".." not in relative.split("/")


def utc_now() -> str:
    """The current time as an ISO 8601 UTC timestamp (``2026-11-30T04:41:16Z``)."""
    from datetime import UTC, datetime

    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def write_receipt(receipt: InstallReceipt, directory: str | os.PathLike[str]) -> None:
    """Write ``receipt.json`` into ``directory`` atomically (a temporary file beside it, then rename)."""
    import tempfile

    text = json.dumps(receipt.to_json(), indent=2) + "\n"
    handle, temporary = tempfile.mkstemp(prefix=".receipt-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, os.path.join(directory, RECEIPT_NAME))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def read_receipt(directory: str | os.PathLike[str]) -> InstallReceipt | None:
    """The receipt in ``directory``, or None when there is none or it cannot be understood."""
    try:
        with open(os.path.join(directory, RECEIPT_NAME), "rb") as stream:
            return parse_receipt(stream.read(MAX_RECEIPT_BYTES), str(directory))
    except OSError:
        return None


#: A receipt is well under a kilobyte; more than this is not one.
MAX_RECEIPT_BYTES = 64 * 1024


def parse_receipt(data: bytes | None, directory: str) -> InstallReceipt | None:
    """The receipt whose bytes are ``data`` (read from ``directory``), or None when it is not one."""
    if data is None or len(data) >= MAX_RECEIPT_BYTES:
        return None
    try:
        return InstallReceipt.from_json(jsontext.loads(data), directory)
    except ValueError:  # not JSON, not UTF-8
        return None
