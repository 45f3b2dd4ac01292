"""What ``code_rename`` accepts as a new name, checked before any server is asked (B6.16).

A server handed ``"1bad name"`` either refuses it in its own words, or, worse, writes it: pyright and
typescript-language-server rename to whatever text they are given. A model's typo then becomes a broken
file that only the post-edit diagnostics notice. The rule here is deliberately conservative: it refuses
only what no name of a supported language (Python, TypeScript/JavaScript, Go, Rust, Kotlin) can be, so a
legitimate name is never refused for a grammar this module got wrong:

* empty, or longer than :data:`MAX_NAME_LENGTH` characters (a pasted body, not a name);
* a control character or a line break anywhere (``\\n``, ``\\t``, ``U+2028``);
* whitespace, except inside a Kotlin backticked name (```my name```, itself without backticks or line
  breaks inside);
* a leading digit (``1bad``): no identifier of these languages starts with one;
* characters that group or end code and occur in no name: ``( ) [ ] { } < > ; , " = \\`` and a backtick
  outside the Kotlin pair, plus the operator characters ``+ * & | ! ? % ^ ~``.

Everything else passes to the server, which has the last word (its refusal is returned as given):
``$el`` and ``café`` (TS/JS, Python unicode identifiers), ``r#type`` (Rust raw identifiers), ``'b``
(a Rust lifetime), ``#secret`` (a JS private name), zero-width joiners (ECMAScript identifiers may hold
them), and ``.``, ``/``, ``-``, ``:`` or ``@`` (not in identifiers, but a server may give them a meaning,
so it judges them).
"""

from __future__ import annotations

import unicodedata
from typing import Final

__all__ = ["MAX_NAME_LENGTH", "new_name_problems"]

#: Characters a new name may have at most (identifiers are short; a longer one is pasted code).
MAX_NAME_LENGTH: Final = 256
#: Characters no name of a supported language holds (outside a Kotlin backticked name).
_NEVER_IN_NAMES: Final = frozenset('()[]{}<>;,"=\\`+*&|!?%^~')
#: Unicode categories refused anywhere: controls, line and paragraph separators.
_CONTROL_CATEGORIES: Final = frozenset({"Cc", "Zl", "Zp"})


def _shown(char: str) -> str:
    return repr(char) if char.isprintable() and not char.isspace() else f"U+{ord(char):04X}"


def new_name_problems(name: str) -> list[str]:
    """What is wrong with ``name`` as a rename's new name (empty when nothing is); each problem says
    what to send instead. See the module docstring for the rule and why it is this loose."""
    if not name:
        return ["`newName` is empty: send the new name"]
    if len(name) > MAX_NAME_LENGTH:
        return [
            f"`newName` is {len(name)} characters long (at most {MAX_NAME_LENGTH}): send the new name "
            "alone, not code"
        ]
    controls = sorted({char for char in name if unicodedata.category(char) in _CONTROL_CATEGORIES})
    if name != name.strip() or controls:
        shown = f" ({', '.join(_shown(c) for c in controls)})" if controls else ""
        return [
            f"`newName` {name!r} has surrounding blanks, a line break or a control character{shown}: "
            "send the bare name"
        ]
    if len(name) > 2 and name[0] == name[-1] == "`":
        if "`" in name[1:-1]:
            return [f"`newName` {name!r} has a backtick inside a backticked name"]
        return []  # Kotlin: `any text` without backticks or line breaks
    problems = []
    if any(char.isspace() for char in name):
        problems.append(
            f"`newName` {name!r} contains whitespace, which no identifier holds (a Kotlin name with "
            "spaces is written in backticks: `my name`)"
        )
    if unicodedata.category(name[0]) == "Nd":
        problems.append(f"`newName` {name!r} starts with a digit, which no identifier does")
    odd = sorted({char for char in name if char in _NEVER_IN_NAMES})
    if odd:
        problems.append(
            f"`newName` {name!r} contains {', '.join(map(repr, odd))}, which no identifier holds: send "
            "the name alone, not code"
        )
    return problems
