"""Actionable notices for empty answers from a language without a server (B8.9, B8.10).

An empty list of references is a correct answer for an unused function and a useless one when no
language server runs for the file. The resolver already knows which case it is, cheaply and without
starting anything (:class:`~kandev_lsp.resolver.Resolution` with its ``reason`` and ``message``), so an
empty result of a language whose server is missing gets a notice saying why and what to do.

Where empty was already a failure (``code_hover``: "no hover" is never an answer), the notice replaces the
generic error; where empty is often right (navigate, hierarchy, symbols, inlay hints, diagnostics), the
result stays ``ok: true`` and gains ``notice`` (B8.10). Either way its ``status`` is :data:`NO_SERVER`
(:func:`no_server_answer`): an answer no server made must never read as a clean or empty one ("0 errors,
0 warnings" from a file nothing checked), and the one-line summary leads with the notice.

A server being installed (``--install``) or started is not missing: the call fails ``unavailable`` with
:func:`launching_message` (installing or starting, counted from when that began, not from the call). An
install that failed is not an empty answer either: :func:`install_failed_message` says what failed, quotes
the installer's last lines (:func:`install_output_lines`, bounded and redacted) and what to do, and when
the install will be tried again (B8.9, B8.10).
"""

from __future__ import annotations

import re
import time
from typing import Any, Final

from kandev_lsp.install.redaction import scrub_urls
from kandev_lsp.resolver import MissingReason, Resolution

__all__ = [
    "EMPTY_IS_FAILURE",
    "INSTALL_OUTPUT_BYTES",
    "INSTALL_OUTPUT_LINES",
    "NO_SERVER",
    "clock_time",
    "install_failed_message",
    "install_output_lines",
    "launching_message",
    "missing_server_notice",
    "no_server_answer",
]

#: Tools whose empty answer is a failure on its own.
EMPTY_IS_FAILURE: Final = frozenset({"code_hover"})
#: ``status`` of a read that no language server answered: none is installed for the file's language,
#: none could be started, no language owns the file, or (a workspace read) none runs yet.
NO_SERVER: Final = "no_server"
#: The installer's last lines quoted in a failed install's answer: at most this many lines...
INSTALL_OUTPUT_LINES: Final = 20
#: ...and at most this many bytes of them (the last lines are kept).
INSTALL_OUTPUT_BYTES: Final = 2048
#: The variables an MCP client's stdio launch passes on (the MCP SDK's default environment): nothing else
#: reaches kandev-lsp unless the client's config names it in ``env``.
MCP_CLIENT_VARIABLES: Final = "HOME, LOGNAME, PATH, SHELL, TERM, USER"
_SECRET_SETTING: Final = re.compile(r"(?i)(_authToken|_auth|_password|token|password)(\s*[=:]\s*)\S+")


def install_output_lines(output: str) -> list[str]:
    """The installer's last non-empty lines for an answer (pure): at most :data:`INSTALL_OUTPUT_LINES`
    lines and :data:`INSTALL_OUTPUT_BYTES` bytes, the newest kept; URLs lose their user info and query,
    ``_authToken=...``-like settings their value (install errors already redact URLs the same way)."""
    kept: list[str] = []
    size = 0
    for line in reversed([line.rstrip() for line in output.splitlines() if line.strip()]):
        line = _SECRET_SETTING.sub(r"\1\2<redacted>", scrub_urls(line))
        size += len(line.encode("utf-8")) + 1
        if len(kept) == INSTALL_OUTPUT_LINES or size > INSTALL_OUTPUT_BYTES:
            break
        kept.append(line)
    return kept[::-1]


def clock_time(wall: float) -> str:
    """``20:01:02 UTC``: when something began or will happen, for an agent that has no monotonic clock."""
    return time.strftime("%H:%M:%S UTC", time.gmtime(wall))


def launching_message(
    command: str,
    language: str,
    *,
    installing: bool,
    installer: str | None,
    elapsed: float,
    since: float,
) -> str:
    """Why a call found no server yet: being installed (``--install``) or still starting, ``elapsed``
    seconds since that began at wall-clock ``since`` (counted from the install's or the start's beginning,
    never the call's)."""
    if installing:
        what = f" ({installer})" if installer else ""
        return (
            f"installing {command}{what} for {language}: {elapsed:.0f} s so far (started at "
            f"{clock_time(since)}); ask again in a few seconds"
        )
    return (
        f"the {command} server is still starting ({elapsed:.1f} s so far, started at {clock_time(since)}); "
        "ask again in a few seconds"
    )


def install_failed_message(
    command: str,
    language: str,
    *,
    installer: str | None,
    error: str,
    lines: list[str],
    failed: float,
    retry: float,
    now: float,
) -> str:
    """A failed install's answer: what failed (``error``, the install's first line), the installer's last
    ``lines``, what to do (the MCP client's environment, ``kandev-lsp install``), and when it is tried again
    (wall-clock ``retry``; ``failed`` and ``now`` are wall-clock too)."""
    what = f" ({installer})" if installer else ""
    quoted = "".join(f"\n    {line}" for line in lines) if lines else " (none)"
    wait = max(0.0, retry - now)
    return (
        f"installing {command}{what} for {language} failed at {clock_time(failed)}: {error.strip()}\n"
        f"  the installer's last lines:{quoted}\n"
        f"What to do: an MCP client starts kandev-lsp with only {MCP_CLIENT_VARIABLES} from its own "
        "environment, so network, proxy and certificate variables (HTTPS_PROXY, NO_PROXY, "
        "NODE_EXTRA_CA_CERTS, npm_config_*) must be named in the `env` of the client's config for "
        f"kandev-lsp; `kandev-lsp install {language}` in the same environment shows the whole output. "
        f"The install is tried again at {clock_time(retry)} (in {wait:.0f} s); until then every call "
        "answers this failure."
    )


def missing_server_notice(resolution: Resolution) -> str | None:
    """Why ``resolution``'s language has no server, and the next step; None when the server was found."""
    if resolution.found:
        return None
    language = resolution.language
    detail = f" ({resolution.message.rstrip('.')})" if resolution.message else ""
    if resolution.reason is MissingReason.INSTALLABLE_NOT_REQUESTED:
        # The resolver's message ends in the stream's advice (autoInstall=1), which means nothing to an
        # agent's tools: the advice here is theirs. `doctor` shows where the server was looked for.
        return (
            f"No {language} language server is installed, so this answer may be empty for lack of a server, "
            f"not of code. Install it with `kandev-lsp install {language}` (with the HOME the tools run "
            f"with; `kandev-lsp doctor` shows where servers were looked for), start the tools with "
            f"--install, or add {language!r} to the lsp_auto_install_languages setting."
        )
    if resolution.reason is MissingReason.UNSUPPORTED_LANGUAGE:
        return f"No plugin provides the {language} language, so no server answered{detail}."
    return (
        f"No {language} language server was found and none can be installed here{detail}; "
        "install one on the task's PATH, then ask again."
    )


def no_server_answer(tool: str, empty: dict[str, Any], notice: str) -> dict[str, Any]:
    """The answer of ``tool`` when no server answered: its ``empty`` result with ``status``
    :data:`NO_SERVER` and the ``notice`` (B8.10: ``ok: true``), or ``ok: false`` with the notice as the
    error for a tool whose empty answer is a failure (:data:`EMPTY_IS_FAILURE`)."""
    if tool in EMPTY_IS_FAILURE:
        return {"ok": False, "status": NO_SERVER, "error": notice}
    return {"ok": True, **empty, "status": NO_SERVER, "notice": notice}
