"""Error classes, named after what went wrong.

Each error a user can hit carries what happened and what to do next in its message, and in
:attr:`KandevLspError.failure` the kind of failure it is, which every command turns into the same exit
status (:class:`kandev_lsp.codes.ExitStatus`).
"""

from __future__ import annotations


class KandevLspError(Exception):
    """Base class for errors kandev-lsp reports to users."""

    #: The kind of failure (a :class:`~kandev_lsp.codes.ExitStatus` name, lower-case): subclasses that
    #: are another kind than a plain reported failure say so.
    failure: str = "failed"


class UnknownLanguageError(KandevLspError):
    """No loaded plugin declares the requested language."""

    failure = "unsupported_language"

    def __init__(self, language: str, known: list[str]) -> None:
        self.language = language
        self.known = known
        known_text = ", ".join(known) or "none"
        super().__init__(
            f"unknown language {language!r}; languages provided by the loaded plugins: {known_text}. "
            "Run `kandev-lsp plugins` to see which plugins loaded."
        )


class SettingsError(KandevLspError):
    """The user's settings file or a value in it is invalid."""


class TaskEnvironmentError(KandevLspError):
    """The task environment given to kandev-lsp could not be read."""
