"""Actionable notices for empty answers from a language without a server (B8.9, B8.10).

An empty list of references is a correct answer for an unused function and a useless one when no
language server runs for the file. The resolver already knows which case it is, cheaply and without
starting anything (:class:`~kandev_lsp.resolver.Resolution` with its ``reason`` and ``message``), so an
empty result of a language whose server is missing gets a notice saying why and what to do.

Where empty was already a failure (``code_hover``: "no hover" is never an answer), the notice replaces the
generic error; where empty is often right (navigate, hierarchy, symbols, inlay hints, diagnostics), the
result stays ``ok: true`` and gains ``notice`` (B8.10).
"""

from __future__ import annotations

from typing import Any, Final

from kandev_lsp.resolver import MissingReason, Resolution

__all__ = ["EMPTY_IS_FAILURE", "apply_notice", "missing_server_notice"]

#: Tools whose empty answer is a failure on its own.
EMPTY_IS_FAILURE: Final = frozenset({"code_hover"})


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


def apply_notice(tool: str, result: dict[str, Any], notice: str | None, *, empty: bool) -> dict[str, Any]:
    """``result`` with the notice applied when it is empty (B8.10); unchanged otherwise."""
    if notice is None or not empty:
        return result
    if tool in EMPTY_IS_FAILURE:
        return {"ok": False, "error": notice}
    return {**result, "notice": notice}
