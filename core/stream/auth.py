"""The stream's bearer token: where it comes from and how a request is checked against it.

The check runs before the WebSocket upgrade, so an unauthenticated client never causes a resolve, an
install or a process. Tokens never appear in logs or error messages.
"""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from kandev_lsp.errors import KandevLspError

TOKEN_ENV = "KANDEV_LSP_TOKEN"
_SCHEME = "bearer"


class TokenError(KandevLspError):
    """The configured token could not be read or is unusable."""


@dataclass(frozen=True, slots=True)
class StreamToken:
    """The token clients must present, and whether it was generated here (then it is printed once)."""

    value: str
    generated: bool = False

    def __repr__(self) -> str:  # never show the secret, even in a traceback
        return f"StreamToken(generated={self.generated})"

    def accepts(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header value carries this token (constant-time comparison)."""
        return check_bearer(authorization, self.value)


def check_bearer(authorization: str | None, token: str) -> bool:
    """``Authorization: Bearer <token>``, scheme case-insensitive, compared with ``hmac.compare_digest``."""
    if not authorization:
        return False
    scheme, _, presented = authorization.strip().partition(" ")
    if scheme.lower() != _SCHEME:
        return False
    return hmac.compare_digest(presented.strip().encode("utf-8"), token.encode("utf-8"))


def load_token(token_file: str | None = None, environ: Mapping[str, str] | None = None) -> StreamToken:
    """The token from ``token_file``, else ``$KANDEV_LSP_TOKEN``, else a new random one.

    :raises TokenError: the file cannot be read, or the token is empty or shorter than 16 characters.
    """
    environ = os.environ if environ is None else environ
    if token_file:
        try:
            with open(token_file, encoding="utf-8") as handle:
                value = handle.read().strip()
        except OSError as exc:
            raise TokenError(f"cannot read the token file {token_file}: {exc.strerror}") from exc
        return StreamToken(_checked(value, f"the token file {token_file}"))
    from_env = environ.get(TOKEN_ENV)
    if from_env is not None:
        return StreamToken(_checked(from_env.strip(), f"${TOKEN_ENV}"))
    return StreamToken(secrets.token_urlsafe(32), generated=True)


def _checked(value: str, where: str) -> str:
    if len(value) < 16 or any(ch.isspace() for ch in value):
        raise TokenError(
            f"{where} holds an unusable token: it must be at least 16 characters with no whitespace. "
            "Write a random value (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`), "
            "or leave it unset to have one generated and printed."
        )
    return value
