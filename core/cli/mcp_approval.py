"""Approvals of the MCP server's mutating tools, headless (issue 11; B2.4-B2.6, B3.5, B7.4).

Pure: what the MCP layer shows a person and how it reads their answer, with no SDK session in sight
(:mod:`kandev_lsp.cli.mcp` does the I/O). The rules:

* A client that declared form elicitation is asked, during the tool call, with the edit's preview (files,
  edits, the reasons review is needed, a bounded diff) and one optional field, ``approveAll``. ``accept``
  approves, ``decline`` refuses (nothing is written), ``cancel`` (dismissed without a choice) and any
  failure to ask answer ``None``: the coordinator then parks the edit as a transaction. The model's
  ``{transactionId, approve: true}`` for it is no approval: the person is asked again (the same question)
  and only their accept applies; their decline discards it, another ``None`` leaves it parked. (For a
  client without elicitation the model's second step is the approval: the headless two-step flow.)
* ``approveAll`` (or a result's ``autoApproveAll``) is remembered for the rest of that MCP session and
  becomes ``IntelContext.auto_approve`` on later calls, so a rename + organize imports + format is not
  prompted at every step (B7.4). The model never sees it (B2.6: the dispatcher strips it from results).
  It does not cover resource operations (create / rename / delete files) or commands whose effect cannot
  be previewed: the coordinator asks for those whatever ``auto_approve`` says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "APPROVAL_SCHEMA",
    "MAX_MESSAGE_DIFF",
    "SessionApprovals",
    "approval_message",
    "read_answer",
    "supports_form_elicitation",
]

#: Characters of unified diff an elicitation message carries (the rest is said to be cut).
MAX_MESSAGE_DIFF: Final = 16 * 1024

#: The form the client shows: one optional checkbox. Elicitation schemas are flat, primitive properties.
APPROVAL_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "approveAll": {
            "type": "boolean",
            "title": "Approve all later edits in this session",
            "description": "Apply the next previewable edits of this MCP session without asking. File "
            "creations, renames, deletions and commands whose effect cannot be previewed are still asked.",
            "default": False,
        }
    },
}


@dataclass
class SessionApprovals:
    """The approval state of one MCP session (one ``kandev-lsp mcp`` process on stdio).

    :param auto_approve: previewable edits apply without asking: set by ``--auto-approve`` at start, or
        by an "approve all" answer during the session. Never reset by the model.
    """

    auto_approve: bool = False
    #: How many times the person was asked (for logs and tests; never shown to the model).
    asked: int = 0

    def remember_all(self) -> None:
        """An "approve all" answer: later previewable edits of this session are not prompted (B7.4)."""
        self.auto_approve = True


def supports_form_elicitation(elicitation: Any) -> bool:
    """Whether a client's declared ``elicitation`` capability covers form mode.

    ``None`` (not declared) is no. An empty object (``{}``, clients before form/url modes existed) means
    form, as the specification says; otherwise the ``form`` member must be present.
    """
    if elicitation is None:
        return False
    form = getattr(elicitation, "form", None)
    url = getattr(elicitation, "url", None)
    return form is not None or url is None


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    cut = cut[: cut.rfind("\n") + 1] or cut
    return cut + f"... (diff cut at {limit} characters of {len(text)}; the edit is applied whole)\n"


def approval_message(message: str, preview: Mapping[str, Any], *, max_diff: int = MAX_MESSAGE_DIFF) -> str:
    """The text a person reads before approving: the coordinator's question (or, without one, the counts),
    the reasons the edit needs review, resource operations, touched files and the (bounded) unified diff
    (B3.2-B3.4)."""
    lines = [message.strip()] if message.strip() else []
    files, edits = preview.get("files"), preview.get("edits")
    if not lines and isinstance(files, int) and isinstance(edits, int):
        lines.append(f"{edits} edit{'s' if edits != 1 else ''} in {files} file{'s' if files != 1 else ''}.")
    reasons = preview.get("reasons")
    if isinstance(reasons, (list, tuple)) and reasons:
        lines.append("Needs your review: " + "; ".join(str(reason) for reason in reasons) + ".")
    resources = preview.get("resources")
    if isinstance(resources, (list, tuple)) and resources:
        lines.append("File operations:")
        lines.extend(f"  - {_resource_line(op)}" for op in resources)
    touched = preview.get("touched")
    if isinstance(touched, (list, tuple)) and touched:
        shown = [str(path) for path in touched[:20]]
        more = f" and {len(touched) - 20} more" if len(touched) > 20 else ""
        lines.append("Files: " + ", ".join(shown) + more)
    if preview.get("incompleteDiff") or preview.get("incomplete_diff"):
        lines.append("The diff is incomplete: a command runs whose effect cannot be previewed.")
    diff = preview.get("diff")
    if isinstance(diff, str) and diff:
        lines.append("")
        lines.append(_cut(diff, max_diff).rstrip("\n"))
    return "\n".join(lines)


def _resource_line(op: Any) -> str:
    """``delete src/old.py (destructive)``, ``rename a.py -> b.py (would overwrite)``."""
    if not isinstance(op, Mapping):
        return str(op)
    text = f"{op.get('kind', 'operation')} {op.get('path', '')}"
    if op.get("newPath"):
        text += f" -> {op['newPath']}"
    notes = [label for key, label in _RESOURCE_NOTES if op.get(key)]
    options = op.get("options")
    if isinstance(options, Mapping):
        notes += [str(name) for name, value in options.items() if value]
    return text + (f" ({', '.join(notes)})" if notes else "")


_RESOURCE_NOTES: Final = (
    ("destructive", "destructive"),
    ("wouldOverwrite", "would overwrite"),
    ("directory", "a folder"),
    ("skipped", "skipped"),
)


def read_answer(action: str, content: Mapping[str, Any] | None) -> tuple[bool | None, bool]:
    """An elicitation answer as ``(decision, approve_all)``: accept -> True, decline -> False, cancel
    or anything else -> None (the coordinator parks the edit, or leaves it parked: no approval).
    ``approve_all`` only counts with an accept."""
    if action == "accept":
        return True, bool(content and content.get("approveAll") is True)
    if action == "decline":
        return False, False
    return None, False
