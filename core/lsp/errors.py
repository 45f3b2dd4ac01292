"""Errors of the LSP endpoint and its driver: tiny, named after what went wrong."""

from __future__ import annotations

from typing import Any

__all__ = ["HandlerError", "LspError", "RequestRefused", "RequestTimeout", "ResponseError", "ServerClosed"]


class LspError(Exception):
    """Base of every error the endpoint and the client raise."""


class RequestRefused(LspError):
    """A request was not sent: a bound of the endpoint would be exceeded (K15.4), or it is closed."""


class ResponseError(LspError):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"the server answered {method} with error {code}: {message}")
        self.method = method
        self.code = code
        self.message = message
        self.data = data


class RequestTimeout(LspError, TimeoutError):
    """A request had no answer within its timeout; ``$/cancelRequest`` was sent for it (K15.5)."""

    def __init__(self, method: str, timeout: float | None) -> None:
        after = f" within {timeout:g} s" if timeout is not None else ""
        super().__init__(
            f"the server did not answer {method}{after}; the request was cancelled. The server may be "
            "busy loading the project: ask again later, or give the request a longer timeout."
        )
        self.method = method
        self.timeout = timeout


class ServerClosed(LspError, ConnectionError):
    """The server's connection ended (it exited, crashed, or broke the framing) before an answer came."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class HandlerError(LspError):
    """Raised by a server-request handler to answer with a JSON-RPC error instead of a result."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message
        self.data = data
