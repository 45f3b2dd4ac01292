"""Pieces every subcommand shares: the task from flags, the plugin host, JSON output."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from kandev_lsp.errors import TaskEnvironmentError
from kandev_lsp.host import PluginHost
from kandev_lsp.platform import HostPlatform
from kandev_lsp.taskenv import Task, TaskEnvironment, load_env_file


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


def parse_platform(text: str | None) -> HostPlatform:
    if not text:
        return HostPlatform.current()
    try:
        return HostPlatform.parse(text)
    except ValueError as exc:
        raise TaskEnvironmentError(f"--platform: {exc}") from exc


def task_from_args(args: argparse.Namespace) -> Task:
    """The task: this process's environment with the env file's and ``--env`` overrides."""
    overrides: dict[str, str | None] = {}
    if getattr(args, "env_file", None):
        overrides.update(load_env_file(args.env_file))
    for item in getattr(args, "env", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise TaskEnvironmentError(f"--env {item!r}: expected KEY=VALUE")
        overrides[key] = value if value else None
    host = parse_platform(getattr(args, "platform", None))
    env = TaskEnvironment.from_agent(overrides, host=host)
    workspace = getattr(args, "workspace", None) or os.getcwd()
    return Task(os.path.abspath(workspace) if not host.is_windows else workspace, env)


def load_plugins() -> PluginHost:
    """Plugins from entry points; load problems go to stderr so they are never silent."""
    plugins = PluginHost.load()
    for problem in plugins.problems:
        print(f"kandev-lsp: warning: {problem}", file=sys.stderr)
    return plugins


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")
