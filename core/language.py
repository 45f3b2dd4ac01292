"""What a plugin declares about a language: pure, immutable data.

Plugins declare; the core acts. A :class:`LanguageSpec` says which executable serves a language, how it
is started, and how it could be installed (an :data:`InstallRecipe`). The core's resolver, installers and
runners read these values; plugins never spawn, download or lock anything themselves.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from kandev_lsp._values import dataclass, field
from kandev_lsp.platform import HostPlatform

_LANGUAGE_ID = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


@dataclass(frozen=True, slots=True)
class NpmPackage:
    """One npm package pinned to an exact version (``typescript@5.9.3``)."""

    name: str
    version: str

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True, slots=True)
class NpmRecipe:
    """Install pinned npm packages into a prefix of the managed cache.

    ``bin`` names the launcher that ``npm install`` writes to ``<prefix>/node_modules/.bin``.
    ``node_engine`` is the node version range the pinned packages need (checked by ``doctor``).
    """

    packages: tuple[NpmPackage, ...]
    bin: str
    node_engine: str = ">=18"
    kind: str = field(default="npm", init=False)

    @property
    def version(self) -> str:
        """The version of the primary (first) package, recorded in receipts."""
        return self.packages[0].version


@dataclass(frozen=True, slots=True)
class GoRecipe:
    """``go install <package>@<version>`` with the task's own Go toolchain."""

    package: str
    version: str
    bin: str
    kind: str = field(default="go", init=False)


@dataclass(frozen=True, slots=True)
class ReleaseAsset:
    """One downloadable file for one platform target.

    ``compression`` says how the file is packed: ``"gzip"`` (a single gzip stream holding the
    executable), ``"zip"``, ``"tar.gz"`` or ``"none"``. ``member`` names the executable inside an
    archive. ``sha256`` is the pinned digest, or None to take the one the recipe's origin publishes.
    """

    name: str
    compression: str = "gzip"
    sha256: str | None = None
    member: str | None = None


@dataclass(frozen=True, slots=True)
class ReleaseRecipe:
    """Download a per-platform release asset from ``<base_url>/<version>/<asset.name>``.

    ``assets`` maps a target key ``"<os>-<arch>"`` (see :class:`HostPlatform`) to its asset. The base URL
    is overridable by the user (mirrors, offline use, tests).

    Where the SHA-256 of an asset with no pinned digest comes from is declared, not guessed, so that
    "installable" can be decided without a network request: ``digest_files`` says the origin publishes
    ``<asset>.sha256`` beside each asset; ``metadata_url`` names JSON release metadata listing each
    asset's digest in the GitHub releases API layout (``assets[].name``, ``assets[].digest`` =
    ``"sha256:<hex>"``), with ``{version}`` replaced by the version.
    """

    version: str
    base_url: str
    assets: Mapping[str, ReleaseAsset]
    bin: str
    digest_files: bool = True
    metadata_url: str | None = None
    kind: str = field(default="release", init=False)

    def asset_for(self, host: HostPlatform) -> ReleaseAsset | None:
        return self.assets.get(str(host))

    def digest_declared(self, asset: ReleaseAsset) -> bool:
        """Whether ``asset``'s digest is pinned or published somewhere this recipe declares."""
        return asset.sha256 is not None or self.digest_files or self.metadata_url is not None


@dataclass(frozen=True, slots=True)
class ManualInstall:
    """The server is never installed automatically; ``instructions`` tell a person how to get it."""

    instructions: str
    kind: str = field(default="manual", init=False)


InstallRecipe = NpmRecipe | GoRecipe | ReleaseRecipe | ManualInstall


class ReadinessKind(StrEnum):
    """How a server says it now gives complete answers (see :class:`Readiness`)."""

    #: Ready as soon as ``initialize`` is answered (gopls).
    IMMEDIATE = "immediate"
    #: Ready when the first work-done progress ends with no other still active (pyright,
    #: typescript-language-server: before that, answers are incomplete).
    PROGRESS = "progress"
    #: Ready while the server's ``experimental/serverStatus`` says ``quiescent: true`` (rust-analyzer;
    #: needs the client capability ``experimental.serverStatusNotification``).
    SERVER_STATUS = "server_status"
    #: Ready once the server sends :attr:`Readiness.notification`.
    NOTIFICATION = "notification"


@dataclass(frozen=True, slots=True)
class Readiness:
    """When a server of a language gives complete answers, as its plugin declares it.

    ``timeout`` is how long a caller waits for readiness before it reports the server as not ready
    (with what the server reports: progress titles, elapsed time) instead of giving an incomplete answer.
    ``log_message`` is a regular expression: a ``window/logMessage`` it matches also makes the server
    ready, for a server that reports no progress when its work is short (pyright's
    ``Found N source files``). ``ready_on_notification`` is a notification method whose first arrival
    (after ``initialize`` is answered) also makes the server ready, with any kind, for a server whose
    progress covers only some of its loads: typescript-language-server reports a project's load only
    for a configured project (a ``tsconfig.json``), and its first ``textDocument/publishDiagnostics``
    comes from its semantic server once the file's project, inferred or configured, is loaded.
    """

    kind: ReadinessKind = ReadinessKind.IMMEDIATE
    notification: str | None = None
    timeout: float = 60.0
    log_message: str | None = None
    ready_on_notification: str | None = None

    def __post_init__(self) -> None:
        if (self.kind is ReadinessKind.NOTIFICATION) != bool(self.notification):
            raise ValueError("Readiness: a notification method is given exactly when kind is NOTIFICATION")
        if self.log_message is not None:
            re.compile(self.log_message)  # a bad pattern fails when the plugin loads, not at first use
        if not self.timeout > 0:
            raise ValueError(f"Readiness.timeout must be positive, got {self.timeout!r}")


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    """A language as a plugin declares it.

    ``id`` is the value clients pass as ``language`` (``typescript``, ``go``). ``command`` is the
    executable name looked up on PATH and in the managed cache; ``args`` follow it on the command line.
    ``language_ids`` are the LSP ``languageId`` values of documents this server owns.
    ``version_args`` print the server's version (used by ``doctor`` and install verification).
    ``proxy_launchers`` name launchers that stand in for many tools (``rustup``): a candidate that resolves
    to one is run with ``version_args`` before it is trusted, since the proxied tool may be absent.
    ``root_markers`` are file or folder names marking a project root, highest priority first
    (:func:`kandev_lsp.lsp.roots.find_project_root`). ``nested_projects`` says what a marker inside
    another project means to this language's server: ``"covered"`` (the default: pyright, tsserver,
    rust-analyzer and Gradle serve a nested package from the outer project, so the outermost marker's
    folder is the project root) or ``"separate"`` (a nested Go module is a module of its own).
    ``document_language_ids`` maps a file name (``go.mod``) or an extension (``.tsx``) to the ``languageId``
    a document opens with; other files with one of ``file_extensions`` open as ``language_ids[0]``.
    ``readiness`` says when the server gives complete answers; ``client_capabilities`` are merged into the
    client capabilities sent in ``initialize`` (both overridable by hooks).
    """

    id: str
    display_name: str
    command: str
    args: tuple[str, ...] = ()
    file_extensions: tuple[str, ...] = ()
    language_ids: tuple[str, ...] = ()
    root_markers: tuple[str, ...] = ()
    install: InstallRecipe = ManualInstall("Install the server and put it on PATH.")
    experimental: bool = False
    homepage: str = ""
    version_args: tuple[str, ...] = ("--version",)
    proxy_launchers: tuple[str, ...] = ()
    document_language_ids: Mapping[str, str] = field(default_factory=lambda: _frozen({}))
    readiness: Readiness = Readiness()
    client_capabilities: Mapping[str, Any] = field(default_factory=lambda: _frozen({}))
    nested_projects: str = "covered"

    def __post_init__(self) -> None:
        if self.nested_projects not in ("covered", "separate"):
            raise ValueError(
                f"language {self.id!r}: nested_projects must be 'covered' or 'separate', "
                f"got {self.nested_projects!r}"
            )
        if not _LANGUAGE_ID.match(self.id):
            raise ValueError(
                f"language id {self.id!r} must be 1-32 lower-case letters, digits, '-' or '_', "
                "starting with a letter"
            )
        if not self.command or "/" in self.command or "\\" in self.command:
            raise ValueError(f"language {self.id!r}: command {self.command!r} must be a bare executable name")
        # Plugins pass plain dicts; keep read-only copies so a spec stays a value.
        object.__setattr__(self, "document_language_ids", _frozen(self.document_language_ids))
        object.__setattr__(self, "client_capabilities", _frozen(self.client_capabilities))

    def language_id_for(self, path: str) -> str | None:
        """The ``languageId`` a file opens with on this language's server, or None when it is not one of
        this language's files. Matching is by file name first, then by extension, case-insensitively."""
        name = posixpath.basename(path.replace("\\", "/")).lower()
        mapping = {key.lower(): value for key, value in self.document_language_ids.items()}
        if name in mapping:
            return mapping[name]
        extension = posixpath.splitext(name)[1]
        if not extension:
            return None
        if extension in mapping:
            return mapping[extension]
        if extension in (ext.lower() for ext in self.file_extensions):
            return self.language_ids[0] if self.language_ids else self.id
        return None

    @property
    def auto_installable(self) -> bool:
        """Whether any host could install this server automatically (kotlin: never)."""
        return not isinstance(self.install, ManualInstall)

    @property
    def manual_instructions(self) -> str:
        if isinstance(self.install, ManualInstall):
            return self.install.instructions
        return ""
