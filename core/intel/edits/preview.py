"""What an edit will do, for the agent or the user approving it: counts, a bounded diff, resource
operations and why approval is needed (B3.2-B3.5, B3.8). Pure: it reads only the :class:`EditPlan`.

B3.5: a text diff shows everything a text edit does, so text edits can follow the session's auto-approve;
what the diff cannot show needs explicit approval whatever auto-approve says: resource operations
(every create, rename and delete, destructive or overwrite-capable ones named as such), an edit made of
resource operations only, commands (their effect is unknown until they run), changes the server marks
``needsConfirmation``, and snippets applied as plain text. Each reason is a sentence a person can judge.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from kandev_lsp.intel.edits.plan import EditPlan, FileEdit, ResourceOp

__all__ = ["Approval", "approval_for", "preview", "resource_summary"]

#: The default bound of a preview's diff (UTF-8 bytes), so a rename over a thousand files stays readable.
MAX_DIFF_BYTES: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class Approval:
    """Whether the edit needs explicit approval whatever auto-approve says (B3.5, B7.4), and why."""

    required: bool
    #: One sentence per reason, e.g. "deletes src/a.py", "may overwrite src/b.py", "runs a command".
    reasons: tuple[str, ...]


def _resource_reason(op: ResourceOp) -> str:
    what = "folder" if op.directory else "file"
    if op.kind == "create":
        if op.would_overwrite:
            return f"creates {op.file.display} over the existing file (its content is lost)"
        if op.overwrite:
            return f"creates {op.file.display} (may overwrite it if it appears)"
        return f"creates {op.file.display}"
    if op.kind == "rename":
        assert op.new_file is not None
        if op.would_overwrite:
            return f"renames {op.file.display} to {op.new_file.display}, overwriting the existing file"
        if op.overwrite:
            return f"renames {op.file.display} to {op.new_file.display} (may overwrite it if it appears)"
        return f"renames {op.file.display} to {op.new_file.display}"
    recursive = " and everything in it" if op.directory and op.recursive else ""
    return f"deletes the {what} {op.file.display}{recursive}"


def approval_for(plan: EditPlan, *, commands: int = 0) -> Approval:
    """Whether ``plan`` (plus ``commands`` LSP commands to run after it) needs explicit approval (B3.5)."""
    reasons: list[str] = []
    active = [op for op in plan.resources if not op.skipped]
    if active and not plan.files and not commands:
        reasons.append("changes files without any text diff to preview (resource operations only)")
    reasons.extend(_resource_reason(op) for op in active)
    if commands:
        noun = "command" if commands == 1 else "commands"
        reasons.append(f"runs {commands} server {noun} whose effects cannot be previewed")
    reasons.extend(plan.notes)
    return Approval(bool(reasons), tuple(reasons))


def resource_summary(op: ResourceOp) -> dict[str, Any]:
    """One resource operation as the preview and the receipt show it (B3.4, B3.8)."""
    entry: dict[str, Any] = {"kind": op.kind, "path": op.file.display}
    if op.new_file is not None:
        entry["newPath"] = op.new_file.display
    entry["exists"] = op.exists
    if op.kind == "rename":
        entry["targetExists"] = op.target_exists
    if op.directory:
        entry["directory"] = True
    options = {
        "overwrite": op.overwrite,
        "ignoreIfExists": op.ignore_if_exists,
        "recursive": op.recursive,
        "ignoreIfNotExists": op.ignore_if_not_exists,
    }
    entry["options"] = {name: True for name, value in options.items() if value}
    entry["wouldOverwrite"] = op.would_overwrite
    entry["destructive"] = op.kind == "delete" or op.would_overwrite
    if op.skipped:
        entry["skipped"] = True
    if op.annotation is not None:
        entry["annotationId"] = op.annotation
    return entry


def _diff_lines(file_edit: FileEdit, created: bool) -> Iterator[str]:
    before = file_edit.before.splitlines(keepends=True)
    after = file_edit.after.splitlines(keepends=True)
    old = "/dev/null" if created else f"a/{file_edit.file.display}"
    for line in difflib.unified_diff(before, after, old, f"b/{file_edit.file.display}", n=3):
        if line.endswith(("\n", "\r")):
            yield line
        else:
            yield line + "\n\\ No newline at end of file\n"


def _bounded_diff(plan: EditPlan, max_bytes: int) -> tuple[str, list[str]]:
    """The unified diffs of every file within ``max_bytes``; the files whose diff was cut or left out."""
    created = {op.file.absolute for op in plan.resources if op.kind == "create" and not op.exists}
    out: list[str] = []
    used = 0
    cut: list[str] = []
    for file_edit in plan.files:
        if used >= max_bytes:
            cut.append(file_edit.file.display)
            continue
        shown = total = 0
        for line in _diff_lines(file_edit, file_edit.file.absolute in created):
            size = len(line.encode("utf-8", errors="surrogatepass"))
            total += size
            if used + size <= max_bytes:
                out.append(line)
                used += size
                shown += size
            else:
                used = max_bytes  # nothing more of this or later files
        if shown < total:
            cut.append(file_edit.file.display)
            out.append(f"[diff of {file_edit.file.display} cut: {shown} of {total} bytes shown]\n")
    if cut:
        out.append(
            f"[diff cut at {max_bytes} bytes: {len(cut)} of {len(plan.files)} files not shown in full: "
            f"{', '.join(cut)}]\n"
        )
    return "".join(out), cut


def preview(plan: EditPlan, *, max_diff_bytes: int = MAX_DIFF_BYTES) -> dict[str, Any]:
    """The plan as the approver sees it (B3.2-B3.4, B3.8).

    ``{"files", "edits", "diff", "diffCut", "resources", "touched"}`` (+ ``"notes"`` when the plan has
    some): ``files`` counts text-edited files, ``edits`` TextEdits, ``diff`` is the unified diff with
    workspace-relative paths, bounded to ``max_diff_bytes`` and saying so when cut (``diffCut`` lists the
    files not shown in full), ``resources`` the operations with what inspection found, ``touched`` every
    affected path.
    """
    diff, cut = _bounded_diff(plan, max_diff_bytes)
    result: dict[str, Any] = {
        "files": len(plan.files),
        "edits": plan.text_edit_count(),
        "diff": diff,
        "diffCut": cut,
        "resources": [resource_summary(op) for op in plan.resources],
        "touched": [file.display for file in plan.touched()],
    }
    if plan.notes:
        result["notes"] = list(plan.notes)
    return result
