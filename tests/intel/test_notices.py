"""Notices for empty answers of a language without a server (B8.9, B8.10), from the resolver's reason."""

from __future__ import annotations

import pytest
from kandev_lsp.intel.runtime.notices import missing_server_notice, no_server_answer
from kandev_lsp.resolver import MissingReason, Resolution


def _missing(reason: MissingReason, message: str = "gopls is not on PATH.") -> Resolution:
    return Resolution(language="go", found=False, reason=reason, message=message)


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (
            MissingReason.INSTALLABLE_NOT_REQUESTED,
            "No go language server is installed, so this answer may be empty for lack of a server, not of code. "
            "Install it with `kandev-lsp install go` (with the HOME the tools run with; `kandev-lsp doctor` "
            "shows where servers were looked for), start the tools with --install, or add 'go' to the "
            "lsp_auto_install_languages setting.",
        ),
        (
            MissingReason.NO_INSTALLER,
            "No go language server was found and none can be installed here (gopls is not on PATH); install one "
            "on the task's PATH, then ask again.",
        ),
        (MissingReason.CACHE_UNAVAILABLE, "No go language server was found and none can be installed here"),
        (MissingReason.UNSUPPORTED_LANGUAGE, "No plugin provides the go language, so no server answered"),
    ],
)
def test_notice_per_reason(reason: MissingReason, expected: str) -> None:
    notice = missing_server_notice(_missing(reason))
    assert notice is not None and notice.startswith(expected)


def test_the_tools_notice_never_gives_the_streams_advice() -> None:
    """The resolver's message for an installable server ends in the stream's `autoInstall=1`: an agent's
    tools cannot use it (a user trial followed it in vain)."""
    message = "pyright-langserver was not found on PATH; it can be installed. Run ... or connect with autoInstall=1."
    notice = missing_server_notice(_missing(MissingReason.INSTALLABLE_NOT_REQUESTED, message))
    assert notice is not None and "autoInstall" not in notice and "--install" in notice


def test_no_notice_when_the_server_was_found() -> None:
    found = Resolution(language="go", found=True, executable="/usr/bin/gopls", argv=("/usr/bin/gopls",))
    assert missing_server_notice(found) is None


def test_empty_hover_fails_with_the_notice_and_other_reads_stay_ok() -> None:
    notice = "No go language server is installed"
    assert no_server_answer("code_hover", {"text": ""}, notice) == {
        "ok": False,
        "status": "no_server",
        "error": notice,
    }
    navigate = {"kind": "references", "files": [], "totalFound": 0}
    assert no_server_answer("code_navigate", navigate, notice) == {
        "ok": True,
        **navigate,
        "status": "no_server",
        "notice": notice,
    }
