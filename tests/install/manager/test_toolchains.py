"""Toolchain checks for ``doctor``, and the CLI's progress display."""

from __future__ import annotations

import io
import os
from pathlib import Path

from kandev_lsp import GoRecipe, LanguageSpec, NpmPackage, NpmRecipe, TaskEnvironment
from kandev_lsp.cli.install import ProgressPrinter
from kandev_lsp.host import PluginHost
from kandev_lsp.install import InstallProgress
from kandev_lsp.install.toolchains import combined_range, parse_version, satisfies, toolchain_checks
from kandev_lsp.probe import BriefRun
from kandev_lsp.taskenv import Task


def npm_spec(language: str, engine: str) -> LanguageSpec:
    return LanguageSpec(
        id=language,
        display_name=language,
        command="x",
        install=NpmRecipe((NpmPackage("x", "1.0.0"),), "x", engine),
    )


def in_task(env: TaskEnvironment) -> Task:
    """A task whose workspace holds none of the tools (the checks never run a tool from the workspace)."""
    return Task("/nonexistent-kandev-workspace", env)


GO_SPEC = LanguageSpec(id="go", display_name="Go", command="gopls", install=GoRecipe("g", "v1", "gopls"))


def fake_tools(versions: dict[str, str | None]) -> tuple[object, object]:
    """``find``/``run`` standing in for tools that exist with these versions (None: exists, fails)."""

    def find(command: str, env: TaskEnvironment) -> str | None:
        return f"/opt/bin/{command}" if command in versions else None

    def run(argv: list[str], env: TaskEnvironment) -> BriefRun:
        output = versions[os.path.basename(argv[0])]
        if output is None:
            return BriefRun(False, "", "exit status 1: cannot find libnode")
        return BriefRun(True, output, output)

    return run, find


def test_the_real_toolchains_of_this_machine_satisfy_the_builtin_plugins() -> None:
    checks = toolchain_checks(in_task(TaskEnvironment.from_agent()), PluginHost.load().languages().values())
    by_tool = {check.tool: check for check in checks}
    assert set(by_tool) == {"node", "npm", "go"}
    assert all(check.ok for check in checks), [check.describe() for check in checks]
    assert by_tool["node"].requirement and set(by_tool["node"].needed_by) >= {"python", "typescript"}
    assert by_tool["go"].needed_by == ("go",) and by_tool["go"].version


def test_an_empty_path_reports_every_tool_missing_with_what_to_do(tmp_path: Path) -> None:
    env = TaskEnvironment.from_agent({"PATH": str(tmp_path)})
    checks = toolchain_checks(in_task(env), [npm_spec("typescript", ">=20"), GO_SPEC])
    assert [(c.tool, c.ok) for c in checks] == [("node", False), ("npm", False), ("go", False)]
    assert "Install Node.js >=20" in checks[0].advice
    assert "go.dev/dl" in checks[2].advice
    assert checks[0].describe().startswith("!! node")


def test_a_node_too_old_for_one_language_names_that_language() -> None:
    run, find = fake_tools({"node": "v18.19.0", "npm": "10.2.3"})
    checks = toolchain_checks(
        in_task(TaskEnvironment.from_agent()),
        [npm_spec("typescript", ">=20"), npm_spec("python", ">=14")],
        run=run,  # type: ignore[arg-type]
        find=find,  # type: ignore[arg-type]
    )
    node, npm = checks
    assert not node.ok and node.version == "18.19.0"
    assert "typescript needs node >=20" in node.message and "python" not in node.message
    assert npm.ok and npm.version == "10.2.3"
    assert node.to_json()["requirement"] == ">=20"  # was ">=20,>=14" (issue 17 item 12)
    assert "Install Node.js >=20 and" in node.advice


def test_node_ranges_combine_into_one_range_without_redundant_bounds() -> None:
    assert combined_range([">=14", ">=20"]) == ">=20"
    assert combined_range([">=14,<23", ">=20"]) == ">=20,<23"
    assert combined_range([">=18", ">18", "<=22", "<22"]) == ">18,<22"
    assert combined_range([">=14", "!=21.0.0", "!=21.0.0"]) == ">=14,!=21.0.0"
    assert combined_range(["^20", ">=14"]) == ">=14,^20"  # npm syntax that does not parse: kept whole
    assert combined_range([]) == ""


def test_a_tool_that_exists_but_does_not_run_is_not_ok() -> None:
    run, find = fake_tools({"go": None})
    [go] = toolchain_checks(in_task(TaskEnvironment.from_agent()), [GO_SPEC], run=run, find=find)  # type: ignore[arg-type]
    assert not go.ok and "does not run: exit status 1" in go.message and go.advice


def test_no_npm_or_go_languages_means_no_checks() -> None:
    manual = LanguageSpec(id="kotlin", display_name="Kotlin", command="kotlin-lsp")
    assert toolchain_checks(in_task(TaskEnvironment.from_agent()), [manual]) == []


def test_version_parsing_and_ranges() -> None:
    assert parse_version("v20.20.2") == "20.20.2"
    assert parse_version("go version go1.19.8 linux/amd64") == "1.19.8"
    assert parse_version("no digits") is None
    assert satisfies("20.1.0", ">=20") and not satisfies("18.0.0", ">=20")
    assert satisfies(None, "") and not satisfies(None, ">=1") and not satisfies("1.0", "not a range")


def test_progress_on_a_terminal_redraws_one_line_with_a_bar() -> None:
    out = io.StringIO()
    printer = ProgressPrinter(out, tty=True)
    printer(InstallProgress("rust", "waiting_for_lock"))
    printer(InstallProgress("rust", "downloading", 5_000_000, 10_000_000))
    printer(InstallProgress("rust", "downloading", 10_000_000, 10_000_000))
    printer(InstallProgress("rust", "done", message="rust-analyzer installed"))
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")  # one line, ended once
    assert "\r\x1b[2K" in text
    assert "[############............]  50% 5.0/10.0 MB" in text
    assert "100% 10.0/10.0 MB" in text


def test_progress_without_a_terminal_prints_one_line_per_phase() -> None:
    out = io.StringIO()
    printer = ProgressPrinter(out, tty=False)
    printer(InstallProgress("rust", "waiting_for_lock"))  # sent before the lock is tried: not shown
    printer(InstallProgress("rust", "waiting_for_lock", message="waiting for another install to finish"))
    for done in range(0, 100, 10):
        printer(InstallProgress("rust", "downloading", done, 100))
    printer(InstallProgress("rust", "done"))
    printer.finish()
    assert out.getvalue().splitlines() == [
        "kandev-lsp: rust: waiting for lock: waiting for another install to finish",
        "kandev-lsp: rust: downloading",
        "kandev-lsp: rust: done",
    ]
