"""The ``file:`` URI of a workspace folder, as a pure function of the path and the host platform.

Language servers compare document URIs with the workspace URI byte for byte, so the form matters: every
character outside RFC 3986's unreserved set is percent-encoded (UTF-8 first), a Windows drive keeps its
letter and colon (``file:///C:/...``), and a UNC share puts its server in the authority
(``file://server/share/...``). The platform is a parameter, so Windows forms are tested on Linux.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
from urllib.parse import quote

from kandev_lsp.platform import HostPlatform

#: Unreserved characters (RFC 3986 section 2.3) are never encoded; "/" separates path segments.
_PATH_SAFE = "/"


class WorkspacePathError(ValueError):
    """The workspace path cannot be turned into a ``file:`` URI (it is not absolute)."""


def workspace_uri(path: str, host: HostPlatform) -> str:
    """``path`` (an absolute folder on ``host``) as a strict ``file:`` URI.

    ``..`` and ``.`` segments are collapsed and a trailing separator dropped, so one folder always gets
    one URI. POSIX: ``/home/me/my proj`` -> ``file:///home/me/my%20proj``. Windows: ``C:\\Users\\me`` ->
    ``file:///C:/Users/me``; ``\\\\server\\share\\x`` -> ``file://server/share/x``; the ``\\\\?\\`` long-path
    prefix is removed first.

    :raises WorkspacePathError: the path is not absolute on ``host``.
    """
    if host.is_windows:
        return _windows_uri(path)
    if not path.startswith("/"):
        raise WorkspacePathError(f"workspace path {path!r} is not absolute")
    # normpath keeps a leading "//" (POSIX leaves its meaning to the system); Linux and macOS treat it as "/".
    normalised = "/" + posixpath.normpath(path).lstrip("/")
    # A name that is not UTF-8 is held as lone surrogates (os.fsdecode): its own bytes are percent-encoded.
    return "file://" + quote(os.fsencode(normalised), safe=_PATH_SAFE)


def _windows_uri(path: str) -> str:
    path = path.replace("/", "\\")
    if path.startswith("\\\\?\\UNC\\"):
        path = "\\\\" + path[len("\\\\?\\UNC\\") :]
    elif path.startswith("\\\\?\\"):
        path = path[len("\\\\?\\") :]
    drive, rest = ntpath.splitdrive(path)
    if drive.startswith("\\\\") and not rest:
        rest = "\\"  # the root of a share itself
    if not drive or not rest.startswith("\\"):
        raise WorkspacePathError(
            f"workspace path {path!r} is not absolute: expected a drive (C:\\...) or a UNC share (\\\\server\\share)"
        )
    segments = ntpath.normpath(rest).replace("\\", "/")
    if drive.startswith("\\\\"):
        server, _, share = drive[2:].partition("\\")
        if not server or not share:
            raise WorkspacePathError(
                f"workspace path {path!r} is not a complete UNC path (\\\\server\\share)"
            )
        tail = "" if segments == "/" else segments
        return f"file://{quote(server, safe='')}/{quote(share, safe='')}{quote(tail, safe=_PATH_SAFE)}"
    letter = drive[0]
    if not letter.isascii() or not letter.isalpha():
        raise WorkspacePathError(f"workspace path {path!r} has no drive letter")
    return f"file:///{letter.upper()}:{quote(segments, safe=_PATH_SAFE)}"
