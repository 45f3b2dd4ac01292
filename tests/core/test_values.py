"""kandev_lsp._values.dataclass behaves as dataclasses.dataclass, without compiling anything (issue 7
items 25 and 26: the standard decorator's ``exec`` per class was most of a cold ``resolve``)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kandev_lsp import _values


def declare(decorator: Callable[..., Any], **options: Any) -> dict[str, type]:
    """The same classes, declared with ``decorator`` (the standard one or ours)."""

    @decorator(frozen=True, slots=True, **options)
    class Point:
        """A point."""

        x: int
        y: int = 0
        tags: tuple[str, ...] = ()
        notes: list[str] = dataclasses.field(default_factory=list, compare=False, repr=False)
        kind: str = dataclasses.field(default="point", init=False)

    @decorator(frozen=True, slots=True, **options)
    class Checked:
        """Validates itself and stores a normalised copy, as LanguageSpec does."""

        name: str
        aliases: tuple[str, ...] = ()

        def __post_init__(self) -> None:
            if not self.name:
                raise ValueError("empty name")
            object.__setattr__(self, "aliases", tuple(sorted(self.aliases)))

    @decorator(**options)
    class Mutable:
        name: str
        items: list[int] = dataclasses.field(default_factory=list)

    @decorator(frozen=True, **options)
    class Hashed:
        """Hash only by key."""

        key: str
        extra: int = dataclasses.field(default=0, hash=False)

    @decorator(frozen=True, slots=True, **options)
    class Child(Point):
        """Inherits every field of Point."""

        z: int = 0

    return {"Point": Point, "Checked": Checked, "Mutable": Mutable, "Hashed": Hashed, "Child": Child}


STANDARD = declare(dataclasses.dataclass)
OURS = declare(_values.dataclass)


def both(name: str) -> list[type]:
    return [STANDARD[name], OURS[name]]


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """What a call returns or raises, comparable across the two implementations."""
    try:
        value = call()
    except Exception as exc:
        return ("raises", type(exc))
    return ("returns", value)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((1,), {}),
        ((1, 2), {}),
        ((1,), {"y": 2, "tags": ("a",)}),
        ((), {"x": 1, "notes": ["n"]}),
        ((), {}),  # missing x
        ((1, 2, (), [], 5), {}),  # too many positional
        ((1,), {"x": 2}),  # x twice
        ((1,), {"kind": "other"}),  # an init=False field
        ((1,), {"nope": 1}),
    ],
)
def test_construction_matches_the_standard_decorator(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    standard, ours = both("Point")
    got_standard = outcome(lambda: standard(*args, **kwargs))
    got_ours = outcome(lambda: ours(*args, **kwargs))
    assert got_standard[0] == got_ours[0]
    if got_standard[0] == "raises":
        assert got_standard[1] is got_ours[1] is TypeError
    else:
        assert repr(got_standard[1]) == repr(got_ours[1])
        assert dataclasses.astuple(got_standard[1]) == dataclasses.astuple(got_ours[1])


def test_repr_equality_and_hash_follow_the_field_options() -> None:
    for cls in both("Point"):
        a, b = cls(1, 2, notes=["x"]), cls(1, 2, notes=["y"])
        assert repr(a) == "declare.<locals>.Point(x=1, y=2, tags=(), kind='point')"
        assert a == b and hash(a) == hash(b)  # notes: compare=False
        assert a != cls(1, 3) and a.notes is not cls(1).notes  # a fresh list per instance
        assert (a == (1, 2)) is False and a.__eq__((1, 2)) is NotImplemented
    for cls in both("Hashed"):
        assert hash(cls("k", 1)) == hash(cls("k", 2)) and cls("k", 1) != cls("k", 2)


def test_instances_of_a_subclass_are_not_equal_to_the_base() -> None:
    for base, child in ((STANDARD["Point"], STANDARD["Child"]), (OURS["Point"], OURS["Child"])):
        assert child(1, 2, z=3) == child(1, 2, z=3)
        assert child(1, 2) != base(1, 2)
        assert [f.name for f in dataclasses.fields(child)] == ["x", "y", "tags", "notes", "kind", "z"]


def test_frozen_instances_refuse_assignment_and_deletion() -> None:
    for cls in both("Point"):
        point = cls(1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            point.x = 2
        with pytest.raises(dataclasses.FrozenInstanceError):
            del point.y
    with pytest.raises(dataclasses.FrozenInstanceError):  # the standard one fails with a TypeError here
        OURS["Point"](1).other = 1


def test_mutable_classes_are_unhashable_and_assignable() -> None:
    for cls in both("Mutable"):
        item = cls("a")
        item.name = "b"
        assert item == cls("b") and item.items is not cls("b").items
        with pytest.raises(TypeError):
            hash(item)


def test_post_init_runs_after_the_fields_are_set() -> None:
    for cls in both("Checked"):
        assert cls("n", ("b", "a")).aliases == ("a", "b")
        with pytest.raises(ValueError, match="empty name"):
            cls("")


def test_the_dataclasses_api_keeps_working() -> None:
    ours = OURS["Point"]
    point = ours(1, 2, notes=["n"])
    assert dataclasses.is_dataclass(point)
    assert [f.name for f in dataclasses.fields(point)] == ["x", "y", "tags", "notes", "kind"]
    moved = dataclasses.replace(point, y=5)
    assert (moved.x, moved.y, moved.notes, moved.kind) == (1, 5, ["n"], "point")
    assert dataclasses.asdict(point) == {"x": 1, "y": 2, "tags": (), "notes": ["n"], "kind": "point"}
    assert ours.__match_args__ == ("x", "y", "tags", "notes")
    assert ours.__slots__ == ("x", "y", "tags", "notes", "kind")
    match point:
        case ours(1, y):  # type: ignore[misc]
            assert y == 2
        case _:
            pytest.fail("no match")


@_values.dataclass(frozen=True, slots=True)
class Stored:
    """Module-level, so that pickle finds it."""

    key: str
    values: tuple[int, ...] = ()
    notes: list[str] = dataclasses.field(default_factory=list)
    kind: str = dataclasses.field(default="stored", init=False)


def test_frozen_slotted_instances_pickle_and_copy() -> None:
    point = Stored("k", (1, 2), ["n"])
    for clone in (pickle.loads(pickle.dumps(point)), copy.copy(point), copy.deepcopy(point)):
        assert clone == point and clone.notes == ["n"] and clone.kind == "stored"


def test_methods_the_class_defines_are_kept() -> None:
    @_values.dataclass(frozen=True, slots=True)
    class Named:
        """Its own repr and equality."""

        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Named) and other.name.lower() == self.name.lower()

        def __hash__(self) -> int:
            return hash(self.name.lower())

    assert repr(Named("A")) == "<A>" and Named("A") == Named("a") and hash(Named("A")) == hash(Named("a"))


def test_options_it_does_not_reproduce_go_to_the_standard_decorator() -> None:
    @_values.dataclass(frozen=True, order=True)
    class Ordered:
        """Ordered by value."""

        value: int

    assert Ordered(1) < Ordered(2)

    @_values.dataclass(frozen=True, kw_only=True)
    class KeywordsOnly:
        """Keyword-only fields."""

        value: int

    with pytest.raises(TypeError):
        KeywordsOnly(1)  # type: ignore[misc]
    assert KeywordsOnly(value=1).value == 1


@contextmanager
def compiled() -> Iterator[list[str]]:
    """Records ``exec``/``compile`` audit events (what the standard decorator does for each method)."""
    events: list[str] = []
    active = [True]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if active[0] and event in ("exec", "compile"):
            events.append(event)

    sys.addaudithook(hook)  # audit hooks cannot be removed: switch it off instead
    try:
        yield events
    finally:
        active[0] = False


def test_declaring_a_class_compiles_nothing() -> None:
    with compiled() as events:
        declare(_values.dataclass)
    assert events == []
    with compiled() as events:
        declare(dataclasses.dataclass)
    assert events  # the standard decorator does: this test would notice a switch back
