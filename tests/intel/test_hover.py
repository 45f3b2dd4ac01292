"""Hover flattened to plain text, with the active parameter of the in-scope signature marked (B5.6, B6.10)."""

from __future__ import annotations

from typing import Any

import pytest
from kandev_lsp.intel.files.text import PositionEncoding
from kandev_lsp.intel.reading.hover import flatten_hover, hover_text, mark_signature

#: pyright 1.1.x hover for a function, as it sends it.
PYRIGHT = {
    "kind": "markdown",
    "value": "```python\n(function) def fetch_models(base\\_url: str, *, retries: int = 3) -> list[Model]\n```\n"
    "---\nFetch the **model** list from `base_url`.\n\nRetries on [HTTP 5xx](https://x.test/5xx).\n\n"
    "```python\nfetch_models('http://x')\n```",
}
#: typescript-language-server hover.
TSLS = {
    "kind": "markdown",
    "value": "\n```typescript\nfunction fetchModels(base: string): Promise<Model[]>\n```\nFetches the models.\n\n"
    "*@param* `base` — the base URL",
}


@pytest.mark.parametrize(
    ("contents", "text"),
    [
        (
            PYRIGHT,
            "(function) def fetch_models(base\\_url: str, *, retries: int = 3) -> list[Model]\n\n"
            "Fetch the model list from base_url.",
        ),
        (TSLS, "function fetchModels(base: string): Promise<Model[]>\n\nFetches the models."),
        ({"kind": "plaintext", "value": "int x\n\nmore"}, "int x"),
        ("plain `marked` string", "plain marked string"),
        ({"language": "go", "value": "func Foo() error"}, "func Foo() error"),
        (
            [
                {"language": "rust", "value": "crate::models"},
                {"language": "rust", "value": "pub fn fetch()"},
                "Docs & more",
            ],
            "crate::models\n\npub fn fetch()\n\nDocs & more",
        ),
        (
            {"kind": "markdown", "value": "~~~go\nfunc A()\n~~~\nA does &lt;a&gt;.<br>"},
            "func A()\n\nA does <a>.",
        ),
        ({"kind": "markdown", "value": "```ts\nconst x: number\n"}, "const x: number"),  # unclosed fence
        (
            {"kind": "markdown", "value": "Only prose, _emphasis_ and __bold__.\n***\nSecond."},
            "Only prose, emphasis and bold.",
        ),
        ({"kind": "markdown", "value": ""}, ""),
        ([], ""),
        (42, ""),
    ],
)
def test_flatten_hover(contents: Any, text: str) -> None:
    assert flatten_hover(contents) == text


def test_code_spans_are_kept_verbatim() -> None:
    text = flatten_hover(
        {"kind": "markdown", "value": "Calls `__init__` and `a*b*c`, not __bold__ or *this*."}
    )
    assert text == "Calls __init__ and a*b*c, not bold or this."


def test_code_blocks_are_kept_verbatim() -> None:
    value = "```python\ndef f(a_b: int) -> int  # *not* emphasis\n```"
    assert flatten_hover({"kind": "markdown", "value": value}) == "def f(a_b: int) -> int  # *not* emphasis"


def test_a_long_first_paragraph_is_cut() -> None:
    text = flatten_hover({"kind": "markdown", "value": "word " * 1000})
    assert len(text) <= 1201 and text.endswith("…")


def _help(label: str, parameters: list[Any], **fields: Any) -> dict[str, Any]:
    return {"signatures": [{"label": label, "parameters": [{"label": p} for p in parameters]}], **fields}


@pytest.mark.parametrize(
    ("help_value", "expected"),
    [
        (
            _help("f(a: int, b: str)", ["a: int", "b: str"], activeParameter=1),
            ("f(a: int, **b: str**)", "b: str"),
        ),
        (
            _help("f(a: int, b: str)", [[2, 8], [10, 16]], activeParameter=0),
            ("f(**a: int**, b: str)", "a: int"),
        ),
        (
            _help("f(a: int, b: str)", ["a: int", "b: str"]),
            ("f(**a: int**, b: str)", "a: int"),
        ),  # omitted: first
        (_help("f(a: int, b: str)", ["a: int", "b: str"], activeParameter=5), ("f(a: int, b: str)", None)),
        (_help("f()", []), ("f()", None)),
        # the parameter name also occurring before "(" is found inside the parentheses
        (_help("a(a, b)", ["a", "b"], activeParameter=0), ("a(**a**, b)", "a")),
        (_help("f(x)", ["y"], activeParameter=0), ("f(x)", None)),
        (None, None),
        ({"signatures": []}, None),
    ],
)
def test_mark_signature(help_value: Any, expected: Any) -> None:
    assert mark_signature(help_value) == expected


def test_signature_level_active_parameter_wins_and_null_marks_none() -> None:
    value = _help("f(a, b)", ["a", "b"], activeParameter=0)
    value["signatures"][0]["activeParameter"] = 1
    assert mark_signature(value) == ("f(a, **b**)", "b")
    value["signatures"][0]["activeParameter"] = None
    assert mark_signature(value) == ("f(a, b)", None)


def test_active_signature_out_of_range_means_the_first() -> None:
    value = {
        "signatures": [
            {"label": "f(a)", "parameters": [{"label": "a"}]},
            {"label": "f(a, b)", "parameters": [{"label": "a"}, {"label": "b"}]},
        ],
        "activeSignature": 1,
        "activeParameter": 1,
    }
    assert mark_signature(value) == ("f(a, **b**)", "b")
    value["activeSignature"] = 7
    assert mark_signature(value) == ("f(a)", None)


def test_offset_labels_count_in_the_position_encoding() -> None:
    label = "f(😀: int, b: str)"
    utf16 = _help(label, [[2, 9], [11, 17]], activeParameter=1)
    assert mark_signature(utf16, PositionEncoding.UTF16) == ("f(😀: int, **b: str**)", "b: str")
    utf8 = _help(label, [[2, 11], [13, 19]], activeParameter=1)
    assert mark_signature(utf8, PositionEncoding.UTF8) == ("f(😀: int, **b: str**)", "b: str")
    utf32 = _help(label, [[2, 8], [10, 16]], activeParameter=1)
    assert mark_signature(utf32, PositionEncoding.UTF32) == ("f(😀: int, **b: str**)", "b: str")


def test_hover_text_describes_the_target_then_the_enclosing_call_without_markup() -> None:
    """Issue 20 item 5: the enclosing call's signature came first, bolded (``***values``), so the summary
    described print instead of the name asked about."""
    result = hover_text(
        {"contents": TSLS}, _help("fetchModels(base: string)", ["base: string"], activeParameter=0)
    )
    assert result == {
        "signature": "fetchModels(base: string)",
        "signatureOf": "enclosingCall",
        "activeParameter": "base: string",
        "text": "function fetchModels(base: string): Promise<Model[]>\n\nFetches the models.\n\n"
        "Inside the call: fetchModels(base: string) [at parameter base: string]",
    }
    assert hover_text({"contents": TSLS}) == {
        "text": "function fetchModels(base: string): Promise<Model[]>\n\nFetches the models."
    }
    assert hover_text(None, None) == {"text": ""}
    assert hover_text(None, _help("f(*values: object)", ["*values: object"])) == {
        "signature": "f(*values: object)",
        "signatureOf": "enclosingCall",
        "activeParameter": "*values: object",
        "text": "Inside the call: f(*values: object) [at parameter *values: object]",
    }
