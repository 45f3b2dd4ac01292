"""Are the toolchains installers need present and new enough? Answers for ``kandev-lsp doctor``.

npm recipes need ``node`` (in the range the pinned packages declare, :attr:`NpmRecipe.node_engine`) and
``npm``; Go recipes need ``go``. Each tool is found by :func:`kandev_lsp.executables.locate`, the one lookup
every executable kandev-lsp starts goes through (the task's PATH, empty and relative entries skipped,
PATHEXT on Windows, never a file inside the task workspace), and run once, briefly, for its version, with
PATH reduced to entries outside the workspace (npm's ``#!/usr/bin/env node`` must not find a planted node).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kandev_lsp.executables import Lookup, locate, tool_environment
from kandev_lsp.fileprobe import LocalFileProbe
from kandev_lsp.language import GoRecipe, LanguageSpec, NpmRecipe
from kandev_lsp.probe import BriefRun, run_briefly
from kandev_lsp.taskenv import Task, TaskEnvironment
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

VERSION_TIMEOUT = 10.0

_VERSION_IN_TEXT = re.compile(r"(\d+(?:\.\d+)+)")

Runner = Callable[[list[str], TaskEnvironment], BriefRun]
Finder = Callable[[str, Task], Lookup | str | None]


@dataclass(frozen=True, slots=True)
class ToolchainCheck:
    """One tool: whether it is usable for the languages that need it, and what to do if not.

    ``requirement`` is the version range the pinned servers need (empty when any version works).
    ``advice`` is empty when ``ok``.
    """

    tool: str
    needed_by: tuple[str, ...]
    ok: bool
    path: str | None
    version: str | None
    requirement: str
    message: str
    advice: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "neededBy": list(self.needed_by),
            "ok": self.ok,
            "path": self.path,
            "version": self.version,
            "requirement": self.requirement or None,
            "message": self.message,
            "advice": self.advice or None,
        }

    def describe(self) -> str:
        """One or two lines for people, in ``doctor``'s ``ok`` / ``!!`` style."""
        mark = "ok " if self.ok else "!! "
        line = f"{mark}{self.tool:<11} {self.message}  [for {', '.join(self.needed_by)}]"
        return f"{line}\n    {self.advice}" if self.advice else line


def find_tool(command: str, task: Task) -> Lookup:
    """Where the task's ``command`` is (:func:`~kandev_lsp.executables.locate`), or why it is not there."""
    return locate(command, task.env, task.workspace, LocalFileProbe(task.host))


def _run(argv: list[str], env: TaskEnvironment) -> BriefRun:
    return run_briefly(argv, env, timeout=VERSION_TIMEOUT)


def parse_version(text: str) -> str | None:
    """The first dotted version in a tool's output (``v20.20.2`` -> ``20.20.2``, ``go1.19.8`` -> ``1.19.8``)."""
    match = _VERSION_IN_TEXT.search(text)
    return match.group(1) if match else None


def node_ranges(specs: Iterable[LanguageSpec]) -> list[tuple[str, str]]:
    """``(language, node range)`` for every language installed with npm."""
    return [(spec.id, spec.install.node_engine) for spec in specs if isinstance(spec.install, NpmRecipe)]


def combined_range(ranges: Iterable[str]) -> str:
    """The one range all of ``ranges`` accept, without bounds another one makes redundant: ``>=14`` and
    ``>=20`` are ``>=20`` (``>=14,>=20`` is the same set, but read as two requirements). The tightest
    lower and upper bounds are kept (at one version, ``>`` and ``<`` are tighter than ``>=`` and ``<=``),
    other clauses (``!=``, ``~=``, ``==``) as written; a range that does not parse is kept whole."""
    lower: list[Specifier] = []
    upper: list[Specifier] = []
    others: list[str] = []
    for text in ranges:
        try:
            clauses = list(SpecifierSet(text))
        except InvalidSpecifier:
            others.append(text)
            continue
        for clause in clauses:
            if clause.operator in (">=", ">"):
                lower.append(clause)
            elif clause.operator in ("<=", "<"):
                upper.append(clause)
            else:
                others.append(str(clause))
    bounds = [
        *([max(lower, key=lambda c: (Version(c.version), c.operator == ">"))] if lower else []),
        *([min(upper, key=lambda c: (Version(c.version), c.operator == "<="))] if upper else []),
    ]
    return ",".join([*map(str, bounds), *dict.fromkeys(others)])


def satisfies(version: str | None, requirement: str) -> bool:
    """Whether ``version`` is inside ``requirement`` (an empty requirement accepts any version)."""
    if not requirement:
        return True
    try:
        return version is not None and SpecifierSet(requirement).contains(Version(version))
    except (InvalidSpecifier, InvalidVersion):
        return False


def toolchain_checks(
    task: Task,
    specs: Iterable[LanguageSpec],
    *,
    run: Runner = _run,
    find: Finder = find_tool,
) -> list[ToolchainCheck]:
    """Check node and npm (when any language installs with npm) and go (when any installs with go).

    ``run`` and ``find`` are injectable so the rules are tested without the real tools (``find`` may
    answer a path or None instead of a :class:`~kandev_lsp.executables.Lookup`).
    """
    specs = list(specs)
    checks: list[ToolchainCheck] = []
    ranges = node_ranges(specs)
    npm_languages = tuple(language for language, _ in ranges)
    if ranges:
        checks.append(_check_node(task, ranges, run, find))
        checks.append(_check_simple(task, "npm", ["--version"], npm_languages, run, find, _NPM_ADVICE))
    go_languages = tuple(spec.id for spec in specs if isinstance(spec.install, GoRecipe))
    if go_languages:
        checks.append(_check_simple(task, "go", ["version"], go_languages, run, find, _GO_ADVICE))
    return checks


_NPM_ADVICE = "Install npm (it ships with Node.js) and put it on the task's PATH."
_GO_ADVICE = (
    "Install Go from https://go.dev/dl/ (or your system's golang package) and put it on the task's PATH."
)


def _check_simple(
    task: Task,
    tool: str,
    args: list[str],
    needed_by: tuple[str, ...],
    run: Runner,
    find: Finder,
    advice: str,
) -> ToolchainCheck:
    found = find(tool, task)
    lookup = (
        found
        if isinstance(found, Lookup)
        else Lookup(tool, path=found, reason="not found on the task's PATH")
    )
    path = lookup.path
    if path is None:
        if lookup.refused:  # a copy inside the workspace is not the tool being absent: say what was refused
            message = f"refused {', '.join(lookup.refused)}: inside the task workspace, never run"
            advice = f"{lookup.advice} Or pass the project root as the workspace."
            return ToolchainCheck(tool, needed_by, False, None, None, "", message, advice)
        return ToolchainCheck(tool, needed_by, False, None, None, "", "not found on the task's PATH", advice)
    outcome = run([path, *args], tool_environment(task.env, task.workspace, LocalFileProbe(task.host)))
    if not outcome.ok:
        return ToolchainCheck(
            tool, needed_by, False, path, None, "", f"{path} does not run: {outcome.summary}", advice
        )
    version = parse_version(outcome.output)
    return ToolchainCheck(tool, needed_by, True, path, version, "", f"{path} ({version or outcome.summary})")


def _check_node(task: Task, ranges: list[tuple[str, str]], run: Runner, find: Finder) -> ToolchainCheck:
    needed_by = tuple(language for language, _ in ranges)
    requirement = combined_range(rng for _, rng in ranges if rng)
    advice = f"Install Node.js {requirement} (it includes npm) and put it on the task's PATH."
    basic = _check_simple(task, "node", ["--version"], needed_by, run, find, advice)
    unmet = [(language, rng) for language, rng in ranges if not satisfies(basic.version, rng)]
    if not basic.ok or not unmet:
        return ToolchainCheck(
            "node", needed_by, basic.ok, basic.path, basic.version, requirement, basic.message, basic.advice
        )
    needs = "; ".join(f"{language} needs node {rng}" for language, rng in unmet)
    return ToolchainCheck(
        "node",
        needed_by,
        False,
        basic.path,
        basic.version,
        requirement,
        f"{basic.path} is version {basic.version or 'unknown'}: {needs}",
        f"Install Node.js {requirement} and put it first on the task's PATH.",
    )
