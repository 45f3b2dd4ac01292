"""Which browser origins may open a WebSocket on a route: the defence against cross-site WebSocket
hijacking.

A browser attaches its cookies to a WebSocket handshake to any site, whatever page opened it, and the
same-origin policy does not stop a page from opening one. A route whose authorizer reads a session cookie
(what docs/broker-contract.md tells embedders to do for browser clients) therefore accepts any page the
user visits, unless it checks the ``Origin`` header that every browser sends with the handshake (RFC 6455
section 10.2). Non-browser clients (editors, agentctl, the broker's own upstream connections) send no
``Origin`` and are not affected.

Pure values only: :func:`normalize_origin` (also the CLI's ``--allow-origin`` parser) and
:class:`OriginPolicy`, whose :meth:`~OriginPolicy.refusal` decides a request from its ``Origin`` values.
The routes run it in their own request check rather than through websockets' ``serve(origins=...)``:
the library checks origins only after ``process_request``, so the broker's authorizer would already have
run (a cookie authorizer would be asked about a cross-site request), and its 403 is a text body echoing
the origin where both routes answer a refusal in JSON and log it as one line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Final
from urllib.parse import urlsplit

from kandev_lsp.stream.handshake import Refusal

__all__ = ["ANY_ORIGIN", "OriginPolicy", "normalize_origin"]

#: The ``--allow-origin`` value that accepts every origin.
ANY_ORIGIN: Final = "*"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def normalize_origin(value: str) -> str:
    """``value`` as a browser serializes an origin: ``scheme://host[:port]``, lower-case, without a
    default port (RFC 6454 section 6.1), so ``HTTPS://Kandev.Example:443/`` and ``https://kandev.example``
    compare equal. Any scheme is allowed (an editor's web view has its own, e.g. ``vscode-webview``).

    :raises ValueError: not an origin (a path, a query, credentials, no host), or the opaque origin
        ``null``, which sandboxed frames and ``file:`` pages send and which names no site.
    """
    text = value.strip()
    if text.lower() == "null":
        raise ValueError(
            "the opaque origin 'null' cannot be allowed: every sandboxed frame and file: page sends it, "
            "whatever site it comes from"
        )
    problem = (
        f"{value!r} is not an origin: write it as a browser sends it, scheme://host[:port] "
        "(e.g. https://kandev.example or http://localhost:3000), with no path, or * for any origin"
    )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise ValueError(problem) from None
    host = parts.hostname
    if (
        not parts.scheme
        or not host
        or "@" in parts.netloc
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or text.endswith(("?", "#"))
    ):
        raise ValueError(problem)
    scheme = parts.scheme.lower()
    shown = f"[{host}]" if ":" in host else host
    if port is None or _DEFAULT_PORTS.get(scheme) == port:
        return f"{scheme}://{shown}"
    return f"{scheme}://{shown}:{port}"


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    """The origins a route accepts. A request without ``Origin`` (not a browser) is always accepted;
    one with an ``Origin`` only when it is listed, or when the policy accepts any origin (``*``).

    :param setting: how an operator allows an origin, named in the refusal's message (e.g.
        ``--allow-origin ORIGIN``).
    """

    allowed: frozenset[str] = frozenset()
    any_origin: bool = False
    setting: str = "--allow-origin ORIGIN"

    @classmethod
    def from_values(cls, values: Iterable[str], setting: str = "--allow-origin ORIGIN") -> OriginPolicy:
        """The policy for configured ``values`` (origins, or ``*``).

        :raises ValueError: a value that is not an origin (see :func:`normalize_origin`).
        """
        allowed: set[str] = set()
        any_origin = False
        for value in values:
            if value.strip() == ANY_ORIGIN:
                any_origin = True
            else:
                allowed.add(normalize_origin(value))
        return cls(frozenset(allowed), any_origin, setting)

    def refusal(self, origins: Sequence[str]) -> Refusal | None:
        """403 for a request whose ``Origin`` values (``origins``, every copy) are not acceptable: more
        than one (a browser sends exactly one), or one that is not allowed; else ``None``."""
        if not origins:
            return None
        if len(origins) > 1:
            return _forbidden(f"send at most one Origin header (this request has {len(origins)})")
        if self.any_origin:
            return None
        try:
            origin = normalize_origin(origins[0])
        except ValueError:
            origin = ""
        if origin and origin in self.allowed:
            return None
        return _forbidden(
            "this request's Origin is not an allowed origin: a browser page is accepted only from an "
            f"origin the server lists ({self.setting})"
        )


def _forbidden(message: str) -> Refusal:
    return Refusal(HTTPStatus.FORBIDDEN, "forbidden_origin", message)
