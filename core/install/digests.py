"""SHA-256 digests: where an asset's digest comes from, and reading what an origin publishes.

Pure values in, a decision or a hex digest out (or :class:`ValueError` with the reason), so every rule and
accepted format is tested with plain values. The downloader turns a :class:`ValueError` into a user-facing
error that names the URL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

from kandev_lsp import jsontext
from kandev_lsp.language import ReleaseAsset, ReleaseRecipe

_HEX = re.compile(r"[0-9a-f]{64}")
# ``sha256sum`` output: "<hex>  <name>" (text mode) or "<hex> *<name>" (binary mode).
_GNU_LINE = re.compile(r"(?P<hex>[0-9A-Fa-f]{64})[ \t]+\*?(?P<name>\S.*)")
# ``shasum -a 256 --tag`` / BSD ``sha256``: "SHA256 (<name>) = <hex>".
_BSD_LINE = re.compile(r"SHA2?-?256 ?\((?P<name>.+)\) ?= ?(?P<hex>[0-9A-Fa-f]{64})", re.IGNORECASE)

#: The largest digest file the downloader reads; a per-asset ``.sha256`` file is one short line.
MAX_DIGEST_FILE_BYTES = 64 * 1024
#: The largest release metadata document read (a GitHub release with a hundred assets is ~300 KB).
MAX_METADATA_BYTES = 8 * 1024 * 1024

DigestKind = Literal["pinned", "metadata", "file", "none"]


@dataclass(frozen=True, slots=True)
class DigestPlan:
    """Where the digest an asset must match comes from.

    ``pinned``: ``value`` (the plugin's pin, or the user's ``--sha256``); ``metadata``: the asset's
    ``digest`` in the JSON release metadata at ``url``; ``file``: ``<asset URL>.sha256``; ``none``: nowhere,
    so the install must stop before downloading.
    """

    kind: DigestKind
    value: str | None = None
    url: str | None = None


def plan_digest(
    recipe: ReleaseRecipe,
    asset: ReleaseAsset,
    *,
    base_url: str | None = None,
    metadata_url: str | None = None,
) -> DigestPlan:
    """Decide where ``asset``'s digest comes from, without any I/O.

    In order: a digest on the asset (pinned by the plugin, or given by the user); release metadata the
    user configured for the language (``metadata_url``); ``<asset>.sha256`` on a mirror the user configured
    (``base_url``: a mirror is not the origin, so the origin's metadata is not asked about its files);
    the recipe's own metadata; the recipe's own ``.sha256`` files; otherwise none.
    """
    if asset.sha256 is not None:
        return DigestPlan("pinned", value=asset.sha256)
    if metadata_url:
        return DigestPlan("metadata", url=metadata_document_url(metadata_url, recipe.version))
    if base_url:
        return DigestPlan("file")
    if recipe.metadata_url:
        return DigestPlan("metadata", url=metadata_document_url(recipe.metadata_url, recipe.version))
    if recipe.digest_files:
        return DigestPlan("file")
    return DigestPlan("none")


def metadata_document_url(template: str, version: str) -> str:
    """``template`` with ``{version}`` replaced by the version, percent-encoded as one path segment."""
    return template.replace("{version}", quote(version, safe=""))


def parse_release_metadata(text: str, asset_name: str) -> str:
    """The SHA-256 of ``asset_name`` in a release metadata document (the GitHub releases API layout:
    ``{"assets": [{"name": ..., "digest": "sha256:<hex>"}, ...]}``).

    Raises :class:`ValueError` saying why no digest was found (not JSON, no such asset, no digest: assets
    uploaded before the origin started recording digests carry ``null``, or another algorithm).
    """
    try:
        data = jsontext.loads(text)
    except ValueError as exc:
        raise ValueError(f"it is not JSON ({exc})") from None
    assets = data.get("assets") if isinstance(data, dict) else None
    if not isinstance(assets, list):
        raise ValueError("it has no list of release assets ('assets')")
    entries = [entry for entry in assets if isinstance(entry, dict) and entry.get("name") == asset_name]
    if not entries:
        names = [str(entry.get("name")) for entry in assets if isinstance(entry, dict)][:6]
        raise ValueError(f"it lists no asset named {asset_name!r} (it has: {', '.join(names) or 'none'})")
    digests = {entry.get("digest") for entry in entries}
    if len(digests) != 1:
        raise ValueError(f"it lists different digests for {asset_name!r}")
    digest = digests.pop()
    if not isinstance(digest, str) or not digest:
        raise ValueError(f"it records no digest for {asset_name!r}")
    algorithm, _, value = digest.partition(":")
    if algorithm.strip().lower() != "sha256" or not value:
        raise ValueError(f"its digest for {asset_name!r} is not a SHA-256 ({_shorten(digest)!r})")
    return normalize_sha256(value)


def normalize_sha256(value: str) -> str:
    """``value`` as 64 lower-case hex characters; a ``sha256:`` prefix and surrounding blanks are allowed.

    Raises :class:`ValueError` for anything else, so a typo in a pinned digest fails before any download
    instead of as a confusing mismatch after it.
    """
    text = value.strip().lower()
    text = text.removeprefix("sha256:")
    if not _HEX.fullmatch(text):
        raise ValueError(f"{_shorten(value)!r} is not a SHA-256 digest (64 hexadecimal characters)")
    return text


def parse_published_digest(text: str, asset_name: str) -> str:
    """The digest of ``asset_name`` in the text of a published ``.sha256`` file.

    Accepted lines: a bare hex digest, ``sha256sum`` output (``<hex>  <name>`` or ``<hex> *<name>``) and
    the BSD tag form (``SHA256 (<name>) = <hex>``); blank lines and ``#`` comments are ignored. A file with
    one digest is the digest of the asset it sits beside, whatever name it records (mirrors often record
    a build path). A file with several must name ``asset_name`` (compared without any directory part).

    Raises :class:`ValueError` saying why no digest was found.
    """
    entries: list[tuple[str, str | None]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        entry = _parse_line(line)
        if entry is None:
            raise ValueError(f"line {number} is not a SHA-256 digest line: {_shorten(line)!r}")
        entries.append(entry)
    if not entries:
        raise ValueError("the file holds no digest")
    named = {digest for digest, name in entries if name is not None and _basename(name) == asset_name}
    if len(named) > 1:
        raise ValueError(f"it lists different digests for {asset_name!r}")
    if named:
        return named.pop()
    if len(entries) == 1:
        return entries[0][0]
    raise ValueError(f"it lists {len(entries)} digests and none of them is for {asset_name!r}")


def _parse_line(line: str) -> tuple[str, str | None] | None:
    if _HEX.fullmatch(line.lower()):
        return line.lower(), None
    match = _GNU_LINE.fullmatch(line) or _BSD_LINE.fullmatch(line)
    if match is None:
        return None
    return match["hex"].lower(), match["name"].strip()


def _basename(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
