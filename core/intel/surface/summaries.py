"""One-line summaries of tool results (B9.4): what an MCP client shows next to the structured content.

``12 references · 4 files``, ``3 definitions · 1 file (100 of 449 shown)``, ``2 errors, 1 warning``. An
empty result that carries a ``notice`` (B8.10: a missing server) shows the notice instead of a bare
"no results" (B9.5), and a read no server answered (``status: no_server``) always leads with why: never
"0 errors, 0 warnings" for a file nothing checked. Mutations say what happened to the change: ``renamed → total · 3 files``,
``needs approval: 4 edits in 2 files``, ``no changes``, ``3 code actions``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kandev_lsp.intel.runtime.notices import NO_SERVER
from kandev_lsp.intel.surface.schemas import MAX_ACTIVATION

__all__ = ["plural", "summarize"]

_MUTATING: Final = frozenset(
    {"code_rename", "code_actions", "code_format", "code_insert", "code_replace", "code_replace_batch"}
)

#: code_navigate kinds as nouns.
_NAVIGATE_NOUNS: Final = {
    "definition": "definition",
    "typeDefinition": "type definition",
    "declaration": "declaration",
    "implementation": "implementation",
    "references": "reference",
}
_HIERARCHY_NOUNS: Final = {
    "callers": "caller",
    "callees": "callee",
    "supertypes": "supertype",
    "subtypes": "subtype",
}
_MAX_LINE: Final = 160


def plural(count: int, noun: str) -> str:
    """``1 file``, ``2 files``, ``3 type definitions``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _count(result: Mapping[str, Any], key: str) -> int:
    total = result.get("totalFound")
    if isinstance(total, int):
        return total
    items = result.get(key)
    return len(items) if isinstance(items, list) else 0


def _shown(result: Mapping[str, Any], files_shown: int | None = None) -> str:
    """`` (100 of 449 shown)``; with ``files_shown``, also how many of the result's files were left out
    (`` (100 of 449 shown; 13 of 18 files not shown)``, issue 20 item 10)."""
    shown, total = result.get("shown"), result.get("totalFound")
    if result.get("truncated") and isinstance(shown, int) and isinstance(total, int):
        all_files = result.get("totalFiles")
        if files_shown is not None and isinstance(all_files, int) and all_files > files_shown:
            return f" ({shown} of {total} shown; {all_files - files_shown} of {all_files} files not shown)"
        return f" ({shown} of {total} shown)"
    return " (truncated)" if result.get("truncated") else ""


#: What ``omitted`` counts, as the summary names it.
_WITHHELD: Final = {"outsideWorkspace": "outside the workspace", "nonFileUri": "not a file"}


def _withheld(result: Mapping[str, Any], noun: str) -> str:
    """`` · 1 definition outside the workspace withheld``: what the server answered and the result does
    not show (B8.11), so an answer that withholds results says so (issue 20 item 4)."""
    omitted = result.get("omitted")
    if not isinstance(omitted, Mapping):
        return ""
    parts = [
        f"{plural(count, noun)} {_WITHHELD.get(reason, reason)}"
        for reason, count in omitted.items()
        if isinstance(count, int) and count > 0
    ]
    return f" · {', '.join(parts)} withheld" if parts else ""


def _skipped(result: Mapping[str, Any]) -> str:
    """`` · not searched: typescript``: languages of the workspace whose server gave no answer to a
    workspace symbol search (issue 20 item 9), so the count covers the others only."""
    skipped = result.get("notSearched")
    if not isinstance(skipped, list) or not skipped:
        return ""
    return " · not searched: " + ", ".join(str(_mapping(entry).get("language")) for entry in skipped)


def _inferred(result: Mapping[str, Any]) -> str:
    """`` · inferred project: open files and their imports only``: a TypeScript search from a file no
    tsconfig.json covers, so uses in other files are missing (the ``notice`` says what to do)."""
    return " · inferred project: open files and their imports only" if result.get("inferredProject") else ""


def _taken(result: Mapping[str, Any]) -> str:
    """`` · of MultiCommand.invoke (inherited)``: the symbol answered about when it is not the one named
    (a member found through the class's bases, issue 20 item 8) or was one of several (``firstMatch``),
    so a model reading the summary alone knows whose uses these are."""
    target = _mapping(result.get("target"))
    symbol = target.get("symbol")
    confidence = target.get("confidence")
    if not isinstance(symbol, str) or confidence not in ("inherited", "firstMatch"):
        return ""
    return f" · of {symbol} ({'inherited' if confidence == 'inherited' else 'the first of several matches'})"


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 1] + "…"


def _one_line(text: str) -> str:
    """The first paragraph of ``text`` on one line: a hover's signature that a server wraps over several
    lines (pyright puts each parameter on its own) becomes ``def contains(item: str, ...) -> bool``
    instead of stopping at ``def contains(``; whitespace runs become one space, cut with an ellipsis."""
    paragraph = re.split(r"\n\s*\n", text.strip(), maxsplit=1)[0]
    line = " ".join(paragraph.split())
    line = re.sub(r"([(\[{]) ", r"\1", line)
    line = re.sub(r",? ([)\]}])", r"\1", line)
    return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 1].rstrip() + "…"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _change_size(result: Mapping[str, Any]) -> str:
    """``4 edits in 2 files``: an applied change's receipt (it counts the edits a command made the server
    apply too), else the preview, else the result's own counts."""
    preview, receipt = _mapping(result.get("preview")), _mapping(result.get("receipt"))
    touched = receipt.get("touched")
    if result.get("applied") and isinstance(receipt.get("textEdits"), int) and isinstance(touched, list):
        edits, files = receipt["textEdits"], len(touched)
    else:
        edits = preview.get("edits", result.get("edits"))
        files = preview.get("files", result.get("files"))
    if not isinstance(edits, int):
        return "the change"
    where = f" in {plural(files, 'file')}" if isinstance(files, int) else ""
    return plural(edits, "edit") + where


def _elsewhere(result: Mapping[str, Any]) -> str:
    """`` · 1 error introduced elsewhere``: errors the edit caused in files it did not touch (trial A)."""
    diagnostics = _mapping(_mapping(result.get("receipt")).get("diagnostics"))
    errors = _mapping(_mapping(diagnostics.get("elsewhere")).get("counts")).get("errors")
    return f" · {plural(errors, 'error')} introduced elsewhere" if isinstance(errors, int) and errors else ""


def _unchecked(result: Mapping[str, Any]) -> str:
    """`` · 1 touched file not checked (no server answered)``: an applied edit whose post-edit
    diagnostics no server gave for some file, so its receipt's counts say nothing of that file."""
    diagnostics = _mapping(_mapping(result.get("receipt")).get("diagnostics"))
    unchecked = diagnostics.get("notChecked")
    if diagnostics.get("status") != NO_SERVER or not isinstance(unchecked, list):
        return ""
    return f" · {plural(len(unchecked), 'touched file')} not checked (no server answered)"


def _mutation_summary(tool: str, result: Mapping[str, Any]) -> str:
    return _mutation_line(tool, result) + _unchecked(result) + _elsewhere(result)


def _mutation_line(tool: str, result: Mapping[str, Any]) -> str:
    if result.get("needsApproval"):
        return f"needs approval: {_change_size(result)}"
    status = result.get("status")
    if isinstance(status, str) and status not in ("applied", "ok"):
        message = result.get("message") or result.get("notice") or ""
        return f"{status}: {_first_line(str(message))}" if message else status
    if tool == "code_actions" and "actions" in result and "applied" not in result:
        raw_actions = result.get("actions")
        actions: list[Any] = raw_actions if isinstance(raw_actions, list) else []
        count = len(actions)
        notice = result.get("notice")
        if not count and notice:
            return _first_line(str(notice))
        disabled = len([a for a in actions if isinstance(a, Mapping) and a.get("disabled")])
        if disabled:  # "17 code actions" when 14 of them cannot run misleads (MCP user trial)
            return f"{plural(count, 'code action')} ({count - disabled} available, {disabled} disabled)"
        return plural(count, "code action")
    if result.get("changed") is False:
        return "no changes"
    if result.get("declined") or result.get("discarded"):
        return "discarded: nothing was changed"
    if tool == "code_rename" and result.get("newName"):
        files = result.get("files")
        where = f" · {plural(files, 'file')}" if isinstance(files, int) else ""
        return f"renamed → {result['newName']}{where}"
    return f"applied {_change_size(result)}"


def summarize(tool: str, result: Mapping[str, Any]) -> str:
    """The one-line summary of ``result`` from ``tool``."""
    if tool in _MUTATING and result.get("ok", False):
        return _mutation_summary(tool, result)
    if not result.get("ok", False):
        if result.get("ambiguous"):
            candidates = result.get("candidates") or []
            first = candidates[0] if candidates and isinstance(candidates[0], Mapping) else {}
            if "column" in first and "id" not in first:  # occurrences of a matchText on one line
                where = f" on line {first['line']}" if "line" in first else ""
                return f"ambiguous: matchText occurs {len(candidates)} times{where}, add target.column"
            return f"ambiguous: {plural(len(candidates), 'candidate')}, name one"
        return "error: " + _first_line(str(result.get("error", "failed")))
    notice = result.get("notice")
    if result.get("status") == NO_SERVER:  # no server answered: why, never a count of nothing
        return _first_line(str(notice or "no language server answered"))
    if tool == "code_navigate":
        noun = _NAVIGATE_NOUNS.get(str(result.get("kind")), "location")
        if result.get("fallback") == "definition":  # a server without declarations answered definitions
            noun = "definition"
        total = _count(result, "locations")
        withheld = _withheld(result, noun)
        if total == 0:
            if notice and not _inferred(result):
                return _first_line(str(notice))
            return f"no {noun}s{withheld}{_inferred(result)}{_taken(result)}"
        files = result.get("files")
        shown_files = len(files) if isinstance(files, list) else 0
        all_files = result.get("totalFiles")
        file_count = all_files if isinstance(all_files, int) and all_files >= shown_files else shown_files
        line = f"{plural(total, noun)} · {plural(file_count, 'file')}{_shown(result, shown_files)}{withheld}"
        if result.get("fallback") == "definition":
            return f"{line} (no declaration provider){_inferred(result)}{_taken(result)}"
        return line + _inferred(result) + _taken(result)
    if tool == "code_hierarchy":
        noun = _HIERARCHY_NOUNS.get(str(result.get("kind")), "item")
        total = _count(result, "items")
        if total == 0 and notice and not _inferred(result):
            return _first_line(str(notice))
        counted = plural(total, noun) if total else f"no {noun}s"
        return counted + _shown(result) + _withheld(result, noun) + _inferred(result) + _taken(result)
    if tool == "code_symbols":
        total = _count(result, "symbols")
        if total == 0 and not _inferred(result):
            return _first_line(str(notice)) if notice else f"no symbols{_withheld(result, 'symbol')}"
        return (
            (plural(total, "symbol") if total else "no symbols")
            + _shown(result)
            + _withheld(result, "symbol")
            + _skipped(result)
            + _inferred(result)
        )
    if tool == "code_hover":
        return _one_line(str(result.get("text", ""))) or "no hover information"
    if tool == "code_diagnostics":
        # The scope's counts before the severity filter (allCounts): "0 warnings" is never said of warnings
        # the filter left out; how many of them the answer lists follows.
        raw_counts = result.get("allCounts", result.get("counts"))
        counts: Mapping[str, Any] = raw_counts if isinstance(raw_counts, Mapping) else {}
        parts = [
            plural(int(counts.get("error", 0)), "error"),
            plural(int(counts.get("warning", 0)), "warning"),
        ]
        parts += [plural(int(counts[key]), key) for key in ("info", "hint") if counts.get(key)]
        line = ", ".join(parts)
        listed, found = result.get("shown"), sum(int(value) for value in counts.values())
        if isinstance(listed, int) and listed < found:  # cut by limit, or by severity
            line += f" ({listed} of {found} shown)"
        status = result.get("status")
        if status in ("settling", "quiet"):  # not the server's confirmed word on the code on disk
            line += f" ({status})"
        elif status == "published_workspace":  # B6.13: what was published, never the whole workspace's word
            published = _mapping(result.get("coverage")).get("filesWithDiagnostics")
            files = f" for {plural(published, 'file')}" if isinstance(published, int) else ""
            line += f" (partial: as published{files}; activateWorkspace checks every file)"
        coverage = _mapping(result.get("coverage"))
        activated, eligible = coverage.get("activated"), coverage.get("eligibleFiles")
        if isinstance(activated, int) and isinstance(eligible, int) and activated < eligible:
            # activationLimit opened only some of the files: "0 errors" is about those alone
            more = (
                f"a higher activationLimit (at most {MAX_ACTIVATION}) checks more"
                if activated < MAX_ACTIVATION
                else "the most one call opens; ask about the others by path or rootId"
            )
            line += f" (partial: {activated} of {eligible} files checked; {more})"
        unchecked = result.get("notChecked")
        if isinstance(unchecked, list) and unchecked:  # languages no server answered for
            names = ", ".join(str(_mapping(entry).get("language")) for entry in unchecked)
            line += f" · not checked: {names} (no server)"
        delta = _mapping(result.get("delta"))
        changed = _mapping(delta.get("counts"))
        if delta:
            line += (
                f" · since {delta.get('since')}: {changed.get('introduced', 0)} introduced, "
                f"{changed.get('resolved', 0)} resolved"
            )
            without = delta.get("withoutBaseline")
            if isinstance(without, list) and without:  # compared against none: "introduced" is unknown
                line += f" ({plural(len(without), 'file')} without a baseline: all counted as introduced)"
            unchecked = delta.get("notChecked")
            if delta.get("status") == NO_SERVER and isinstance(unchecked, list):
                line += f" ({plural(len(unchecked), 'file')} not checked: no server answered)"
        return line
    if tool == "code_inlay_hints":
        total = _count(result, "hints")
        if total == 0:
            return _first_line(str(notice)) if notice else "no inlay hints"
        return plural(total, "inlay hint") + _shown(result)
    return "ok"
