"""What can go wrong with an install, as small error classes.

Each message says what failed, shows the tail of the installer's output when there is one, and says what
to do next. :class:`InstallCancelled` is deliberately not an :class:`InstallError`: the stream closes a
cancelled install with 1001 and a failed one with 4003, and a broad ``except InstallError`` must not
turn one into the other.
"""

from __future__ import annotations

from kandev_lsp.errors import KandevLspError

#: How many lines of an installer's output an error message quotes.
TAIL_LINES = 20


def output_tail(output: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` non-empty lines of ``output``, for an error message."""
    kept = [line.rstrip() for line in output.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def tool_not_found(command: str, reason: str) -> str:
    """``npm was not found on the task's PATH ...``: what the one lookup reported for an installer's tool
    (the resolver's "not installable" and the install's failure say it the same way)."""
    from kandev_lsp.executables import IN_WORKSPACE

    where = f" outside the task workspace ({reason})" if IN_WORKSPACE in reason else ""
    return f"{command} was not found on the task's PATH{where}"


class InstallError(KandevLspError):
    """An install failed; the previous version (if any) is still the current one.

    :param language: the language whose server was being installed.
    :param output: the tail of the installer's output, also quoted in the message.
    """

    failure = "install_failed"

    def __init__(self, language: str, message: str, *, output: str = "") -> None:
        self.language = language
        self.output = output_tail(output)
        text = message
        if self.output:
            quoted = "\n".join(f"    {line}" for line in self.output.splitlines())
            text = f"{message}\n  last lines of output:\n{quoted}"
        super().__init__(text)


class InstallRequestError(InstallError):
    """The request itself is wrong (a ``--version`` that is not an exact version this kind can use, a
    ``--sha256`` that is not a digest or given to a kind that downloads no release): nothing was tried,
    so the command line is at fault (exit 2, as for any usage error)."""

    failure = "usage"


class NoInstallerError(InstallError):
    """Nothing can install this server here: a manual-only language, no release asset for the host, or
    the managed cache is disabled because the task's HOME is not an absolute path."""

    failure = "no_installer"


class CacheUnavailableError(NoInstallerError):
    """The managed cache cannot take an install: the task's HOME is not absolute, or the cache lies
    inside the workspace (the resolver's ``cache_unavailable``)."""

    failure = "cache_unavailable"


class ToolchainMissingError(NoInstallerError):
    """The toolchain an installer runs (npm and node, go) is not on the task's PATH: nothing can install
    the server for this task, as the resolver says (``no_installer``: exit 11, close 4007)."""


class VerificationError(InstallError):
    """The installed server did not start or answer; it was not made current."""


class InstallCancelled(KandevLspError):
    """The install was cancelled; nothing was switched and no staging files are left."""

    failure = "interrupted"

    def __init__(self, language: str, message: str | None = None) -> None:
        self.language = language
        super().__init__(
            message or f"the install of the {language} server was cancelled; nothing was changed"
        )


def digest_not_applicable(language: str, kind: str) -> InstallError:
    """The error for ``--sha256`` given to a kind that verifies its own packages (npm, go): refused,
    never silently ignored."""
    return InstallRequestError(
        language,
        f"a SHA-256 digest only applies to release downloads; {language} installs with {kind}, which "
        "verifies its own packages",
    )
