"""Pieces every subcommand shares: the task from flags, the settings file, the plugin host, JSON output.

kandev-lsp's own variables (``KANDEV_LSP_SETTINGS``, ``KANDEV_LSP_DISABLE_PLUGINS``, ...: every name that
starts with ``KANDEV_LSP_``) configure kandev-lsp itself and are read from kandev-lsp's own environment.
The task flags (``--env``, ``--env-file``) describe the task the servers run in, so a ``KANDEV_LSP_*``
name there is refused as a usage error that says what to do instead (``--settings FILE`` for the
settings file), rather than being passed to the task and silently not configuring kandev-lsp. Nor does
the task inherit them from this process's environment (``TaskEnvironment.from_agent`` leaves them out):
``KANDEV_LSP_TOKEN`` and ``KANDEV_LSP_BROKER_TOKEN`` are secrets no server may read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kandev_lsp.errors import KandevLspError

# The plugin host (pluggy), the platform and the task environment are imported by the functions that use
# them: every command imports this module, and ``kandev-lsp code`` asks its warm daemon before it needs any
# of them (issue 19: the client's start-up is most of a warm call).
if TYPE_CHECKING:
    from kandev_lsp.host import PluginHost
    from kandev_lsp.language import LanguageSpec
    from kandev_lsp.platform import HostPlatform
    from kandev_lsp.settings import UserSettings
    from kandev_lsp.taskenv import Task


class UsageError(KandevLspError):
    """A flag's value is malformed or not allowed; ``kandev-lsp`` exits 2, as for argparse's errors."""

    failure = "usage"


#: The longest duration a seconds flag takes (a week): longer ones would overflow the platform's timers
#: (``--deadline 1e300`` made the socket's settimeout raise OverflowError, a traceback).
MAX_SECONDS = 7 * 24 * 3600.0


def positive_seconds(value: str) -> float:
    """An argparse ``type`` for a duration flag: a finite number of seconds above 0, at most
    :data:`MAX_SECONDS` (not ``0``, ``-1``, ``nan`` or ``inf``, which would never time out, or at once)."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= MAX_SECONDS:  # False for nan too
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a number of seconds above 0 and at most {MAX_SECONDS:g} (a week), e.g. 30"
        )
    return seconds


def add_task_arguments(parser: argparse.ArgumentParser, *, simulated_platform: bool = True) -> None:
    """``--workspace``, ``--env-file``, ``--env KEY=VALUE`` and (for explaining) ``--platform``."""
    group = parser.add_argument_group("task")
    group.add_argument(
        "--workspace", metavar="DIR", help="the task's workspace folder (default: current folder)"
    )
    group.add_argument(
        "--env-file",
        metavar="FILE",
        help="task environment overrides: a JSON object or KEY=VALUE lines, applied over this process's environment",
    )
    group.add_argument(
        "--env",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="one task environment override (repeatable; KEY= with no value unsets KEY); applied after --env-file",
    )
    if simulated_platform:
        group.add_argument(
            "--platform",
            metavar="OS-ARCH",
            help="resolve as if on another host, e.g. windows-x86_64 or darwin-aarch64 (for explaining rules)",
        )


def add_settings_argument(parser: argparse.ArgumentParser, *, live: bool = False) -> None:
    """``--settings FILE``; ``live`` says the file is re-read while servers run."""
    parser.add_argument(
        "--settings",
        metavar="FILE",
        help="the settings file (default: $KANDEV_LSP_SETTINGS or the per-user config folder)"
        + ("; re-read live" if live else ""),
    )


def load_user_settings(
    args: argparse.Namespace, known: Mapping[str, LanguageSpec] | None = None
) -> UserSettings:
    """The settings file named by ``--settings`` (or the default), its warnings printed on stderr once."""
    from kandev_lsp.settings import load_settings

    settings = load_settings(getattr(args, "settings", None), known=known)
    for warning in settings.warnings():
        print(f"kandev-lsp: warning: {warning}", file=sys.stderr)
    return settings


def settings_report(args: argparse.Namespace, known: Mapping[str, LanguageSpec]) -> dict[str, Any]:
    """The settings file's state for ``doctor``: which file, whether it loads, what is ignored here.

    Never raises for a bad file: doctor reports it (``error``) instead of stopping.
    """
    from kandev_lsp.errors import SettingsError
    from kandev_lsp.settings import load_settings, settings_path

    named = getattr(args, "settings", None)
    path, _ = settings_path(named)
    report: dict[str, Any] = {"file": path, "present": os.path.exists(path), "error": None}
    try:
        settings = load_settings(named, known=known)
    except SettingsError as exc:
        report["error"] = str(exc)
        return report | {"ignoredLanguages": {}, "warnings": []}
    ignored = {name: list(ids) for name, ids in settings.ignored_languages.items()}
    return report | {"ignoredLanguages": ignored, "warnings": settings.warnings()}


def describe_settings(report: dict[str, Any]) -> list[str]:
    """``doctor``'s text lines for :func:`settings_report`."""
    if report["error"]:
        return [f"!! settings   {report['error']}"]
    state = "valid" if report["present"] else "absent (defaults apply)"
    return [f"ok settings   {report['file']}: {state}", *(f"-- settings   {w}" for w in report["warnings"])]


def parse_platform(text: str | None) -> HostPlatform:
    from kandev_lsp.platform import HostPlatform

    if not text:
        return HostPlatform.current()
    try:
        return HostPlatform.parse(text)
    except ValueError as exc:
        raise UsageError(f"--platform {text}: {exc}") from exc


def _refuse_own_variables(overrides: Mapping[str, str | None], where: str) -> None:
    from kandev_lsp.taskenv import OWN_VARIABLE_PREFIX

    own = sorted(key for key in overrides if key.upper().startswith(OWN_VARIABLE_PREFIX))
    if not own:
        return
    hint = (
        " For the settings file, pass --settings FILE."
        if any(key.upper() == "KANDEV_LSP_SETTINGS" for key in own)
        else ""
    )
    raise UsageError(
        f"{where} sets {', '.join(own)}: kandev-lsp reads its own KANDEV_LSP_* variables from its own "
        f"environment, not from the task's, so this would not configure it.{hint} Otherwise set the "
        "variable in the environment kandev-lsp is started with."
    )


def task_from_args(args: argparse.Namespace) -> Task:
    """The task: this process's environment, less kandev-lsp's own variables, with the env file's and
    ``--env`` overrides."""
    from kandev_lsp.taskenv import Task, TaskEnvironment, load_env_file

    overrides: dict[str, str | None] = {}
    if getattr(args, "env_file", None):
        from_file = load_env_file(args.env_file)
        _refuse_own_variables(from_file, f"--env-file {args.env_file}")
        overrides.update(from_file)
    flags: dict[str, str | None] = {}
    for item in getattr(args, "env", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--env {item!r}: expected KEY=VALUE (KEY= unsets KEY)")
        flags[key] = value if value else None
    _refuse_own_variables(flags, "--env")
    overrides.update(flags)
    host = parse_platform(getattr(args, "platform", None))
    env = TaskEnvironment.from_agent(overrides, host=host)
    workspace = getattr(args, "workspace", None) or os.getcwd()
    return Task(os.path.abspath(workspace) if not host.is_windows else workspace, env)


def load_plugins(*, report: bool = True) -> PluginHost:
    """Plugins from entry points. Their load problems and warnings go to stderr, once each, so they are
    never silent; ``report=False`` is for the commands that list them in their own output (``plugins``,
    ``doctor``)."""
    import contextlib

    from kandev_lsp.host import PluginHost

    # What a plugin prints while it is imported is not the command's output: it would come before a
    # --json answer (`resolve go --json | jq` failed on 'chatty plugin loaded'), or the stdio servers' frames.
    with contextlib.redirect_stdout(sys.stderr):
        plugins = PluginHost.load()
    if report:
        for message in [*map(str, plugins.problems), *plugins.warnings]:
            print(f"kandev-lsp: warning: {message}", file=sys.stderr)
    return plugins


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")
