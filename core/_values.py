"""``dataclass`` for kandev-lsp's value classes, without the standard decorator's start-up cost.

Why: ``dataclasses.dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` as source text and compiles it with ``exec`` when the class is
created, at import time: about 2 ms per frozen class on the project's machines. ``kandev-lsp resolve``
created two dozen of them before resolving anything, which was more than the whole interpreter's start
(issue 7 items 25 and 26: a cold ``resolve`` and ``run`` pay it on every start).

This decorator keeps everything the standard one gives the rest of the code and plugin authors: the class
is still processed by ``dataclasses.dataclass`` (``fields``, ``replace``, ``asdict``, ``is_dataclass``,
``__match_args__``, ``slots``, the mutable-default check), but with ``init``, ``repr`` and ``eq`` turned
off there, so nothing is compiled; the same methods are then attached as ordinary functions that read
the fields from a plan computed once per class. They behave as the generated ones do: positional and
keyword arguments, defaults and ``default_factory``, ``init=False`` fields, ``__post_init__``, fields with
``repr=False`` / ``compare=False`` / ``hash=...``, ``FrozenInstanceError`` on assignment, value equality
between instances of the exact same class, hashing of frozen classes, and pickling / copying of frozen
slotted ones. A method the class body defines itself is kept, as with the standard decorator.

Type checkers see ``dataclasses.dataclass`` itself (mypy's dataclass support applies unchanged). Options
this module does not reproduce (``order``, ``unsafe_hash``, ``kw_only``, ``match_args=False``,
``weakref_slot``, ``InitVar`` and ``KW_ONLY`` annotations) go to the standard decorator. One difference
remains: ``__dataclass_params__`` records ``init``, ``repr``, ``eq`` and ``frozen`` as false, so a
*standard* frozen dataclass cannot subclass one of these (none does; subclass with this decorator).
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import MISSING, FrozenInstanceError, field
from operator import attrgetter
from reprlib import recursive_repr
from typing import TYPE_CHECKING, Any

__all__ = ["dataclass", "field"]

if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:

    def dataclass(
        cls: type | None = None,
        /,
        *,
        init: bool = True,
        repr: bool = True,
        eq: bool = True,
        frozen: bool = False,
        slots: bool = False,
        **others: Any,
    ) -> Any:
        """Drop-in for ``dataclasses.dataclass`` (see the module's docstring)."""

        def wrap(cls: type) -> type:
            if any(others.get(name, default) != default for name, default in _STANDARD_ONLY.items()) or (
                _pseudo_fields(cls)
            ):
                return dataclasses.dataclass(  # type: ignore[no-any-return]
                    cls, init=init, repr=repr, eq=eq, frozen=frozen, slots=slots, **others
                )
            return _value_class(cls, init=init, repr=repr, eq=eq, frozen=frozen, slots=slots)

        return wrap if cls is None else wrap(cls)


#: Options of ``dataclasses.dataclass`` left to the standard decorator, with their defaults.
_STANDARD_ONLY: dict[str, object] = {
    "order": False,
    "unsafe_hash": False,
    "match_args": True,
    "kw_only": False,
    "weakref_slot": False,
}


def _pseudo_fields(cls: type) -> bool:
    """Whether ``cls`` declares an ``InitVar`` or a ``KW_ONLY`` marker (left to the standard decorator)."""
    for annotation in inspect.get_annotations(cls).values():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if "InitVar" in text or "KW_ONLY" in text:
            return True
    return False


class _Factory:
    """A ``default_factory``, told apart from a plain default in the plan."""

    __slots__ = ("make",)

    def __init__(self, make: Any) -> None:
        self.make = make


def _value_class(cls: type, *, init: bool, repr: bool, eq: bool, frozen: bool, slots: bool) -> type:
    own = dict(cls.__dict__)
    if frozen and ("__setattr__" in own or "__delattr__" in own):
        name = "__setattr__" if "__setattr__" in own else "__delattr__"
        raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    if not own.get("__doc__"):
        cls.__doc__ = f"{cls.__name__}({', '.join(own.get('__annotations__', {}))})"
    cls = dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=False, slots=slots)
    fields = dataclasses.fields(cls)
    names = frozenset(f.name for f in fields)
    methods: dict[str, Any] = {}
    if init:
        methods["__init__"] = _make_init(cls, fields, frozen)
    if repr:
        methods["__repr__"] = _make_repr(tuple(f.name for f in fields if f.repr))
    if eq:
        methods["__eq__"] = _make_eq(_values_of(tuple(f.name for f in fields if f.compare)))
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    if eq and not explicit_hash:
        hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        # Mutable and equal by value: unhashable, as with the standard decorator.
        methods["__hash__"] = _make_hash(_values_of(hashed)) if frozen else None
        own.pop("__hash__", None)
    if frozen:
        methods["__setattr__"] = _make_setattr(cls, names)
        methods["__delattr__"] = _make_delattr(cls, names)
        if slots:  # a slotted class has no __dict__ for pickle and copy to fill: they need these
            methods["__getstate__"] = _getstate
            methods["__setstate__"] = _setstate
    for name, method in methods.items():
        if name not in own:  # what the class body defines itself is kept
            setattr(cls, name, method)
    return cls


def _values_of(names: tuple[str, ...]) -> Any:
    """A function giving the tuple of ``names``' values of an instance (a tuple even for one name)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        only = attrgetter(names[0])
        return lambda self: (only(self),)
    return lambda self: ()


def _make_init(cls: type, fields: tuple[dataclasses.Field[Any], ...], frozen: bool) -> Any:
    qualname = f"{cls.__qualname__}.__init__()"
    names = tuple(f.name for f in fields if f.init)
    defaults = tuple(_default_of(f) for f in fields if f.init)
    later = tuple((f.name, _default_of(f)) for f in fields if not f.init)
    later = tuple(item for item in later if item[1] is not MISSING)  # no default: left unset, as there
    count = len(names)
    post_init = hasattr(cls, "__post_init__")
    assign = object.__setattr__ if frozen else setattr
    # A frozen slotted class's fields are set through their slot descriptors: no name lookup per field.
    slots: list[Any] = [getattr(cls, name, None) for name in names] if frozen else []
    setters = tuple(slot.__set__ for slot in slots) if slots and all(map(_is_slot, slots)) else None

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """Every init field's value from a call's arguments, as the generated ``__init__`` binds them."""
        given = len(args)
        if given > count:
            raise TypeError(f"{qualname} takes {count + 1} positional arguments but {given + 1} were given")
        values = list(args)
        for index in range(given, count):
            name = names[index]
            value = kwargs.pop(name, MISSING)
            if value is MISSING:
                value = defaults[index]
                if value is MISSING:
                    raise TypeError(f"{qualname} missing 1 required argument: {name!r}")
                if type(value) is _Factory:
                    value = value.make()
            values.append(value)
        if kwargs:
            extra = next(iter(kwargs))
            if extra in names:
                raise TypeError(f"{qualname} got multiple values for argument {extra!r}")
            raise TypeError(f"{qualname} got an unexpected keyword argument {extra!r}")
        return tuple(values)

    # Defaults are a suffix (dataclasses requires it): positional calls that leave out only plain
    # defaults, the usual call, take them from a tuple.
    required = sum(1 for default in defaults if default is MISSING)
    plain_tail = not any(type(default) is _Factory for default in defaults)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs or len(args) != count:
            if not kwargs and plain_tail and required <= len(args) < count:
                args += defaults[len(args) :]
            else:
                args = bind(args, kwargs)
        if setters is not None:
            for setter, value in zip(setters, args, strict=False):
                setter(self, value)
        else:
            for name, value in zip(names, args, strict=False):
                assign(self, name, value)
        if later:
            for name, value in later:
                assign(self, name, value.make() if type(value) is _Factory else value)
        if post_init:
            self.__post_init__()

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _is_slot(attribute: object) -> bool:
    return type(attribute).__name__ == "member_descriptor"


def _default_of(f: dataclasses.Field[Any]) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return _Factory(f.default_factory)
    return MISSING


def _make_repr(names: tuple[str, ...]) -> Any:
    @recursive_repr()
    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__


def _make_eq(values: Any) -> Any:
    def __eq__(self: Any, other: object) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _make_hash(values: Any) -> Any:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _make_setattr(cls: type, names: frozenset[str]) -> Any:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # type: ignore[arg-type]

    return __setattr__


def _make_delattr(cls: type, names: frozenset[str]) -> Any:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)  # type: ignore[arg-type]

    return __delattr__


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=False):
        object.__setattr__(self, f.name, value)
