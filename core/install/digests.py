"""SHA-256 digests: check the value a plugin pins and read the file a mirror publishes beside an asset.

Pure text in, hex digest out (or :class:`ValueError` with the reason), so every accepted format is tested
with plain strings. The downloader turns a :class:`ValueError` into a user-facing error that names the URL.
"""

from __future__ import annotations

import re

_HEX = re.compile(r"[0-9a-f]{64}")
# ``sha256sum`` output: "<hex>  <name>" (text mode) or "<hex> *<name>" (binary mode).
_GNU_LINE = re.compile(r"(?P<hex>[0-9A-Fa-f]{64})[ \t]+\*?(?P<name>\S.*)")
# ``shasum -a 256 --tag`` / BSD ``sha256``: "SHA256 (<name>) = <hex>".
_BSD_LINE = re.compile(r"SHA2?-?256 ?\((?P<name>.+)\) ?= ?(?P<hex>[0-9A-Fa-f]{64})", re.IGNORECASE)

#: The largest digest file the downloader reads; a per-asset ``.sha256`` file is one short line.
MAX_DIGEST_FILE_BYTES = 64 * 1024


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
