"""Pure decisions of the wired tools, on plain values."""

from __future__ import annotations

from pathlib import Path

import pytest
from kandev_lsp.intel.targets import Target, resolve_target
from kandev_lsp.intel.text import Document, PositionEncoding
from kandev_lsp.intel.tools import _inside_call
from kandev_lsp.intel.workspace import Workspace

TEXT = 'print(greet("world"))\nvalue = greet\ncall(\n    a,\n    f(b),\n    c,\n)\nx = (1) + y\n'


@pytest.mark.parametrize(
    ("line", "match", "inside"),
    [
        (1, "greet", True),  # an argument of print
        (1, '"world"', True),
        (1, "print", False),
        (2, "greet", False),
        (4, "a", True),  # a multi-line call
        (6, "c", True),  # after a closed inner call
        (8, "y", False),  # after a closed parenthesis
    ],
)
def test_signature_help_is_asked_only_inside_a_call(
    tmp_path: Path, line: int, match: str, inside: bool
) -> None:
    (tmp_path / "a.py").write_text(TEXT)
    workspace = Workspace([tmp_path])
    document = Document(workspace.resolve("a.py"), TEXT, 1)
    resolved = resolve_target(
        Target("a.py", line=line, match_text=match), document, None, PositionEncoding.UTF16
    )
    assert _inside_call(resolved) is inside
