"""URLs made safe for messages and logs (pure, standard library only: the intel tools import it without
pulling in the HTTP client).

Credentials and tokens travel in a URL's user info, query string and fragment; :func:`redact_url` drops
them, :func:`scrub_urls` does it for every URL inside a text (an exception's message, an installer's
output).
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urlsplit, urlunsplit

__all__ = ["redact_url", "scrub_urls"]

_URL_IN_TEXT: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def redact_url(url: str) -> str:
    """``url`` without user info, query string or fragment: safe for messages and logs."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<unparsable URL>"
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def scrub_urls(text: str) -> str:
    """``text`` with every URL in it redacted (some httpx errors and npm's output quote the URL)."""
    return _URL_IN_TEXT.sub(lambda match: redact_url(match.group(0)), text)
