"""Work-done progress as a server reports it: which items are active, the last one that ended (K6, K5).

Pure state: the endpoint feeds it the tokens a server creates (``window/workDoneProgress/create``), the
``workDoneToken`` the client put in ``initialize``, and every ``$/progress`` notification, each with the
server generation it came from and the current time. Readers take a :class:`ProgressSnapshot`, a plain
immutable value the broker hands a reattaching client (K5.12) and the agent tools quote when a server is
not ready yet.

The rules (clause ids from the reference):

* tokens are JSON strings or integers (a boolean is neither), scoped to one server generation (K6.3);
* only tokens the server created or the client offered in ``initialize`` are tracked (K6.2); ``$/progress``
  for any other token is ignored (K6.8);
* ``begin`` adds the item, or replaces an item with the same token, with its title, message, optional
  percentage and the local start time (K6.4);
* ``report`` updates only a matching active item; an omitted percentage or message keeps the last one (K6.5);
* ``end`` removes only the matching active item and records its optional message as the most recently
  ended item, remembered for the life of the generation (K6.6, K5.11);
* percentages are clamped to 0-100 (K6.7); malformed payloads and notifications of another generation
  are ignored without disturbing valid items (K6.8);
* active items are listed oldest first; percentages are never averaged (K5.10);
* a new generation starts empty (K5.12).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

__all__ = [
    "EndedProgress",
    "ProgressItem",
    "ProgressSnapshot",
    "ProgressToken",
    "ProgressTracker",
    "is_progress_token",
]

#: A work-done progress token: ``integer | string`` in the specification.
ProgressToken: TypeAlias = int | str

#: A token or a title longer than this is not something a server sends for real; refuse to keep it.
_MAX_TEXT: Final = 4096


def is_progress_token(value: object) -> bool:
    """Whether ``value`` is a valid progress token (a string or an integer, never a boolean)."""
    return (isinstance(value, str) and len(value) <= _MAX_TEXT) or (
        isinstance(value, int) and not isinstance(value, bool)
    )


@dataclass(frozen=True, slots=True)
class ProgressItem:
    """One active piece of server-reported work."""

    token: ProgressToken
    title: str
    message: str | None
    percentage: int | None
    started_at: float
    updated_at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "title": self.title,
            "message": self.message,
            "percentage": self.percentage,
            "startedAt": self.started_at,
            "updatedAt": self.updated_at,
        }


@dataclass(frozen=True, slots=True)
class EndedProgress:
    """The most recently ended item: its title, the end message, when it started and ended."""

    token: ProgressToken
    title: str
    message: str | None
    started_at: float
    ended_at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "title": self.title,
            "message": self.message,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
        }


@dataclass(frozen=True, slots=True)
class ProgressSnapshot:
    """What a server reports right now, as one immutable value.

    ``active`` is oldest first (the first is the primary item, the rest a count, K5.10). ``seen_any`` says
    whether the server reported any progress in this generation (K5.7: never invent progress).
    ``ended_count`` counts items that ended in this generation (readiness "first progress ended").
    """

    generation: int
    active: tuple[ProgressItem, ...]
    last_ended: EndedProgress | None
    seen_any: bool
    ended_count: int

    @property
    def primary(self) -> ProgressItem | None:
        return self.active[0] if self.active else None

    def to_json(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "active": [item.to_json() for item in self.active],
            "lastEnded": self.last_ended.to_json() if self.last_ended else None,
            "seenAny": self.seen_any,
            "endedCount": self.ended_count,
        }


#: Created tokens not begun yet that are remembered (the oldest go first).
_MAX_CREATED = 64


def _clamp(value: object) -> int | None:
    """A percentage clamped to 0-100, or None when it is not a number (bool is not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value:  # NaN cannot come from JSON, but a caller may build params by hand
        return None
    return int(max(0.0, min(100.0, float(value))))


def _text(value: object) -> str | None:
    return value[:_MAX_TEXT] if isinstance(value, str) else None


class ProgressTracker:
    """Active work-done progress of one server generation (rules in the module docstring).

    Every method takes plain values and returns whether it changed the state, so the caller can decide
    to publish a fresh snapshot.
    """

    __slots__ = ("_accepted", "_active", "_created", "_ended_count", "_last_ended", "_seen_any", "generation")

    def __init__(self, generation: int = 1) -> None:
        self.generation = generation
        self._accepted: set[ProgressToken] = set()
        self._active: dict[ProgressToken, ProgressItem] = {}
        self._created: dict[ProgressToken, float] = {}
        self._last_ended: EndedProgress | None = None
        self._seen_any = False
        self._ended_count = 0

    def reset(self, generation: int) -> None:
        """Forget everything: a new server generation starts empty (K5.12)."""
        self.generation = generation
        self._accepted.clear()
        self._active.clear()
        self._created.clear()
        self._last_ended = None
        self._seen_any = False
        self._ended_count = 0

    def accept(
        self, token: object, generation: int | None = None, *, created_at: float | None = None
    ) -> bool:
        """Track ``token``: the server created it (``created_at``: when its ``window/workDoneProgress/create``
        came), or the client offered it in ``initialize``.

        Returns False (and tracks nothing) for an invalid token or another generation.
        """
        if not is_progress_token(token) or (generation is not None and generation != self.generation):
            return False
        assert isinstance(token, int | str)
        self._accepted.add(token)
        if created_at is not None:
            self._created[token] = created_at
            if len(self._created) > _MAX_CREATED:  # a server that creates tokens it never begins
                del self._created[next(iter(self._created))]
        return True

    @property
    def created_not_begun(self) -> tuple[float, ...]:
        """When each token the server created and has not begun yet came: work the server has started
        and will report once its ``begin`` arrives. pyright creates one right after publishing a file it
        has only bound, and sends ``begin`` when the create is answered, which it reads only after the
        check pass that follows (4 s late, measured): until then the bound file's publication looks final.
        """
        return tuple(self._created.values())

    def is_known(self, token: object) -> bool:
        return is_progress_token(token) and token in self._accepted

    def on_progress(self, params: object, now: float, generation: int | None = None) -> bool:
        """Apply one ``$/progress`` notification's ``params``; return whether anything changed."""
        if generation is not None and generation != self.generation:
            return False
        if not isinstance(params, Mapping):
            return False
        token = params.get("token")
        value = params.get("value")
        if not self.is_known(token) or not isinstance(value, Mapping):
            return False
        assert isinstance(token, int | str)
        kind = value.get("kind")
        if kind == "begin":
            title = _text(value.get("title"))
            if title is None:
                return False
            self._created.pop(token, None)
            self._active.pop(token, None)  # a replaced item moves to the end: it started now
            self._active[token] = ProgressItem(
                token, title, _text(value.get("message")), _clamp(value.get("percentage")), now, now
            )
            self._seen_any = True
            return True
        item = self._active.get(token)
        if item is None:
            return False
        if kind == "report":
            message = _text(value.get("message"))
            percentage = _clamp(value.get("percentage"))
            self._active[token] = ProgressItem(
                token,
                item.title,
                item.message if message is None else message,
                item.percentage if percentage is None else percentage,
                item.started_at,
                now,
            )
            return True
        if kind == "end":
            del self._active[token]
            self._accepted.discard(token)  # a token is used for one piece of work
            self._last_ended = EndedProgress(
                token, item.title, _text(value.get("message")), item.started_at, now
            )
            self._ended_count += 1
            return True
        return False

    @property
    def active(self) -> tuple[ProgressItem, ...]:
        return tuple(self._active.values())

    @property
    def ended_count(self) -> int:
        return self._ended_count

    def snapshot(self) -> ProgressSnapshot:
        return ProgressSnapshot(
            self.generation, tuple(self._active.values()), self._last_ended, self._seen_any, self._ended_count
        )
