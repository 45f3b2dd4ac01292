"""``kandev-lsp languages``, ``plugins`` and ``config``: what is loaded and what servers will see."""

from __future__ import annotations

import argparse
from typing import Any

from kandev_lsp.cli.common import add_settings_argument, load_plugins, load_user_settings, print_json


def add_info_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    languages = subparsers.add_parser(
        "languages",
        help="list the languages the loaded plugins provide",
        description="The languages the loaded plugins provide, with the plugin of each. Exit 0.",
    )
    languages.add_argument("--json", action="store_true", help="machine-readable output")
    languages.set_defaults(handler=run_languages)

    plugins = subparsers.add_parser(
        "plugins",
        help="list loaded plugins (name, version, hooks) and load problems",
        description="The loaded plugins (name, version, the hooks each implements) and the problems of "
        "those that failed to load. Exit 0 when every plugin loaded; 1 when one failed (also with --json).",
    )
    plugins.add_argument("--json", action="store_true", help="machine-readable output")
    plugins.set_defaults(handler=run_plugins)

    config = subparsers.add_parser(
        "config",
        help="show the settings a server of LANG receives (plugin defaults + your lsp_server_configs)",
        description="Print the merged per-language settings, and optionally the answer to one "
        "workspace/configuration section, exactly as a running server would receive them (--json: one "
        "object with settingsFile, the path of the settings file read, and settingsFilePresent). Exit 0; "
        "1 the settings file is unreadable or invalid, or named (--settings, $KANDEV_LSP_SETTINGS) but "
        "missing; 13 unknown language.",
    )
    config.add_argument("language", metavar="LANG")
    config.add_argument(
        "--section", help="answer this workspace/configuration section (e.g. go.ui.semanticTokens)"
    )
    add_settings_argument(config)
    config.add_argument("--json", action="store_true", help="machine-readable output")
    config.set_defaults(handler=run_config)


def run_languages(args: argparse.Namespace) -> int:
    plugins = load_plugins()
    rows: list[dict[str, Any]] = []
    for spec in plugins.languages().values():
        rows.append(
            {
                "id": spec.id,
                "name": spec.display_name,
                "command": [spec.command, *spec.args],
                "extensions": list(spec.file_extensions),
                "languageIds": list(spec.language_ids),
                "install": spec.install.kind,
                "experimental": spec.experimental,
                "plugin": plugins.plugin_of(spec.id),
            }
        )
    if args.json:
        print_json(rows)
        return 0
    for row in rows:
        flag = " (experimental)" if row["experimental"] else ""
        print(f"{row['id']:<12} {row['name']}{flag}: {' '.join(row['command'])}  [install: {row['install']}]")
    return 0


def run_plugins(args: argparse.Namespace) -> int:
    plugins = load_plugins(report=False)  # listed below
    infos = plugins.plugins()
    if args.json:
        print_json(
            {
                "plugins": [
                    {
                        "name": i.name,
                        "version": i.version,
                        "module": i.module,
                        "hooks": list(i.hooks),
                        "languages": list(i.languages),
                    }
                    for i in infos
                ],
                "problems": [
                    {"plugin": p.plugin, "phase": p.phase, "error": p.error} for p in plugins.problems
                ],
                "disabled": plugins.disabled,
                "warnings": plugins.warnings,
            }
        )
        return 1 if plugins.problems else 0
    for info in infos:
        print(f"{info.name} {info.version} ({info.module}): languages {', '.join(info.languages) or '-'}")
        print(f"    hooks: {', '.join(info.hooks)}")
    for name in plugins.disabled:
        print(f"{name}: disabled by KANDEV_LSP_DISABLE_PLUGINS")
    for problem in plugins.problems:
        print(f"problem: {problem}")
    for warning in plugins.warnings:
        print(f"warning: {warning}")
    return 1 if plugins.problems else 0


def run_config(args: argparse.Namespace) -> int:
    from kandev_lsp.settings import language_settings, settings_path

    plugins = load_plugins()
    spec = plugins.language(args.language)
    user = load_user_settings(args, plugins.languages())
    settings = language_settings(plugins.default_settings(spec), user, spec.id)
    init_options = plugins.initialization_options(spec, settings)
    data: dict[str, Any] = {
        "language": spec.id,
        "settings": settings,
        "initializationOptions": init_options,
        "settingsFile": settings_path(args.settings)[0],
        "settingsFilePresent": user.path is not None,
    }
    if args.section is not None:
        data["section"] = args.section
        data["answer"] = plugins.configuration_item(spec, settings, args.section, None)
    if args.json:
        print_json(data)
        return 0
    state = "" if data["settingsFilePresent"] else " (absent: plugin defaults only)"
    print(f"{spec.display_name} ({spec.id}), settings file {data['settingsFile']}{state}")
    print(f"settings: {_compact(settings)}")
    print(f"initializationOptions: {_compact(init_options)}")
    if args.section is not None:
        print(f"workspace/configuration {args.section!r} -> {_compact(data['answer'])}")
    return 0


def _compact(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True)
