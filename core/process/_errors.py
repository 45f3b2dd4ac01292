"""Errors of owned processes, named after what went wrong."""

from __future__ import annotations

from collections.abc import Sequence

from kandev_lsp.errors import KandevLspError

#: How much of a process's output an error message quotes (the full capped output is an attribute).
_QUOTED_OUTPUT_CHARS = 2000


class ProcessStartError(KandevLspError):
    """The argv could not be started: the message says which command, why, and what to do."""

    def __init__(self, command: str, reason: str, hint: str = "") -> None:
        self.command = command
        self.reason = reason
        self.hint = hint
        message = f"cannot start {command!r}: {reason}"
        super().__init__(f"{message}. {hint}" if hint else message)


class CommandNotFoundError(ProcessStartError):
    """A bare command name is on no usable entry of the task's PATH, or an absolute path does not exist."""

    def __init__(self, command: str, reason: str, hint: str, searched: Sequence[str] = ()) -> None:
        super().__init__(command, reason, hint)
        self.searched = tuple(searched)


class ProcessTimeout(KandevLspError):
    """A run did not finish within its timeout; its whole process tree was stopped."""

    def __init__(self, argv: Sequence[str], timeout: float, output: str, truncated: bool) -> None:
        self.argv = tuple(argv)
        self.timeout = timeout
        self.output = output
        self.truncated = truncated
        message = (
            f"{self.argv[0]!r} did not finish within {timeout:g} s and was stopped with all its "
            "child processes; raise the timeout if it is just slow, or check the output for a prompt "
            "or a stalled download"
        )
        quoted = quote_output(output)
        super().__init__(
            f"{message}. Last output:\n{quoted}" if quoted else f"{message} (it printed nothing)"
        )


def quote_output(output: str, limit: int = _QUOTED_OUTPUT_CHARS) -> str:
    """The end of ``output``, at most ``limit`` characters, for an error message."""
    text = output.rstrip()
    if len(text) <= limit:
        return text
    return "..." + text[-limit:]
