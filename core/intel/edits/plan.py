"""Turning an LSP ``WorkspaceEdit`` into an :class:`EditPlan`: every file's text before and after, and the
resource operations, validated before anything is shown or written (B3.1, B3.4, B3.6, B8.11).

One applier serves every mutating tool (B3.1), so this module accepts everything a server may send: the
``changes`` map and ``documentChanges`` (``TextDocumentEdit`` with its document version, ``CreateFile``,
``RenameFile``, ``DeleteFile`` with their options), ``AnnotatedTextEdit`` with ``changeAnnotations``, and the
3.18 ``SnippetTextEdit`` (applied as plain text; the plan says so, and the approval asks for it). What it
does not know fails closed (a :class:`~kandev_lsp.intel.errors.EditRejected` naming the item) instead of
being guessed.

Every URI goes through :meth:`Workspace.from_uri` (B8.11): a non-``file:`` URI, a path outside every root
or a symlink out of the workspace refuses the whole edit. Text edits follow LSP semantics: all ranges of
one ``TextEdit[]`` refer to the text before any of them, inserts at one position keep their order, and
overlapping ranges are an error naming both. ``documentChanges`` run in order, so several
``TextDocumentEdit`` for one file apply one after the other, and edits to a file created or renamed earlier
in the edit apply to its new place.

The module does no I/O of its own: text comes through the ``read_text`` callable and whether a path exists
through ``probe`` (the disk by default), so the planning rules are tested on plain values.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from kandev_lsp.intel.errors import EditRejected, IntelError, PathOutsideWorkspace
from kandev_lsp.intel.files.workspace import Workspace, WorkspaceFile
from kandev_lsp.lsp.positions import LineIndex, PositionEncoding

__all__ = [
    "EditPlan",
    "FileEdit",
    "PathKind",
    "ResourceOp",
    "apply_text_edits",
    "disk_probe",
    "plan_edit",
    "text_digest",
]

#: What is at a path: the applier creates and edits files, renames and deletes files or folders.
PathKind = Literal["file", "directory", "missing"]

#: ``TextEdit.insertTextFormat`` value of a snippet (rust-analyzer's pre-3.18 ``SnippetTextEdit``).
_SNIPPET_FORMAT: Final = 2


@dataclass(frozen=True, slots=True)
class FileEdit:
    """Every text change to one file, after validation."""

    #: Inside an open root (B8.11); where the new text goes (after the plan's renames).
    file: WorkspaceFile
    #: The text the edits were applied to ("" for a file the edit creates).
    before: str
    #: The text once applied.
    after: str
    #: Number of TextEdits applied to the file.
    edits: int
    #: The document version the edit was made against (``TextDocumentEdit``), or None.
    version: int | None


@dataclass(frozen=True, slots=True)
class ResourceOp:
    """A ``CreateFile``, ``RenameFile`` or ``DeleteFile`` with its options and what planning saw (B3.4).

    ``exists``/``target_exists``/``directory`` are the inspection the preview reports and the commit
    rechecks: the state of the paths as this operation would find them (earlier operations of the same
    edit included).
    """

    kind: Literal["create", "rename", "delete"]
    #: The target (create/delete) or the source (rename).
    file: WorkspaceFile
    #: The rename's destination; None for create and delete.
    new_file: WorkspaceFile | None
    overwrite: bool
    ignore_if_exists: bool
    #: ``DeleteFile`` ``options.recursive``: a non-empty folder is deleted only with it.
    recursive: bool
    ignore_if_not_exists: bool = False
    #: Whether ``file`` exists when the operation runs.
    exists: bool = False
    #: Rename only: whether ``new_file`` exists when the operation runs.
    target_exists: bool = False
    #: Whether ``file`` is a folder (rename and delete of folders).
    directory: bool = False
    #: The ``changeAnnotations`` id the server attached, if any.
    annotation: str | None = None

    @property
    def would_overwrite(self) -> bool:
        """Whether the operation replaces something that exists (a create or rename with ``overwrite``)."""
        if self.kind == "create":
            return self.exists and self.overwrite
        if self.kind == "rename":
            return self.target_exists and self.overwrite
        return False

    @property
    def skipped(self) -> bool:
        """Whether the options make the operation a no-op (``ignoreIfExists``/``ignoreIfNotExists``)."""
        if self.kind == "create":
            return self.exists and not self.overwrite and self.ignore_if_exists
        if self.kind == "rename":
            return self.target_exists and not self.overwrite and self.ignore_if_exists
        return not self.exists and self.ignore_if_not_exists


@dataclass(frozen=True, slots=True)
class EditPlan:
    """A validated WorkspaceEdit: what the preview shows, the approval judges and the commit writes."""

    #: Text changes, one per final file, in a stable order (by display path).
    files: tuple[FileEdit, ...]
    #: Resource operations in the order of the edit (the commit runs them in this order, before the text).
    resources: tuple[ResourceOp, ...]
    #: The edit's ``changeAnnotations``; ``needsConfirmation`` ones force approval (B3.5).
    annotations: Mapping[str, Any]
    #: The text each existing file had when planned, by absolute path: what the commit rechecks (B3.6).
    read: Mapping[str, str] = field(default_factory=dict)
    #: Why the plan is opaque beyond its diff (snippets applied as text, changes the server wants
    #: confirmed): each forces explicit approval (B3.5).
    notes: tuple[str, ...] = ()

    def touched(self) -> tuple[WorkspaceFile, ...]:
        """Every file text-edited or resource-affected, each once (text edits first, then resources)."""
        seen: dict[str, WorkspaceFile] = {}
        for file_edit in self.files:
            seen.setdefault(file_edit.file.absolute, file_edit.file)
        for op in self.resources:
            seen.setdefault(op.file.absolute, op.file)
            if op.new_file is not None:
                seen.setdefault(op.new_file.absolute, op.new_file)
        return tuple(seen.values())

    def text_edit_count(self) -> int:
        """The number of TextEdits over all files (B3.2)."""
        return sum(file_edit.edits for file_edit in self.files)

    def digests(self) -> dict[str, str]:
        """Absolute path -> sha256 hex of the UTF-8 bytes of the text the plan was made from."""
        return {path: text_digest(text) for path, text in self.read.items()}

    @property
    def empty(self) -> bool:
        """Whether the plan changes nothing (no text edit, no resource operation)."""
        return not self.files and not self.resources


def text_digest(text: str) -> str:
    """The sha256 hex of ``text``'s UTF-8 bytes: what the commit compares with the bytes on disk."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def disk_probe(path: str) -> PathKind:
    """What is at ``path`` on disk, without following a final symbolic link."""
    try:
        info = os.lstat(path)
    except OSError:
        return "missing"
    return "directory" if stat.S_ISDIR(info.st_mode) else "file"


# -- text edits -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _TextChange:
    index: int
    start: tuple[int, int]
    end: tuple[int, int]
    text: str
    snippet: bool
    annotation: str | None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _position(value: object, what: str) -> tuple[int, int]:
    if isinstance(value, Mapping):
        line, character = _int(value.get("line")), _int(value.get("character"))
        if line is not None and character is not None:
            return line, character
    raise EditRejected(f"malformed text edit: {what} is not a position {{line, character}}: {value!r}")


def _text_change(index: int, edit: object) -> _TextChange:
    if not isinstance(edit, Mapping):
        raise EditRejected(f"malformed text edit #{index + 1}: not an object")
    range_ = edit.get("range")
    if not isinstance(range_, Mapping):
        raise EditRejected(f"malformed text edit #{index + 1}: no range")
    start = _position(range_.get("start"), f"edit #{index + 1} range.start")
    end = _position(range_.get("end"), f"edit #{index + 1} range.end")
    if end < start:
        raise EditRejected(
            f"malformed text edit #{index + 1}: its range ends before it starts ({_show(start, end)})"
        )
    annotation = edit.get("annotationId")
    if annotation is not None and not isinstance(annotation, str):
        raise EditRejected(f"malformed text edit #{index + 1}: annotationId is not a string")
    snippet = edit.get("snippet")
    if snippet is not None:  # LSP 3.18 SnippetTextEdit
        value = snippet.get("value") if isinstance(snippet, Mapping) else None
        if not isinstance(value, str):
            raise EditRejected(f"malformed snippet edit #{index + 1}: snippet.value is not a string")
        return _TextChange(index, start, end, snippet_text(value), True, annotation)
    text = edit.get("newText")
    if not isinstance(text, str):
        raise EditRejected(f"malformed text edit #{index + 1}: newText is not a string")
    if edit.get("insertTextFormat") == _SNIPPET_FORMAT:
        return _TextChange(index, start, end, snippet_text(text), True, annotation)
    return _TextChange(index, start, end, text, False, annotation)


def _show(start: tuple[int, int], end: tuple[int, int]) -> str:
    return f"{start[0]}:{start[1]}-{end[0]}:{end[1]}"


def _offset(index: LineIndex, position: tuple[int, int], encoding: PositionEncoding, what: str) -> int:
    """The ``str`` offset of an LSP position, refusing what is not in the document.

    Past the last line is refused, except ``(line_count, 0)``: the end of the document, which servers use
    to replace a whole file. A character past its line's end means the line's end (the specification's
    rule). A character inside one code point (half a surrogate pair) is refused: the server and the
    applier disagree on the text or the encoding.
    """
    line, character = position
    if line >= index.line_count:
        if line == index.line_count and character == 0:
            return len(index.text)
        raise EditRejected(
            f"text edit {what} is at line {line} (0-based) but the document has {index.line_count} lines: "
            "the edit was made against another version of the file; ask for the edit again"
        )
    offset = index.offset(line, character, encoding)
    text = index.text
    at_line_end = offset >= len(text) or text[offset] in "\r\n"
    if not at_line_end and index.position(offset, encoding) != (line, character):
        raise EditRejected(
            f"text edit {what} at {line}:{character} falls inside a character in {encoding.value} "
            "(the server and the file disagree on the text); ask for the edit again"
        )
    return offset


def _line_break(text: str) -> str | None:
    """``"\\r\\n"`` when every line break of ``text`` is CRLF (inserted text then follows suit)."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf == text.count("\n") else None


def _apply(text: str, changes: Sequence[_TextChange], encoding: PositionEncoding) -> str:
    index = LineIndex(text)
    spans: list[tuple[int, int, _TextChange]] = []
    for change in changes:
        what = f"#{change.index + 1}"
        spans.append(
            (
                _offset(index, change.start, encoding, what),
                _offset(index, change.end, encoding, what),
                change,
            )
        )
    # Stable by start, inserts before a replacement starting at the same place, then the edit's order
    # (LSP: inserts at one position appear in the order of the array).
    spans.sort(key=lambda span: (span[0], span[1], span[2].index))
    crlf = _line_break(text)
    pieces: list[str] = []
    cursor = 0
    last: _TextChange | None = None
    for start, end, change in spans:
        if start < cursor and last is not None:
            raise EditRejected(
                f"text edits #{last.index + 1} ({_show(last.start, last.end)}) and #{change.index + 1} "
                f"({_show(change.start, change.end)}) overlap (0-based line:character); LSP edits of one "
                "document must not overlap: ask for the edit again",
                ranges=[_show(last.start, last.end), _show(change.start, change.end)],
            )
        pieces.append(text[cursor:start])
        new_text = change.text
        if crlf is not None and "\n" in new_text:
            new_text = new_text.replace("\r\n", "\n").replace("\n", crlf)
        pieces.append(new_text)
        cursor, last = end, change  # sorted and not overlapping: ends never go backwards
    pieces.append(text[cursor:])
    return "".join(pieces)


def apply_text_edits(
    text: str, edits: Sequence[Mapping[str, Any]], encoding: PositionEncoding = PositionEncoding.UTF16
) -> str:
    """``text`` with LSP ``TextEdit``s applied (LSP semantics, see the module docstring).

    Positions count code units of ``encoding`` (the server's; UTF-16 unless negotiated). In a file whose
    line breaks are all CRLF, line breaks of inserted text become CRLF too, so an edit never mixes them.

    :raises EditRejected: a malformed edit, a range outside the document, or two overlapping ranges (the
        message names both).
    """
    checked: object = edits  # the caller's value may come straight from a server's JSON
    if isinstance(checked, (str, bytes)) or not isinstance(checked, Sequence):
        raise EditRejected("malformed edit: the text edits are not a list")
    return _apply(text, [_text_change(i, edit) for i, edit in enumerate(edits)], encoding)


# -- snippets ---------------------------------------------------------------------------------------------

_NAME: Final = re.compile(r"\d+|[A-Za-z_][A-Za-z0-9_]*")


def snippet_text(snippet: str) -> str:
    """A snippet (LSP snippet syntax) as the plain text it inserts before the user edits anything.

    Tab stops and variables are dropped, placeholders keep their text, a choice keeps its first option,
    escapes (``\\$``, ``\\}``, ``\\\\``) become the character. What is not valid snippet syntax stays as it
    is. The applier cannot run an interactive snippet session, so this is what an agent's edit can mean.
    """
    text, _ = _snippet(snippet, 0, inner=False)
    return text


def _snippet(source: str, i: int, *, inner: bool) -> tuple[str, int]:
    parts: list[str] = []
    size = len(source)
    while i < size:
        char = source[i]
        if char == "\\" and i + 1 < size and source[i + 1] in "$}\\":
            parts.append(source[i + 1])
            i += 2
            continue
        if inner and char == "}":
            return "".join(parts), i
        if char == "$":
            consumed = _snippet_element(source, i, parts)
            if consumed is not None:
                i = consumed
                continue
        parts.append(char)
        i += 1
    return "".join(parts), i


def _snippet_element(source: str, i: int, parts: list[str]) -> int | None:
    """Parse the element at ``source[i] == "$"``; append its text and return where it ends, or None."""
    size = len(source)
    bare = _NAME.match(source, i + 1)
    if bare:
        return bare.end()
    if i + 1 >= size or source[i + 1] != "{":
        return None
    name = _NAME.match(source, i + 2)
    if not name:
        return None
    j = name.end()
    if j < size and source[j] == "}":
        return j + 1
    if j < size and source[j] == ":":
        text, k = _snippet(source, j + 1, inner=True)
        if k < size and source[k] == "}":
            parts.append(text)
            return k + 1
        return None
    if j < size and source[j] == "|":
        close = source.find("|}", j + 1)
        if close == -1:
            return None
        options = re.split(r"(?<!\\),", source[j + 1 : close])
        parts.append(re.sub(r"\\([,|\\])", r"\1", options[0]))
        return close + 2
    if j < size and source[j] == "/":  # a variable transform: it renders the (empty) variable
        depth_end = re.compile(r"(?<!\\)}").search(source, j)
        return depth_end.end() if depth_end else None
    return None


# -- the plan ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Slot:
    """One path as the edit, run so far, leaves it."""

    file: WorkspaceFile
    kind: PathKind
    #: The existing file whose text this path holds (None: a new, empty file).
    origin: WorkspaceFile | None
    base: str | None = None
    content: str | None = None
    edits: int = 0
    version: int | None = None


class _Planner:
    def __init__(
        self,
        workspace: Workspace,
        read_text: Callable[[WorkspaceFile], str],
        encoding: PositionEncoding,
        probe: Callable[[str], PathKind],
        annotations: Mapping[str, Any],
    ) -> None:
        self._workspace = workspace
        self._read_text = read_text
        self._encoding = encoding
        self._probe = probe
        self._annotations = annotations
        self._slots: dict[str, _Slot] = {}
        self._read: dict[str, str] = {}
        self._resources: list[ResourceOp] = []
        self._notes: list[str] = []
        self._folders: dict[str, str] = {}
        self._directory_ops: list[WorkspaceFile] = []
        self._paths: list[WorkspaceFile] = []

    # -- inputs --

    def file(self, uri: object, where: str) -> WorkspaceFile:
        if not isinstance(uri, str) or not uri:
            raise EditRejected(f"malformed edit: {where} has no uri")
        try:
            found = self._workspace.from_uri(uri, folders=self._folders)
        except PathOutsideWorkspace as error:
            raise PathOutsideWorkspace(
                f"the edit was refused, nothing was written: {where} names {uri!r}, which is not a file in "
                f"the workspace ({error.message})",
                uri=uri,
            ) from None
        self._paths.append(found)
        return found

    def annotation(self, value: object, file: WorkspaceFile, what: str) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str) or value not in self._annotations:
            raise EditRejected(
                f"malformed edit: {what} on {file.display} names annotation {value!r}, which changeAnnotations "
                "does not define"
            )
        annotation = self._annotations[value]
        if isinstance(annotation, Mapping) and annotation.get("needsConfirmation") is True:
            label = annotation.get("label")
            shown = f" ({label})" if isinstance(label, str) and label else ""
            note = f"the server asks to confirm {what} on {file.display}{shown}"
            if note not in self._notes:
                self._notes.append(note)
        return value

    # -- state --

    def slot(self, file: WorkspaceFile) -> _Slot:
        found = self._slots.get(file.absolute)
        if found is None:
            kind = self._probe(file.absolute)
            found = self._slots[file.absolute] = _Slot(file, kind, file if kind == "file" else None)
        return found

    def content(self, slot: _Slot) -> str:
        if slot.content is None:
            origin = slot.origin
            text = "" if origin is None else self.read(origin)
            slot.base = slot.content = text
        return slot.content

    def read(self, file: WorkspaceFile) -> str:
        text = self._read.get(file.absolute)
        if text is None:
            try:
                text = self._read_text(file)
            except IntelError:
                raise
            except (OSError, UnicodeError, ValueError) as error:
                raise EditRejected(
                    f"the edit was refused: cannot read {file.display} ({error}); check the file"
                ) from None
            self._read[file.absolute] = text
        return text

    # -- items --

    def text_document_edit(self, uri: object, version: object, edits: object, where: str) -> None:
        file = self.file(uri, where)
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
            raise EditRejected(f"malformed edit: {where} has version {version!r}, not an integer or null")
        if isinstance(edits, (str, bytes)) or not isinstance(edits, Sequence):
            raise EditRejected(f"malformed edit: {where} edits are not a list")
        changes = [_text_change(i, edit) for i, edit in enumerate(edits)]
        if not changes:
            return
        slot = self.slot(file)
        if slot.kind == "missing":
            raise EditRejected(
                f"the edit was refused: it edits {file.display}, which does not exist (and the edit does not "
                "create it first); ask for the edit again"
            )
        if slot.kind == "directory":
            raise EditRejected(f"the edit was refused: it edits {file.display}, which is a folder")
        for change in changes:
            self.annotation(change.annotation, file, "a text edit")
            if change.snippet:
                note = f"a snippet edit to {file.display} is applied as plain text (tab stops dropped)"
                if note not in self._notes:
                    self._notes.append(note)
        try:
            slot.content = _apply(self.content(slot), changes, self._encoding)
        except EditRejected as error:
            raise EditRejected(f"{where} ({file.display}): {error.message}", **error.fields) from None
        slot.edits += len(changes)
        if slot.version is None and isinstance(version, int):
            slot.version = version

    def resource(self, item: Mapping[str, Any], where: str) -> None:
        kind = item.get("kind")
        options = item.get("options")
        if options is None:
            options = {}
        if not isinstance(options, Mapping):
            raise EditRejected(f"malformed edit: {where} options is not an object")
        flags = {name: options.get(name) is True for name in ("overwrite", "ignoreIfExists", "recursive")}
        flags["ignoreIfNotExists"] = options.get("ignoreIfNotExists") is True
        if kind == "create":
            self.create(self.file(item.get("uri"), where), flags, item.get("annotationId"), where)
        elif kind == "rename":
            old = self.file(item.get("oldUri"), where)
            new = self.file(item.get("newUri"), where)
            self.rename(old, new, flags, item.get("annotationId"), where)
        elif kind == "delete":
            self.delete(self.file(item.get("uri"), where), flags, item.get("annotationId"), where)
        else:
            raise EditRejected(
                f"the edit was refused: {where} is a resource operation of unknown kind {kind!r} (known: "
                "create, rename, delete); unknown shapes are not guessed"
            )

    def create(self, file: WorkspaceFile, flags: Mapping[str, bool], annotation: object, where: str) -> None:
        slot = self.slot(file)
        note = self.annotation(annotation, file, "creating a file")
        exists = slot.kind != "missing"
        if exists and slot.kind == "directory":
            raise EditRejected(f"the edit was refused: {where} creates {file.display}, where a folder is")
        if exists and not flags["overwrite"] and not flags["ignoreIfExists"]:
            raise EditRejected(
                f"the edit was refused: {where} creates {file.display}, which exists, without overwrite or "
                "ignoreIfExists"
            )
        op = ResourceOp(
            "create",
            file,
            None,
            flags["overwrite"],
            flags["ignoreIfExists"],
            False,
            exists=exists,
            annotation=note,
        )
        self._resources.append(op)
        if not op.skipped:
            self._slots[file.absolute] = _Slot(file, "file", None, "", "")

    def rename(
        self,
        old: WorkspaceFile,
        new: WorkspaceFile,
        flags: Mapping[str, bool],
        annotation: object,
        where: str,
    ) -> None:
        if old.absolute == new.absolute:
            raise EditRejected(f"malformed edit: {where} renames {old.display} to itself")
        source, target = self.slot(old), self.slot(new)
        note = self.annotation(annotation, old, "a rename")
        if source.kind == "missing":
            raise EditRejected(f"the edit was refused: {where} renames {old.display}, which does not exist")
        target_exists = target.kind != "missing"
        if target_exists and not flags["overwrite"] and not flags["ignoreIfExists"]:
            raise EditRejected(
                f"the edit was refused: {where} renames {old.display} to {new.display}, which exists, "
                "without overwrite or ignoreIfExists"
            )
        if target_exists and flags["overwrite"] and target.kind == "directory":
            raise EditRejected(
                f"the edit was refused: {where} would overwrite the folder {new.display}; not supported"
            )
        directory = source.kind == "directory"
        op = ResourceOp(
            "rename",
            old,
            new,
            flags["overwrite"],
            flags["ignoreIfExists"],
            False,
            exists=True,
            target_exists=target_exists,
            directory=directory,
            annotation=note,
        )
        self._resources.append(op)
        if op.skipped:
            return
        if directory:
            self._directory_ops.extend((old, new))
        self._slots[new.absolute] = replace(source, file=new)
        self._slots[old.absolute] = _Slot(old, "missing", None)

    def delete(self, file: WorkspaceFile, flags: Mapping[str, bool], annotation: object, where: str) -> None:
        slot = self.slot(file)
        note = self.annotation(annotation, file, "a deletion")
        exists = slot.kind != "missing"
        if not exists and not flags["ignoreIfNotExists"]:
            raise EditRejected(f"the edit was refused: {where} deletes {file.display}, which does not exist")
        if file.relative == "":
            raise EditRejected(f"the edit was refused: {where} deletes the workspace root {file.display}")
        directory = slot.kind == "directory"
        self._resources.append(
            ResourceOp(
                "delete",
                file,
                None,
                False,
                False,
                flags["recursive"],
                ignore_if_not_exists=flags["ignoreIfNotExists"],
                exists=exists,
                directory=directory,
                annotation=note,
            )
        )
        if directory:
            self._directory_ops.append(file)
        self._slots[file.absolute] = _Slot(file, "missing", None)

    # -- result --

    def plan(self) -> EditPlan:
        for folder in self._directory_ops:
            prefix = folder.absolute.rstrip(os.sep) + os.sep
            for path in self._paths:
                if path.absolute.startswith(prefix):
                    raise EditRejected(
                        f"the edit was refused: it renames or deletes the folder {folder.display} and also "
                        f"changes {path.display} inside it; split the change into separate edits"
                    )
        # A file whose edits leave its text as it was (a rename to the name it has: pyright and tsserver
        # answer one edit per use) is no change: nothing to preview, approve or write.
        files = [
            FileEdit(slot.file, slot.base or "", slot.content or "", slot.edits, slot.version)
            for slot in self._slots.values()
            if slot.kind == "file" and slot.edits > 0 and slot.content != slot.base
        ]
        files.sort(key=lambda file_edit: file_edit.file.display)
        return EditPlan(
            tuple(files),
            tuple(self._resources),
            dict(self._annotations),
            dict(self._read),
            tuple(self._notes),
        )


def plan_edit(
    edit: Mapping[str, Any],
    workspace: Workspace,
    read_text: Callable[[WorkspaceFile], str],
    encoding: PositionEncoding = PositionEncoding.UTF16,
    *,
    probe: Callable[[str], PathKind] = disk_probe,
) -> EditPlan:
    """Validate an LSP ``WorkspaceEdit`` and compute every file's new text (B3.1, B3.4, B3.6, B8.11).

    :param read_text: a file's current text (the document the server edited: the open document's text,
        or the disk's); its result is what :meth:`EditPlan.digests` records for the commit's recheck.
    :param encoding: the position encoding negotiated with the server that produced the edit.
    :param probe: what is at an absolute path (file, folder, missing); the disk by default.
    :raises PathOutsideWorkspace: a URI outside every root, a non-``file:`` URI, a symlink escape.
    :raises EditRejected: a malformed item, overlapping or out-of-document ranges, a resource operation
        whose precondition fails (creating a file that exists without ``overwrite``/``ignoreIfExists``...).
    """
    if not isinstance(edit, Mapping):
        raise EditRejected("malformed edit: a WorkspaceEdit is an object")
    annotations = edit.get("changeAnnotations")
    if annotations is None:
        annotations = {}
    if not isinstance(annotations, Mapping):
        raise EditRejected("malformed edit: changeAnnotations is not an object")
    planner = _Planner(workspace, read_text, encoding, probe, annotations)
    document_changes = edit.get("documentChanges")
    if document_changes is not None:  # the specification: documentChanges win over changes
        if isinstance(document_changes, (str, bytes)) or not isinstance(document_changes, Sequence):
            raise EditRejected("malformed edit: documentChanges is not a list")
        for number, item in enumerate(document_changes):
            where = f"documentChanges[{number}]"
            if not isinstance(item, Mapping):
                raise EditRejected(f"malformed edit: {where} is not an object")
            if "kind" in item:
                planner.resource(item, where)
                continue
            document = item.get("textDocument")
            if not isinstance(document, Mapping):
                raise EditRejected(
                    f"malformed edit: {where} is neither a TextDocumentEdit nor a resource operation"
                )
            planner.text_document_edit(document.get("uri"), document.get("version"), item.get("edits"), where)
        return planner.plan()
    changes = edit.get("changes")
    if changes is None:
        return planner.plan()
    if not isinstance(changes, Mapping):
        raise EditRejected("malformed edit: changes is not an object")
    for uri, edits in changes.items():
        planner.text_document_edit(uri, None, edits, f"changes[{uri!r}]")
    return planner.plan()
