"""Hover and signature help as plain text (B5.6, B6.10).

Hover contents come in three shapes (``MarkupContent``, a ``MarkedString`` that is a string or
``{language, value}``, or a list of those) and mostly as markdown written for a popup: code fences,
``---`` rules, escaped underscores, links, a long docstring. A model wants the signature and what the thing
is for, so :func:`flatten_hover` keeps the leading code blocks verbatim (the signature) and the first
paragraph of prose, with markdown noise removed.

:func:`mark_signature` renders the active signature of a ``SignatureHelp`` with its active parameter in
``**bold**``. :func:`hover_text` describes the target first (issue 20 item 5): on ``say`` in
``print(g.say("world"))`` signature help answers for the call around it, ``print``, and putting that
ahead made the summary (often all a model reads) print's parameters, with the bold fused into
``*values`` (``***values``). So ``text`` starts with the target's own hover, the enclosing call's signature
follows on a line that says what it is (``Inside the call: ...``, its active parameter in brackets), and
the ``signature`` field is the plain label (no markup), with ``signatureOf: "enclosingCall"`` and
``activeParameter``. The reference put the bolded signature ahead (B6.10); this keeps the signature and
its active parameter but never in front of what was asked.
"""

from __future__ import annotations

import html
import re
from typing import Any, Final

from kandev_lsp.intel.files.text import PositionEncoding

__all__ = ["flatten_hover", "hover_text", "mark_signature"]

#: The first paragraph of prose is cut beyond this many characters.
MAX_PARAGRAPH_CHARS: Final = 1200
_FENCE: Final = re.compile(r"^\s{0,3}(`{3,}|~{3,})(.*)$")
_RULE: Final = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_LINK: Final = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_BOLD: Final = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC: Final = re.compile(r"(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_CODE: Final = re.compile(r"`([^`]+)`")
_ESCAPE: Final = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_TAG: Final = re.compile(r"</?[A-Za-z][^>]*>")


def flatten_hover(contents: Any) -> str:
    """Hover ``contents`` as plain text: the signature code blocks, then the first documentation paragraph."""
    blocks = _blocks(contents)
    code = [text for kind, text in blocks if kind == "code" and text]
    prose = next((text for kind, text in blocks if kind == "prose" and text), "")
    leading: list[str] = []
    for kind, text in blocks:  # only code that comes before the prose is a signature, later code is examples
        if kind != "code":
            break
        if text:
            leading.append(text)
    parts = leading or code[:1]
    if prose:
        parts.append(prose if len(prose) <= MAX_PARAGRAPH_CHARS else prose[:MAX_PARAGRAPH_CHARS] + "…")
    return "\n\n".join(parts).strip()


def _blocks(contents: Any) -> list[tuple[str, str]]:
    """``("code" | "prose", text)`` blocks of any hover contents shape, in order."""
    if isinstance(contents, list):
        return [block for item in contents for block in _blocks(item)]
    if isinstance(contents, str):
        return _markdown_blocks(contents)
    if isinstance(contents, dict):
        value = contents.get("value")
        if not isinstance(value, str):
            return []
        if "language" in contents:  # MarkedString {language, value}: code by definition
            return [("code", value.strip("\n"))]
        if contents.get("kind") == "plaintext":
            return [("prose", paragraph) for paragraph in _paragraphs(value.splitlines())]
        return _markdown_blocks(value)
    return []


def _markdown_blocks(text: str) -> list[tuple[str, str]]:
    blocks: list[tuple[str, str]] = []
    prose: list[str] = []
    fence: str | None = None
    code: list[str] = []
    for line in text.splitlines():
        match = _FENCE.match(line)
        if fence is None and match:
            blocks += [("prose", _clean(p)) for p in _paragraphs(prose)]
            prose = []
            fence, code = match.group(1)[0] * 3, []
        elif fence is not None and line.strip().startswith(fence):
            blocks.append(("code", "\n".join(code).strip("\n")))
            fence = None
        elif fence is not None:
            code.append(line)
        elif _RULE.match(line):
            blocks += [("prose", _clean(p)) for p in _paragraphs(prose)]
            prose = []
        else:
            prose.append(line)
    if fence is not None:  # an unclosed fence: keep what it holds
        blocks.append(("code", "\n".join(code).strip("\n")))
    blocks += [("prose", _clean(p)) for p in _paragraphs(prose)]
    return blocks


def _paragraphs(lines: list[str]) -> list[str]:
    paragraphs: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append("\n".join(current))
            current = []
    return paragraphs


def _clean(text: str) -> str:
    # Code spans are kept verbatim (``__init__`` must not lose its underscores to the emphasis rules).
    parts = _CODE.split(text)
    for index in range(0, len(parts), 2):
        prose = _LINK.sub(r"\1", parts[index])
        prose = _BOLD.sub(r"\2", prose)
        prose = _ITALIC.sub(r"\2", prose)
        prose = _ESCAPE.sub(r"\1", prose)
        parts[index] = html.unescape(_TAG.sub("", prose))
    return "".join(parts).strip()


def _index_of_units(text: str, units: int, encoding: PositionEncoding) -> int:
    """The code-point index of ``units`` code units into ``text`` (clamped)."""
    if encoding is PositionEncoding.UTF32:
        return max(0, min(units, len(text)))
    count = 0
    for index, char in enumerate(text):
        if count >= units:
            return index
        code = ord(char)
        if encoding is PositionEncoding.UTF16:
            count += 2 if code > 0xFFFF else 1
        else:
            count += len(char.encode("utf-8", "surrogatepass"))
    return len(text)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def mark_signature(
    help_value: Any, encoding: PositionEncoding = PositionEncoding.UTF16
) -> tuple[str, str | None] | None:
    """The active signature's label with its active parameter in ``**bold**``, and that parameter's text.

    ``activeSignature`` outside the list means the first signature (LSP). The signature's own
    ``activeParameter`` wins over the help's; an omitted one means the first parameter, and a value outside
    the parameters (or ``null``, LSP 3.18) marks none rather than a wrong one. Parameter labels are a
    substring of the signature label or ``[start, end)`` offsets in the position encoding.
    """
    found = _active_signature(help_value, encoding)
    if found is None:
        return None
    label, span = found
    if span is None:
        return label, None
    start, end = span
    return f"{label[:start]}**{label[start:end]}**{label[end:]}", label[start:end]


def _active_signature(
    help_value: Any, encoding: PositionEncoding
) -> tuple[str, tuple[int, int] | None] | None:
    """The active signature's label and its active parameter's span in it (see :func:`mark_signature`)."""
    if not isinstance(help_value, dict):
        return None
    signatures = help_value.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        return None
    active = _int(help_value.get("activeSignature")) or 0
    signature = signatures[active] if 0 <= active < len(signatures) else signatures[0]
    if not isinstance(signature, dict) or not isinstance(signature.get("label"), str):
        return None
    label: str = signature["label"]
    parameters = signature.get("parameters")
    parameters = parameters if isinstance(parameters, list) else []
    if "activeParameter" in signature:
        index = _int(signature["activeParameter"])
    elif "activeParameter" in help_value:
        index = _int(help_value["activeParameter"])
    else:
        index = 0
    if index is None or not 0 <= index < len(parameters) or not isinstance(parameters[index], dict):
        return label, None
    return label, _parameter_span(label, parameters[index].get("label"), encoding)


def _parameter_span(label: str, parameter: Any, encoding: PositionEncoding) -> tuple[int, int] | None:
    if isinstance(parameter, str) and parameter:
        opening = label.find("(")
        start = label.find(parameter, opening + 1 if opening >= 0 else 0)
        if start < 0:
            start = label.find(parameter)
        return (start, start + len(parameter)) if start >= 0 else None
    if isinstance(parameter, list) and len(parameter) == 2:
        first, last = _int(parameter[0]), _int(parameter[1])
        if first is None or last is None or not 0 <= first < last:
            return None
        start, end = _index_of_units(label, first, encoding), _index_of_units(label, last, encoding)
        return (start, end) if start < end else None
    return None


def hover_text(
    hover_value: Any, signature_help: Any = None, encoding: PositionEncoding = PositionEncoding.UTF16
) -> dict[str, Any]:
    """``{text, signature?, signatureOf?, activeParameter?}``: the target's flattened hover, then the
    enclosing call's signature on a labelled line (see the module docstring). ``text`` is ``""`` when
    neither says anything."""
    contents = hover_value.get("contents") if isinstance(hover_value, dict) else None
    text = flatten_hover(contents) if contents is not None else ""
    out: dict[str, Any] = {}
    found = _active_signature(signature_help, encoding)
    if found is not None:
        label, span = found
        out["signature"] = label
        out["signatureOf"] = "enclosingCall"
        line = f"Inside the call: {label}"
        if span is not None:
            out["activeParameter"] = label[span[0] : span[1]]
            line += f" [at parameter {out['activeParameter']}]"
        text = f"{text}\n\n{line}" if text else line
    out["text"] = text
    return out
