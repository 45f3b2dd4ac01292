"""``kandev-lsp code`` flags from the MCP user trial: ``--deadline`` (finding 6) and usage exits (finding 7).

The tool call itself is the service's (tested with real servers elsewhere); here only what the command
line hands it: ``open_service`` is swapped for a recorder, the one fake, so no server starts.
"""

from __future__ import annotations

from typing import Any

import pytest
from kandev_lsp.cli import build_parser, code, main
from kandev_lsp.intel.surface.dispatch import IntelContext


class _Recorder:
    def __init__(self) -> None:
        self.contexts: list[IntelContext] = []

    async def __aenter__(self) -> _Recorder:
        return self

    async def __aexit__(self, *_: object) -> None:
        return None

    async def dispatch(self, op: str, payload: Any, ctx: IntelContext) -> dict[str, Any]:
        self.contexts.append(ctx)
        return {"ok": True, "op": op}


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> _Recorder:
    service = _Recorder()
    monkeypatch.setattr(code, "open_service", lambda args: service)
    return service


#: Arguments the tool's own checks accept: a call they refuse never reaches the service (150f3b5).
_OUTLINE = '{"path": "a.py"}'


def _run(argv: list[str]) -> int:
    args = build_parser("code").parse_args(["code", *argv, "--no-daemon"])
    return int(args.handler(args))


def test_deadline_flag_is_the_calls_budget(recorder: _Recorder, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["code_symbols", "--json", _OUTLINE, "--deadline", "2.5"]) == 0
    assert _run(["code_symbols", "--json", _OUTLINE]) == 0
    assert [ctx.deadline for ctx in recorder.contexts] == [2.5, code.COLD_DEADLINE]
    capsys.readouterr()


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_a_deadline_that_is_no_budget_is_a_usage_error(
    recorder: _Recorder, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as refused:  # the flag's own type refuses it, as argparse does (41ee3d1)
        main(["code", "code_symbols", "--deadline", value, "--no-daemon"])
    assert refused.value.code == 2
    assert "--deadline" in capsys.readouterr().err and recorder.contexts == []


def test_an_unknown_tool_is_a_usage_error(recorder: _Recorder, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2 (usage), as the docs say, not 1 (a tool's ok: false): no tool ran (MCP user trial)."""
    assert main(["code", "code_nope", "--json", "{}", "--no-daemon"]) == 2
    err = capsys.readouterr().err
    assert "no tool 'code_nope'" in err and "code_navigate" in err and recorder.contexts == []
    references = '{"target": {"path": "a.py", "line": 1}, "kind": "references"}'
    assert main(["code", "navigate", "--json", references, "--no-daemon"]) == 0  # an op name is a tool's too
