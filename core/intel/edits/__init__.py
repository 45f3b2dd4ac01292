"""Safe edits (issue 11): the workspace-edit applier shared by every mutating tool (B3.*).

``plan`` validates an LSP WorkspaceEdit into an :class:`EditPlan` (pure), ``preview`` shows it and says
whether it needs explicit approval (pure), ``commit`` writes it all or nothing (I/O). The coordinator
(``coordinator``, ``transactions``, ``receipts``) serializes mutations per workspace around them (B7.*).
"""

from kandev_lsp.intel.edits.commit import CommitOutcome, DiskFileSystem, FileSystem, commit, disk_text
from kandev_lsp.intel.edits.plan import EditPlan, FileEdit, ResourceOp, apply_text_edits, plan_edit
from kandev_lsp.intel.edits.preview import Approval, approval_for, preview

__all__ = [
    "Approval",
    "CommitOutcome",
    "DiskFileSystem",
    "EditPlan",
    "FileEdit",
    "FileSystem",
    "ResourceOp",
    "apply_text_edits",
    "approval_for",
    "commit",
    "disk_text",
    "plan_edit",
    "preview",
]
