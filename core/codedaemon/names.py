"""Where a ``kandev-lsp code`` daemon lives: the user's private runtime folder, and one daemon's files in it.

The folder is, in order: ``$KANDEV_LSP_RUNTIME_DIR`` (tests give each test its own), ``$XDG_RUNTIME_DIR/
kandev-lsp`` (the per-user runtime folder of a systemd login, already private and emptied at logout), or
``$TMPDIR/kandev-lsp-<uid>`` (``/tmp`` without TMPDIR). It is created owner-only (0700) and refused unless
it is a real folder (not a link) owned by this user with no group or other permission bits: the socket in
it is the daemon's only door, so its folder is what keeps other users out (the daemon checks each
peer's uid on top, :mod:`~kandev_lsp.codedaemon.wire`). The folder it lies in must be this user's or
root's, and sticky when others may write it (``/tmp``): whoever may rename entries there could swap the
checked folder for one of their own between the check and the daemon's writes (its owner record, its
log: through a link, onto any file this user may write), as with ``sudo -E`` keeping another user's
``XDG_RUNTIME_DIR``.

A daemon serves one **identity**: the workspace roots in order, the environment the servers get (less the
variables that only say which terminal, session or command the call came from, :data:`VOLATILE_VARIABLES`),
the settings file, the flags that shape the service (``--install``, ``--read-only``, ``--disable-tool``) and
the kandev-lsp installation (interpreter, package folder and its stamp, the wire's protocol). Its files
are named ``code-<roots>-<identity>`` with two CRC-32s of their JSON: ``--stop`` finds every daemon of a
set of roots by the first, and a changed environment or upgrade gets a daemon of its own by the second.
The CRC only names the files; every request carries the whole identity and the daemon answers only an
equal one, so a collision can never mix two configurations.
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

__all__ = [
    "RUNTIME_VARIABLE",
    "SOCKET_PATH_MAX",
    "VOLATILE_PREFIXES",
    "VOLATILE_VARIABLES",
    "DaemonFiles",
    "NoPrivateFolder",
    "daemon_files",
    "differences",
    "ensure_private",
    "identity_environment",
    "roots_prefix",
    "runtime_folder",
]

#: Names the runtime folder explicitly (an absolute path); otherwise the XDG rule, then the temp folder.
RUNTIME_VARIABLE = "KANDEV_LSP_RUNTIME_DIR"
#: Variables that say which terminal, login session or command a call came from, and nothing a language
#: server or its toolchain reads: left out of a daemon's identity, or every ``cd``, new terminal pane,
#: resized window, ssh connection or harness command would start another daemon (each idling minutes with
#: its servers). The daemon's servers keep the values of the call that started it. Everything else is
#: identity (PATH, HOME, PYTHONPATH, VIRTUAL_ENV, NODE_OPTIONS, GOPATH, GOFLAGS, LANG, a variable a plugin's
#: server reads): a list of what to leave out, never of what to keep, so a variable nobody listed here
#: costs at most another daemon (:data:`~kandev_lsp.codedaemon.lifetime.MAX_DAEMONS` bounds them), never
#: an answer from the wrong environment.
VOLATILE_VARIABLES = frozenset(
    {
        # the shell's bookkeeping
        "_",
        "PWD",
        "OLDPWD",
        "SHLVL",
        # the terminal: its kind, size, window or pane
        "TERM",
        "COLORTERM",
        "COLUMNS",
        "LINES",
        "WINDOWID",
        "TMUX",
        "STY",
        "WINDOW",
        "VTE_VERSION",
        "WT_SESSION",
        "WT_PROFILE_ID",
        "LC_TERMINAL",
        "LC_TERMINAL_VERSION",
        # the desktop session
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "DBUS_SESSION_BUS_ADDRESS",
        "XDG_SEAT",
        "XDG_VTNR",
        # one command's (a systemd unit's run, a pytest test)
        "INVOCATION_ID",
        "JOURNAL_STREAM",
        "SYSTEMD_EXEC_PID",
        "PYTEST_CURRENT_TEST",
    }
)
#: Prefixes of the same kind of variables: terminal emulators' (``TERM_SESSION_ID``, ``TMUX_PANE``,
#: ``KITTY_WINDOW_ID``, VS Code's per-window ``VSCODE_GIT_IPC_HANDLE``), the ssh connection's
#: (``SSH_CLIENT``, ``SSH_CONNECTION``, ``SSH_TTY``, a forwarded agent's ``SSH_AUTH_SOCK``, new with each
#: connection), the login session's (``XDG_SESSION_ID``).
VOLATILE_PREFIXES = (
    "TERM_",
    "TMUX_",
    "KITTY_",
    "WEZTERM_",
    "ALACRITTY_",
    "KONSOLE_",
    "ITERM_",
    "GNOME_TERMINAL_",
    "VSCODE_",
    "SSH_",
    "XDG_SESSION_",
)
#: The longest socket path ``bind`` takes: ``sun_path`` is 108 bytes on Linux, its final NUL included.
SOCKET_PATH_MAX = 107


class NoPrivateFolder(Exception):
    """No private runtime folder (or one whose socket path is too long): the call answers one-shot."""


class DaemonFiles(NamedTuple):
    """One daemon's files in the runtime folder."""

    #: The Unix socket the daemon listens on (mode 0600).
    socket: str
    #: Held while a caller starts the daemon, so two first calls start one.
    lock: str
    #: The daemon's stderr: its log events (no paths, no source text), and a traceback if it crashed.
    log: str
    #: The daemon's owner token (``KANDEV_LSP_OWNER``): its successor sweeps whatever a crash left marked.
    owner: str

    @classmethod
    def of_socket(cls, socket: str) -> DaemonFiles:
        """The files of the daemon whose socket is ``socket`` (``<base>.sock``): ``<base>.lock``, ..."""
        base = socket.removesuffix(".sock")
        return cls(base + ".sock", base + ".lock", base + ".log", base + ".owner")


def runtime_folder(environ: Mapping[str, str] | None = None) -> str:
    """The private runtime folder (created when missing), see the module docstring.

    :raises NoPrivateFolder: the folder cannot be made, or is not private to this user.
    """
    environ = os.environ if environ is None else environ
    explicit = environ.get(RUNTIME_VARIABLE)
    xdg = environ.get("XDG_RUNTIME_DIR")
    if explicit:
        if not os.path.isabs(explicit):
            raise NoPrivateFolder(f"{RUNTIME_VARIABLE}={explicit} is not an absolute path")
        folder = explicit
    elif xdg and os.path.isabs(xdg):
        folder = os.path.join(xdg, "kandev-lsp")
    else:
        folder = os.path.join(environ.get("TMPDIR") or "/tmp", f"kandev-lsp-{os.getuid()}")
    ensure_private(folder)
    return folder


def ensure_private(folder: str) -> None:
    """Create ``folder`` owner-only if it is missing; refuse one that is not this user's private folder.

    :raises NoPrivateFolder: with what is wrong and what to do.
    """
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError as error:
        raise NoPrivateFolder(f"cannot create the runtime folder {folder}: {error.strerror}") from None
    try:
        info = os.lstat(folder)
    except OSError as error:
        raise NoPrivateFolder(f"cannot read the runtime folder {folder}: {error.strerror}") from None
    problem = _privacy_problem(info, os.getuid())
    if problem:
        raise NoPrivateFolder(
            f"the runtime folder {folder} {problem}; it must be a folder of your own with mode 0700 "
            f"(fix or remove it, or name another with {RUNTIME_VARIABLE})"
        )
    parent = os.path.dirname(os.path.abspath(folder))
    try:
        above = os.stat(parent)
    except OSError as error:
        raise NoPrivateFolder(
            f"cannot read {parent}, where the runtime folder is: {error.strerror}"
        ) from None
    problem = _parent_problem(above, os.getuid())
    if problem:
        raise NoPrivateFolder(
            f"the runtime folder {folder} lies in {parent}, {problem}, so the folder could be replaced by "
            f"someone else's; name one in a folder of your own with {RUNTIME_VARIABLE}"
        )


def _privacy_problem(info: os.stat_result, uid: int) -> str | None:
    """What keeps a folder with this ``lstat`` from being private to ``uid``, or None."""
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if info.st_uid != uid:
        return f"belongs to uid {info.st_uid}"
    if info.st_mode & 0o077:
        return f"has mode {stat.S_IMODE(info.st_mode):04o} (others may enter it)"
    return None


def _parent_problem(info: os.stat_result, uid: int) -> str | None:
    """What lets someone other than ``uid`` (and root) replace the entries of a folder with this ``stat``."""
    if info.st_uid not in (uid, 0):
        return f"which belongs to uid {info.st_uid}"
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        return f"which others may write (mode {stat.S_IMODE(info.st_mode):04o}, not sticky)"
    return None


def identity_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of the caller's environment that is a daemon's identity (the servers inherit it): all of
    it but the :data:`VOLATILE_VARIABLES` and :data:`VOLATILE_PREFIXES`."""
    return {
        key: value
        for key, value in environ.items()
        if key not in VOLATILE_VARIABLES and not key.startswith(VOLATILE_PREFIXES)
    }


#: How :func:`differences` names the parts of an identity (the environment's by ``$NAME``).
_PART_NAMES = {
    "roots": "the workspace roots",
    "env": "--env",
    "settings": "the settings file",
    "install": "--install",
    "readOnly": "--read-only",
    "disable": "--disable-tool",
}


def differences(one: Mapping[str, Any], other: Mapping[str, Any]) -> list[str]:
    """What differs between two identities, by name only, never by value (an environment holds tokens):
    ``$NAME`` for each environment variable, the flag or ``the settings file`` for the rest, ``the
    kandev-lsp installation`` for its interpreter, package, stamp and protocol."""
    found: list[str] = []
    mine, theirs = one.get("environment") or {}, other.get("environment") or {}
    found += [f"${name}" for name in sorted(set(mine) | set(theirs)) if mine.get(name) != theirs.get(name)]
    for key in sorted((set(one) | set(other)) - {"environment"}):
        name = _PART_NAMES.get(key, "the kandev-lsp installation")
        if one.get(key) != other.get(key) and name not in found:
            found.append(name)
    return found


def roots_prefix(roots: Sequence[str]) -> str:
    """The file-name prefix of every daemon serving these workspace roots (in this order)."""
    return f"code-{_crc(roots):08x}-"


def daemon_files(folder: str, identity: Mapping[str, Any]) -> DaemonFiles:
    """The files of the daemon serving ``identity`` (whose ``roots`` are its workspace roots).

    :raises NoPrivateFolder: the socket path would be longer than ``bind`` takes.
    """
    socket = os.path.join(folder, f"{roots_prefix(identity['roots'])}{_crc(identity):08x}.sock")
    if len(os.fsencode(socket)) > SOCKET_PATH_MAX:
        raise NoPrivateFolder(
            f"the socket path {socket} is longer than the {SOCKET_PATH_MAX} bytes a Unix socket takes "
            f"(name a shorter runtime folder with {RUNTIME_VARIABLE})"
        )
    return DaemonFiles.of_socket(socket)


def _crc(value: Any) -> int:
    return zlib.crc32(
        json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8", "surrogatepass")
    )
