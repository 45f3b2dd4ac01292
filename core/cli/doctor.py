"""``kandev-lsp doctor``: every language, where its server is found and how, or why not and what to do."""

from __future__ import annotations

import argparse
from typing import Any

from kandev_lsp.cli.common import (
    add_settings_argument,
    add_task_arguments,
    describe_settings,
    load_plugins,
    print_json,
    settings_report,
    task_from_args,
)

VERSION_TIMEOUT = 5.0


def add_doctor_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check every language and toolchain for a task, and say what to do",
        description="For every language: where its server was found and its version, or why it was not "
        "found and what to do. Then the toolchains installers need (node, npm, go). Exit 0 when every "
        "non-experimental language resolves and the settings file is valid, 1 otherwise.",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--no-version", action="store_true", help="do not run servers to learn their versions"
    )
    add_task_arguments(parser)
    add_settings_argument(parser)
    parser.set_defaults(handler=run_doctor)


def run_doctor(args: argparse.Namespace) -> int:
    from kandev_lsp.executables import tool_environment
    from kandev_lsp.fileprobe import LocalFileProbe
    from kandev_lsp.install import InstallManager
    from kandev_lsp.install.toolchains import toolchain_checks
    from kandev_lsp.probe import run_briefly
    from kandev_lsp.resolver import Resolver

    plugins = load_plugins(report=False)  # listed in the report
    task = task_from_args(args)
    resolver = Resolver(plugins)
    # Version probes are kandev-lsp's own runs: a launcher's `#!/usr/bin/env node` must not find a node
    # planted in the workspace (the server itself, when it serves, runs with the task's environment).
    probe_env = tool_environment(task.env, task.workspace, LocalFileProbe(task.host))
    managed = {server.language: server for server in InstallManager(plugins).installed(task)}
    languages: list[dict[str, Any]] = []
    healthy = True
    for spec in plugins.languages().values():
        resolution = resolver.resolve(spec.id, task)
        entry: dict[str, Any] = {
            "language": spec.id,
            "experimental": spec.experimental,
            **resolution.to_json(),
            "installerAvailable": plugins.installer_available(spec, task.host),
        }
        if resolution.found and resolution.executable and spec.version_args and not args.no_version:
            run = run_briefly([*resolution.command, *spec.version_args], probe_env, timeout=VERSION_TIMEOUT)
            entry["serverVersion"] = run.summary if run.ok else None
        server = managed.get(spec.id)
        entry["managed"] = (
            {
                "version": server.receipt.version,
                "matchesPin": server.matches_pin,
                "binaryPresent": server.binary_present,
            }
            if server
            else None
        )
        if not resolution.found and not spec.experimental:
            healthy = False
        languages.append(entry)
    settings = settings_report(args, plugins.languages())
    healthy = healthy and settings["error"] is None
    checks = toolchain_checks(task, plugins.languages().values())
    toolchains = [check.to_json() for check in checks]
    if args.json:
        print_json(
            {
                "languages": languages,
                "toolchains": toolchains,
                "problems": [str(p) for p in plugins.problems],
                "warnings": plugins.warnings,
                "settings": settings,
            }
        )
        return 0 if healthy else 1
    for entry in languages:
        mark = "ok " if entry["status"] == "found" else ("-- " if entry["experimental"] else "!! ")
        if entry["status"] == "found":
            version = f" ({entry['serverVersion']})" if entry.get("serverVersion") else ""
            print(f"{mark}{entry['language']:<11} {entry['executable']}{version}  [from {entry['source']}]")
        else:
            print(f"{mark}{entry['language']:<11} {entry['message']}")
        if entry["managed"]:
            print(
                f"    managed install {entry['managed']['version']}: {_managed_state(entry['managed'], spec_id=entry['language'])}"
            )
    print()
    for check in checks:
        print(check.describe())
    for problem in plugins.problems:
        print(f"!! {problem}")
    for warning in plugins.warnings:
        print(f"-- {warning}")
    for line in describe_settings(settings):
        print(line)
    return 0 if healthy else 1


def _managed_state(managed: dict[str, Any], *, spec_id: str) -> str:
    if not managed["binaryPresent"]:
        return f"its executable is gone; run `kandev-lsp install {spec_id}` again"
    if not managed["matchesPin"]:
        return f"differs from the plugin's pin; `kandev-lsp install {spec_id}` installs the pinned version"
    return "matches the plugin's pin"
