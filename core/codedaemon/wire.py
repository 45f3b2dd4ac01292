"""The messages between ``kandev-lsp code`` and its daemon, and who may send them.

One connection carries one exchange: the caller sends one request, a JSON object on one line, and the
daemon answers one reply line and closes. Every request carries ``protocol``; a call also carries the
caller's ``identity``, which must equal the daemon's (:mod:`~kandev_lsp.codedaemon.names`):

* ``{"op": "call", "tool", "payload", "deadline", "autoApprove", "idleTimeout"}``: one tool call
  (``--approve=ID`` is the call ``{"transactionId": ID, "approve": true}`` of the tool that parked it);
* ``{"op": "stop"}``: stop the servers and exit; answered once they are stopped (any identity: ``--stop``
  stops every daemon of a set of roots);
* ``{"op": "retire", "identity"}``: a caller of another configuration of the same roots makes room for
  its daemon (:func:`~kandev_lsp.codedaemon.client.make_room`): stop unless busy, answered at once.

Replies: ``{"result": {...}}`` (the tool's result: the caller prints it and exits 0 or 1 as the one-shot
path would), ``{"usage": "..."}`` (exit 2, nothing ran), ``{"error": "..."}`` (exit 1),
``{"stopped": pid}``, ``{"retired": pid, "differs": [...]}`` (what differs from the caller's identity,
by name: ``$PATH``, ``--read-only``) or ``{"busy": true}`` (a call under way, a parked edit),
``{"restart": "..."}`` (the daemon is stopping because its settings file changed:
ask its successor) or ``{"mismatch": true}`` (another identity answers at this name). A result, an error
and a refusal of the flags may carry ``"stderr"``: what a one-shot run of the same flags would have said
on stderr as it started (a plugin that failed to load, a settings file named but absent), which the
caller writes to its stderr.

The peer's uid is read from the socket (``SO_PEERCRED``) on both ends and must be this process's own:
the daemon drops any other caller unanswered, and a caller never trusts a socket another user serves.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
from collections.abc import Mapping
from typing import Any

from kandev_lsp import jsontext

__all__ = [
    "MAX_MESSAGE",
    "PROTOCOL",
    "WireError",
    "check_peer",
    "decode",
    "encode",
    "peer_credentials",
    "supported",
]

#: Bumped when a message changes meaning; part of the identity, so an old daemon is never asked.
PROTOCOL = 1
#: The longest message either side reads (a tool's payload or result is far smaller).
MAX_MESSAGE = 64 * 1024 * 1024


class WireError(Exception):
    """A message that is not one JSON object on one line, or a peer that may not talk to us."""


def supported() -> bool:
    """Whether this platform has what the daemon needs: Unix sockets whose peer's uid can be read.

    Linux has ``SO_PEERCRED``; elsewhere (Windows, macOS) ``kandev-lsp code`` keeps the one-shot path.
    """
    return sys.platform.startswith("linux") and hasattr(socket, "AF_UNIX") and hasattr(socket, "SO_PEERCRED")


def encode(message: Mapping[str, Any]) -> bytes:
    """One message as its wire line.

    A string may hold lone surrogates: Python's argv and file names keep bytes that are not UTF-8 that
    way (``--json`` with a Latin-1 name, a file named so in an answer). They pass as they are
    (``surrogatepass``), so the daemon answers what a one-shot run answers, never a UnicodeEncodeError.
    """
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass") + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    """The message of one wire line.

    :raises WireError: not UTF-8 JSON, or not an object.
    """
    try:
        message = jsontext.loads(line.decode("utf-8", "surrogatepass"))
    except (UnicodeDecodeError, ValueError) as error:
        raise WireError(f"not a JSON line: {error}") from None
    if not isinstance(message, dict):
        raise WireError(f"a message is a JSON object, not {type(message).__name__}")
    return message


def peer_credentials(connection: socket.socket) -> tuple[int, int]:
    """The connected peer's ``(pid, uid)``, from the kernel (``SO_PEERCRED``)."""
    size = struct.calcsize("3i")
    pid, uid, _gid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, size))
    return pid, uid


def check_peer(connection: socket.socket) -> int:
    """The peer's pid, after checking it runs as this user.

    :raises WireError: the peer is another user.
    """
    pid, uid = peer_credentials(connection)
    if uid != os.getuid():
        raise WireError(f"the peer (pid {pid}) runs as uid {uid}, not as this user ({os.getuid()})")
    return pid
