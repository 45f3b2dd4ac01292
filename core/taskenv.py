"""The task's environment and workspace, as plain values.

A task runs with the agent's environment plus the task's own overrides (PATH, HOME, GOBIN, ...). Every
lookup kandev-lsp makes for a task reads this value, never ``os.environ``, so two tasks with different
toolchains resolve differently in one process. On Windows, variable names compare case-insensitively
(``Path`` and ``PATH`` are one variable), as they do for a Windows process.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping

from kandev_lsp import jsontext
from kandev_lsp._values import dataclass, field
from kandev_lsp.errors import TaskEnvironmentError
from kandev_lsp.platform import HostPlatform

DEFAULT_PATHEXT = (".COM", ".EXE", ".BAT", ".CMD")
CACHE_RELATIVE = (".kandev", "lsp-servers")

#: kandev-lsp's own variables (``KANDEV_LSP_TOKEN``, ``KANDEV_LSP_BROKER_TOKEN``, ``KANDEV_LSP_SETTINGS``,
#: ...) start with this. They configure kandev-lsp, which reads them from its own environment, never a task's.
OWN_VARIABLE_PREFIX = "KANDEV_LSP_"

#: The one own variable a task keeps: the process-tree owner marker (:mod:`kandev_lsp.process`), which every
#: child must inherit so a dead owner's leftovers can be found; it holds random tokens, not a secret.
INHERITED_OWN_VARIABLES = frozenset({"KANDEV_LSP_OWNER"})


def is_own_variable(key: str) -> bool:
    """Whether ``key`` is one of kandev-lsp's own variables that a task must not carry.

    Compared case-insensitively on every host: no task needs a ``kandev_lsp_*`` variable, and dropping one
    costs nothing.
    """
    upper = key.upper()
    return upper.startswith(OWN_VARIABLE_PREFIX) and upper not in INHERITED_OWN_VARIABLES


def without_own_variables(variables: Mapping[str, str]) -> dict[str, str]:
    """``variables`` less kandev-lsp's own (:func:`is_own_variable`).

    kandev-lsp's environment is the base of every task's, and it can hold secrets (the stream's and the
    broker's bearer tokens): a language server, and whatever the repository makes it run, must never
    read them from its environment.
    """
    return {key: value for key, value in variables.items() if not is_own_variable(key)}


@dataclass(frozen=True, slots=True)
class TaskEnvironment(Mapping[str, str]):
    """Environment variables of one task on one host platform.

    Build it with :meth:`from_agent` (the agent's environment with the task's overrides) or
    :meth:`from_mapping`. It is a read-only mapping; on Windows, keys compare case-insensitively and keep
    the spelling they were given.
    """

    variables: Mapping[str, str]
    host: HostPlatform = field(default_factory=HostPlatform.current)
    _folded: Mapping[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        folded = {key.upper(): value for key, value in self.variables.items()} if self.host.is_windows else {}
        object.__setattr__(self, "_folded", folded)

    @classmethod
    def from_mapping(cls, variables: Mapping[str, str], host: HostPlatform | None = None) -> TaskEnvironment:
        return cls(dict(variables), host or HostPlatform.current())

    @classmethod
    def from_agent(
        cls,
        overrides: Mapping[str, str | None] | None = None,
        *,
        base: Mapping[str, str] | None = None,
        host: HostPlatform | None = None,
    ) -> TaskEnvironment:
        """The agent's environment (``base``, default ``os.environ``) with the task's overrides.

        kandev-lsp's own variables are left out of ``base`` (:func:`without_own_variables`): the bearer
        tokens in kandev-lsp's environment must not reach a server. An override of ``None`` removes the
        variable. On Windows an override replaces a variable whatever the case of its name.
        """
        host = host or HostPlatform.current()
        merged = without_own_variables(os.environ if base is None else base)
        for key, value in (overrides or {}).items():
            if host.is_windows:
                for existing in [k for k in merged if k.upper() == key.upper()]:
                    del merged[existing]
            else:
                merged.pop(key, None)
            if value is not None:
                merged[key] = value
        return cls(merged, host)

    # Mapping protocol -------------------------------------------------------------------------------
    def __getitem__(self, key: str) -> str:
        if self.host.is_windows:
            return self._folded[key.upper()]
        return self.variables[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.variables)

    def __len__(self) -> int:
        return len(self.variables)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        return key.upper() in self._folded if self.host.is_windows else key in self.variables

    # Derived values ----------------------------------------------------------------------------------
    def value(self, key: str) -> str:
        """The variable's value, or ``""`` when unset."""
        return self.get(key) or ""

    def path_entries(self) -> list[str]:
        """PATH split with the host's separator, keeping order (empty entries included)."""
        separator = ";" if self.host.is_windows else ":"
        return self.value("PATH").split(separator)

    def pathext(self) -> tuple[str, ...]:
        """Extensions tried for a bare command name on Windows (``PATHEXT`` or the system default)."""
        raw = self.value("PATHEXT")
        exts = tuple(e.strip() for e in raw.split(";") if e.strip().startswith("."))
        return exts or DEFAULT_PATHEXT

    def home(self) -> str:
        """The task's home folder: HOME, or on Windows USERPROFILE when HOME is empty."""
        home = self.value("HOME")
        if not home and self.host.is_windows:
            home = self.value("USERPROFILE")
        return home

    def cache_root(self) -> str | None:
        """``<HOME>/.kandev/lsp-servers``, or None when HOME is not an absolute path (cache disabled)."""
        home = self.home()
        if not self.host.is_absolute(home):
            return None
        return self.host.join(home, *CACHE_RELATIVE)

    def to_dict(self) -> dict[str, str]:
        """A plain dict, for spawning a process."""
        return dict(self.variables)

    def with_overrides(self, overrides: Mapping[str, str | None]) -> TaskEnvironment:
        return TaskEnvironment.from_agent(overrides, base=self.variables, host=self.host)


def load_env_file(path: str) -> dict[str, str]:
    """Read task overrides from a file: a JSON object, or ``KEY=VALUE`` lines (``#`` comments allowed).

    Values are taken literally (no quoting or expansion), so a file written by a program round-trips.
    A UTF-8 byte-order mark (what Windows PowerShell 5's ``Out-File -Encoding utf8`` writes) is skipped:
    kept, it would make the first key ``\ufeffPATH``, so the task's PATH would silently not apply.
    """
    try:
        with open(path, encoding="utf-8-sig") as handle:
            text = handle.read()
    except OSError as exc:
        raise TaskEnvironmentError(f"cannot read task environment file {path!r}: {exc.strerror}") from exc
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = jsontext.loads(text)
        except json.JSONDecodeError as exc:
            raise TaskEnvironmentError(
                f"task environment file {path!r} is not valid JSON (line {exc.lineno}): {exc.msg}"
            ) from exc
        except jsontext.UnacceptableJson as exc:
            raise TaskEnvironmentError(f"task environment file {path!r} is not valid JSON: {exc}") from exc
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            raise TaskEnvironmentError(
                f"task environment file {path!r}: every key and value must be a string"
            )
        return dict(data)
    result: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            # The line is not quoted back: an env file is how secrets reach a task, and a malformed
            # line (a pasted token, ``TOKEN: value``) would put one in the caller's log.
            problem = "it has no '='" if not sep else "nothing comes before its '='"
            raise TaskEnvironmentError(
                f"task environment file {path!r} line {number}: expected KEY=VALUE, but {problem} "
                "(the line is not shown: it may hold a secret)"
            )
        name = key.strip()
        if len(name.split()) > 1:
            # ``export PATH=/x`` (a shell file) made a variable named "export PATH": the task's PATH
            # silently not set, and the agent's used instead.
            kind = "an 'export' line" if name.split()[0] == "export" else "a line"
            raise TaskEnvironmentError(
                f"task environment file {path!r} line {number}: expected KEY=VALUE, but the name before "
                f"its '=' holds a space ({kind} from a shell file?); write KEY=VALUE as a program does: no "
                "'export', no quotes, values taken literally (the line is not shown: it may hold a secret)"
            )
        result[name] = value
    return result


@dataclass(frozen=True, slots=True)
class Task:
    """One task: its workspace folder and its environment."""

    workspace: str
    env: TaskEnvironment

    @property
    def host(self) -> HostPlatform:
        return self.env.host
