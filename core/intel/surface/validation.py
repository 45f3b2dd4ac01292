"""Payload validation against the tools' schemas, with messages that say what to fix.

A model that sends ``"line": "12"``, ``"kind": "refs"`` or ``"targte": {...}`` should learn from one
answer what to send instead: each problem names the argument by its dotted path, what was expected, what
came, and for names and enum values the nearest valid one. The validator implements exactly the subset of
JSON Schema the tool schemas use (see :mod:`~kandev_lsp.intel.surface.schemas`); :data:`KEYWORDS` lists it, and a
schema using anything else is refused (:func:`check_schema`) so a keyword cannot be silently ignored.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["KEYWORDS", "check_schema", "compile_check", "validate"]

#: Keywords :func:`validate` enforces, and annotations it reads but does not enforce.
KEYWORDS: Final = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "minimum",
        "maximum",
        "minLength",
        "items",
        "minItems",
        "maxItems",
    }
)
ANNOTATIONS: Final = frozenset({"description", "default", "title"})

_TYPE_WORDS: Final = {
    "object": "an object",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "an array",
}


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_type(value: Any, expected: str) -> bool:
    if expected == "object":
        return isinstance(value, dict)
    if expected == "string":
        return isinstance(value, str)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if expected == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected == "array":
        return isinstance(value, list)
    raise ValueError(f"schema type {expected!r} is not supported")


def _name(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _nearest(word: str, choices: list[str]) -> str:
    near = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


def validate(schema: Mapping[str, Any], value: Any, path: str = "") -> list[str]:
    """Every problem of ``value`` against ``schema``, as sentences; ``[]`` when it is valid."""
    where = f"`{path}`" if path else "the arguments"
    expected = schema.get("type")
    if expected is not None and not _is_type(value, expected):
        hint = ""
        if (
            expected in ("integer", "number")
            and isinstance(value, str)
            and value.strip().lstrip("-").isdigit()
        ):
            hint = f" (write {value.strip()} without quotes)"
        elif expected == "boolean" and isinstance(value, str) and value.lower() in ("true", "false"):
            hint = f" (write {value.lower()} without quotes)"
        return [f"{where} must be {_TYPE_WORDS[expected]}, got {_json_kind(value)} {_shown(value)}{hint}"]
    problems: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        choices = [str(choice) for choice in schema["enum"]]
        near = _nearest(str(value), choices) if isinstance(value, str) else ""
        problems.append(f"{where} must be one of {', '.join(choices)}; got {_shown(value)}{near}")
    if isinstance(value, str) and "minLength" in schema and len(value) < schema["minLength"]:
        problems.append(f"{where} must not be empty" if schema["minLength"] == 1 else f"{where} is too short")
    if isinstance(value, int | float) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            if low is not None and high is not None:
                problems.append(f"{where} must be between {low} and {high}, got {_shown(value)}")
            elif low is not None:
                problems.append(f"{where} must be at least {low}, got {_shown(value)}")
            else:
                problems.append(f"{where} must be at most {high}, got {_shown(value)}")
    if isinstance(value, list):
        low, high = schema.get("minItems"), schema.get("maxItems")
        if low is not None and len(value) < low:
            problems.append(f"{where} needs at least {low} item{'s' if low != 1 else ''}, got {len(value)}")
        if high is not None and len(value) > high:
            problems.append(f"{where} takes at most {high} items, got {len(value)}")
        if "items" in schema:
            for index, item in enumerate(value):
                problems += validate(schema["items"], item, f"{path or 'arguments'}[{index}]")
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                description = properties.get(key, {}).get("description", "")
                about = f": {description.split('. ')[0].rstrip('.')}" if description else ""
                problems.append(f"missing `{_name(path, key)}`{about}")
        for key, item in value.items():
            if key in properties:
                problems += validate(properties[key], item, _name(path, key))
            elif schema.get("additionalProperties") is False:
                allowed = ", ".join(properties) or "none"
                problems.append(
                    f"unknown argument `{_name(path, key)}`{_nearest(str(key), list(properties))}; "
                    f"allowed here: {allowed}"
                )
    return problems


def check_schema(schema: Mapping[str, Any], path: str = "schema") -> None:
    """Refuse a schema that uses a keyword :func:`validate` does not enforce.

    :raises ValueError: naming the keyword and where it is.
    """
    for key, item in schema.items():
        if key not in KEYWORDS and key not in ANNOTATIONS:
            raise ValueError(f"{path}: keyword {key!r} is not enforced by the intel validator")
        if key == "type" and item not in _TYPE_WORDS:
            raise ValueError(f"{path}: type {item!r} is not supported")
        if key == "additionalProperties" and item is not False:
            raise ValueError(f"{path}: additionalProperties must be false")
    for name, sub in schema.get("properties", {}).items():
        check_schema(sub, f"{path}.{name}")
    if "items" in schema:
        check_schema(schema["items"], f"{path}[]")


#: The schema types an ``isinstance`` decides alone (booleans are ints, so integer and number are not:
#: those go through ``_is_type``).
_PLAIN_TYPES: Final[Mapping[str, type]] = {"object": dict, "string": str, "boolean": bool, "array": list}


def compile_check(schema: Mapping[str, Any]) -> Callable[[Any], bool]:
    """Whether a value is valid against ``schema``: ``validate(schema, value) == []``, decided without
    building any message or dotted path (issue 9 overhead goal: a valid call, the usual one, pays only
    its checks). Compile once per schema; ask :func:`validate` for the problems of a value it refuses.
    """
    expected = schema.get("type")
    # A plain class where isinstance decides the type alone (no call per value); a check otherwise.
    plain = _PLAIN_TYPES.get(expected) if expected is not None else None
    numeric = expected if expected is not None and plain is None else None
    enum = schema.get("enum")
    min_length = schema.get("minLength")
    low, high = schema.get("minimum"), schema.get("maximum")
    bounded = low is not None or high is not None
    min_items, max_items = schema.get("minItems"), schema.get("maxItems")
    items = compile_check(schema["items"]) if "items" in schema else None
    properties = {key: compile_check(sub) for key, sub in schema.get("properties", {}).items()}
    required = tuple(schema.get("required", ()))
    closed = schema.get("additionalProperties") is False

    def check(value: Any) -> bool:
        if plain is not None:
            if not isinstance(value, plain):
                return False
        elif numeric is not None and not _is_type(value, numeric):
            return False
        if enum is not None and value not in enum:
            return False
        if isinstance(value, str):
            return min_length is None or len(value) >= min_length
        if isinstance(value, dict):
            for key in required:
                if key not in value:
                    return False
            for key, item in value.items():
                sub = properties.get(key)
                if sub is None:
                    if closed:
                        return False
                elif not sub(item):
                    return False
            return True
        if isinstance(value, list):
            if (min_items is not None and len(value) < min_items) or (
                max_items is not None and len(value) > max_items
            ):
                return False
            return items is None or all(items(item) for item in value)
        if bounded and isinstance(value, int | float) and not isinstance(value, bool):
            return not ((low is not None and value < low) or (high is not None and value > high))
        return True

    return check
