"""Loading plugins: entry points, validation, isolation of broken plugins, switches."""

from __future__ import annotations

import logging
import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path

import kandev_lsp_go
import kandev_lsp_typescript
import pytest
from kandev_lsp import LanguageSpec, hookimpl
from kandev_lsp.host import PluginHost
from kandev_lsp.testing import fake_executable, make_plugin_host, make_task, resolve_in

GOOD_PLUGIN = """
from kandev_lsp import LanguageSpec, hookimpl

@hookimpl
def kandev_lsp_languages():
    return [LanguageSpec(id="{lang}", display_name="{lang}", command="{lang}-ls")]
"""


def write_module(folder: Path, name: str, source: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


def entry(name: str, module: str) -> EntryPoint:
    return EntryPoint(name=name, value=module, group="kandev_lsp")


def test_builtin_plugins_load_through_the_entry_point_group() -> None:
    host = PluginHost.load(environ={})
    assert sorted(host.languages()) == ["go", "kotlin", "python", "rust", "typescript"]
    assert host.problems == []
    infos = {info.name: info for info in host.plugins()}
    assert infos["typescript"].module == "kandev_lsp_typescript"
    assert "kandev_lsp_suppressed_providers" in infos["typescript"].hooks
    assert infos["go"].version == "0.1.0"


def test_import_failure_is_reported_by_name_and_others_load(modules: Path) -> None:
    write_module(modules, "good_ls", GOOD_PLUGIN.format(lang="zig"))
    write_module(modules, "broken_ls", "raise RuntimeError('boom at import')\n")
    host = PluginHost.load(environ={}, entry_points=[entry("broken", "broken_ls"), entry("good", "good_ls")])
    assert list(host.languages()) == ["zig"]
    [problem] = host.problems
    assert problem.plugin == "broken" and problem.phase == "load"
    assert "RuntimeError: boom at import" in str(problem)


def test_unknown_hook_name_is_rejected_at_load(modules: Path) -> None:
    write_module(
        modules,
        "typo_ls",
        GOOD_PLUGIN.format(lang="zig")
        + "\n@hookimpl\ndef kandev_lsp_discovr(language, task):\n    return None\n",
    )
    host = PluginHost.load(environ={}, entry_points=[entry("typo", "typo_ls")])
    assert host.languages() == {}
    assert "kandev_lsp_discovr" in host.problems[0].error
    assert host.plugins() == []


def test_argument_not_in_spec_is_rejected() -> None:
    class Plugin:
        @hookimpl
        def kandev_lsp_discover(self, language: LanguageSpec, task: object, extra: int) -> None:
            return None

    host = PluginHost()
    assert host.register(Plugin(), "bad-args") is False
    assert "extra" in host.problems[0].error


def test_wrappers_are_rejected() -> None:
    class Plugin:
        @hookimpl(wrapper=True)
        def kandev_lsp_languages(self):  # type: ignore[no-untyped-def]
            return (yield)

    host = PluginHost()
    assert host.register(Plugin(), "wrapper") is False
    assert "wrappers are not supported" in host.problems[0].error


def test_duplicate_language_is_reported_against_the_later_plugin(modules: Path) -> None:
    write_module(modules, "first_ls", GOOD_PLUGIN.format(lang="zig"))
    write_module(modules, "second_ls", GOOD_PLUGIN.format(lang="zig"))
    host = PluginHost.load(
        environ={}, entry_points=[entry("a-first", "first_ls"), entry("b-second", "second_ls")]
    )
    assert host.plugin_of("zig") == "a-first"
    assert (
        host.problems[0].plugin == "b-second"
        and "already provided by plugin 'a-first'" in host.problems[0].error
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("return LanguageSpec(id='zig', display_name='z', command='zls')", "list of LanguageSpec"),
        ("return ['zig']", "not LanguageSpec"),
        ("return [LanguageSpec(id='Bad Id', display_name='z', command='zls')]", "must be 1-32 lower-case"),
        ("return [LanguageSpec(id='zig', display_name='z', command='./zls')]", "bare executable name"),
        ("raise KeyError('oops')", "kandev_lsp_languages raised KeyError"),
    ],
)
def test_bad_language_declarations(modules: Path, body: str, message: str) -> None:
    module = f"decl_ls_{abs(hash(body))}"  # a fresh module per case: imports are cached
    write_module(
        modules,
        module,
        f"from kandev_lsp import LanguageSpec, hookimpl\n@hookimpl\ndef kandev_lsp_languages():\n    {body}\n",
    )
    host = PluginHost.load(environ={}, entry_points=[entry("decl", module)])
    assert host.languages() == {}
    assert message in host.problems[0].error


def test_plugin_raising_in_a_hook_does_not_take_other_languages_down(tmp_path: Path) -> None:
    class Exploding:
        @hookimpl
        def kandev_lsp_discover(self, language: LanguageSpec) -> None:
            raise OSError("disk on fire")

        @hookimpl
        def kandev_lsp_suppressed_providers(self, language: LanguageSpec) -> list[str]:
            raise ValueError("no")

        @hookimpl
        def kandev_lsp_default_settings(self) -> dict[str, int]:
            raise ValueError("no defaults")

    host = make_plugin_host(
        kandev_lsp_go, kandev_lsp_typescript, Exploding(), names=["go", "typescript", "exploding"]
    )
    gopls = fake_executable(tmp_path / "bin", "gopls")
    task = make_task(str(tmp_path / "ws"), path=[str(tmp_path / "bin")], home=str(tmp_path / "home"))
    assert resolve_in(host, "go", task).executable == gopls
    ts = host.language("typescript")
    assert host.suppressed_providers(ts, {"hoverProvider": True}) == {"hover"}
    assert host.default_settings(host.language("go")) == {"ui.semanticTokens": True}
    assert {(p.plugin, p.phase) for p in host.problems} == {
        ("exploding", "kandev_lsp_discover"),
        ("exploding", "kandev_lsp_suppressed_providers"),
        ("exploding", "kandev_lsp_default_settings"),
    }
    assert "OSError: disk on fire" in str(host.problems[0])


def test_plugin_generator_failing_midway_keeps_its_earlier_candidates(tmp_path: Path) -> None:
    from kandev_lsp import Candidate

    first = fake_executable(tmp_path / "custom", "gopls")

    class HalfBroken:
        @hookimpl
        def kandev_lsp_discover(self, language: LanguageSpec) -> object:
            yield Candidate(str(tmp_path / "nowhere" / "gopls"), "custom-missing")
            raise RuntimeError("lost the map")
            yield Candidate(first, "custom")  # pragma: no cover

    host = make_plugin_host(kandev_lsp_go, HalfBroken(), names=["go", "half"])
    task = make_task(str(tmp_path / "ws"), path=[], home=str(tmp_path / "home"))
    resolution = resolve_in(host, "go", task)
    assert resolution.trail[0].source == "plugin half: custom-missing"
    assert not resolution.found
    assert host.problems[0].error == "RuntimeError: lost the map"


def test_plugin_discovery_runs_before_the_core_default(tmp_path: Path) -> None:
    from kandev_lsp import Candidate

    on_path = fake_executable(tmp_path / "bin", "gopls")
    preferred = fake_executable(tmp_path / "preferred", "gopls")

    class Preferring:
        @hookimpl
        def kandev_lsp_discover(self, language: LanguageSpec) -> list[Candidate]:
            return [Candidate(preferred, "team toolchain")] if language.id == "go" else []

    host = make_plugin_host(kandev_lsp_go, Preferring(), names=["go", "team"])
    task = make_task(str(tmp_path / "ws"), path=[str(tmp_path / "bin")], home=str(tmp_path / "home"))
    resolution = resolve_in(host, "go", task)
    assert resolution.executable == preferred and resolution.source == "plugin team: team toolchain"
    assert on_path != preferred


def test_plugin_check_candidate_rejects_with_reason(tmp_path: Path) -> None:
    fake_executable(tmp_path / "bin", "gopls")

    class Picky:
        @hookimpl
        def kandev_lsp_check_candidate(self, path: str) -> str | None:
            return "too old for this project" if path.endswith("gopls") else None

    host = make_plugin_host(kandev_lsp_go, Picky(), names=["go", "picky"])
    task = make_task(str(tmp_path / "ws"), path=[str(tmp_path / "bin")], home=str(tmp_path / "home"))
    resolution = resolve_in(host, "go", task)
    assert not resolution.found
    assert resolution.trail[0].reason == "too old for this project (checked by picky)"


def test_disable_switch_blocks_named_plugins() -> None:
    host = PluginHost.load(environ={"KANDEV_LSP_DISABLE_PLUGINS": "python, kotlin"})
    assert sorted(host.languages()) == ["go", "rust", "typescript"]
    assert sorted(host.disabled) == ["kotlin", "python"]


def test_trace_switch_logs_hook_calls_without_arguments(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_log = logging.getLogger("kandev_lsp.hooks")
    before = list(trace_log.handlers)
    trace_log.handlers.clear()  # the switch installs its stderr handler only when none is set up
    host = PluginHost.load(environ={"KANDEV_LSP_TRACE_HOOKS": "1"})
    added = [h for h in trace_log.handlers if h not in before]
    trace_log.handlers[:] = before + added
    task = make_task(str(tmp_path / "ws"), path=[], home=str(tmp_path), extra={"API_TOKEN": "s3cret"})
    with caplog.at_level(logging.DEBUG, logger="kandev_lsp.hooks"):
        resolve_in(host, "go", task)
    lines = [r.getMessage() for r in caplog.records if r.name == "kandev_lsp.hooks"]
    assert "kandev_lsp_discover kandev_lsp.defaults -> generator" in lines
    assert not any("s3cret" in line for line in lines)
    assert "kandev-lsp hook: kandev_lsp_discover kandev_lsp.defaults -> generator" in capsys.readouterr().err
    for handler in added:
        trace_log.removeHandler(handler)


def builtin_entry_points() -> list[EntryPoint]:
    from importlib import metadata

    return list(metadata.entry_points(group="kandev_lsp"))


@pytest.mark.parametrize("name", ["dup_python", "a", "zzz"])
def test_a_third_party_plugin_never_displaces_a_builtin_language(modules: Path, name: str) -> None:
    """Issue 7 item 4: a third-party entry point declaring ``python`` is the skipped duplicate, whatever its
    name sorts as; the built-in python plugin keeps the language."""
    write_module(modules, "impostor_ls", GOOD_PLUGIN.format(lang="python"))
    host = PluginHost.load(environ={}, entry_points=[entry(name, "impostor_ls"), *builtin_entry_points()])
    assert host.plugin_of("python") == "python"
    assert host.language("python").command == "pyright-langserver"
    [problem] = host.problems
    assert problem.plugin == name and "already provided by plugin 'python'" in problem.error


def test_two_languages_claiming_one_lsp_language_id_load_with_a_warning(modules: Path) -> None:
    write_module(
        modules,
        "py2_ls",
        "from kandev_lsp import LanguageSpec, hookimpl\n@hookimpl\ndef kandev_lsp_languages():\n"
        "    return [LanguageSpec(id='py2', display_name='Py2', command='py2-ls', language_ids=('python',))]\n",
    )
    host = PluginHost.load(environ={}, entry_points=[entry("a_py2", "py2_ls"), *builtin_entry_points()])
    assert {"python", "py2"} <= set(host.languages()) and host.problems == []
    [warning] = host.warnings
    assert "languageId 'python'" in warning and "'py2'" in warning and "'python' (plugin 'python')" in warning


def test_distinct_lsp_language_ids_give_no_warning() -> None:
    assert PluginHost.load(environ={}).warnings == []


def test_a_plugin_calling_sys_exit_is_a_problem_not_the_end_of_kandev_lsp(modules: Path) -> None:
    # A module that exits at import (sys.exit('needs clangd')) ended every command with its status and
    # no word, `languages` and `doctor` included; one that exits in a hook would end serve and mcp.
    write_module(modules, "good_ls", GOOD_PLUGIN.format(lang="zig"))
    write_module(modules, "exits_ls", "import sys\nsys.exit('needs clangd')\n")
    write_module(
        modules,
        "exits_in_hooks_ls",
        GOOD_PLUGIN.format(lang="nim")
        + "\nimport sys\n\n@hookimpl\ndef kandev_lsp_discover(language, task):\n    sys.exit(3)\n"
        + "\n@hookimpl\ndef kandev_lsp_default_settings(language):\n    raise SystemExit(4)\n",
    )
    host = PluginHost.load(
        environ={},
        entry_points=[
            entry("exits", "exits_ls"),
            entry("good", "good_ls"),
            entry("late", "exits_in_hooks_ls"),
        ],
    )
    assert list(host.languages()) == ["nim", "zig"]
    [problem] = host.problems
    assert problem.plugin == "exits" and problem.phase == "load"
    assert "SystemExit: needs clangd" in str(problem)

    task = make_task("/nonexistent-ws", path=[], home="/nonexistent-home")
    assert not resolve_in(host, "zig", task).found
    assert host.default_settings(host.language("zig")) == {}
    assert {(p.plugin, p.phase, p.error) for p in host.problems[1:]} == {
        ("late", "kandev_lsp_discover", "SystemExit: 3"),
        ("late", "kandev_lsp_default_settings", "SystemExit: 4"),
    }


def test_a_hook_returning_the_wrong_type_is_skipped_and_reported() -> None:
    # kandev_lsp_default_settings returning "abc" made `kandev-lsp config go` a ValueError traceback, and
    # an initialization_options returning 5 a TypeError out of the server's start.
    class WrongTypes:
        @hookimpl
        def kandev_lsp_default_settings(self) -> str:
            return "abc"

        @hookimpl
        def kandev_lsp_initialization_options(self) -> int:
            return 5

        @hookimpl
        def kandev_lsp_client_capabilities(self) -> list[str]:
            return ["workspace"]

    alone = make_plugin_host(kandev_lsp_go)
    host = make_plugin_host(kandev_lsp_go, WrongTypes(), names=["go", "wrong"])
    go = host.language("go")
    assert host.default_settings(go) == {"ui.semanticTokens": True}
    assert host.initialization_options(go, {}) is None
    assert host.client_capabilities(go) == alone.client_capabilities(alone.language("go"))
    assert [(p.plugin, p.phase, p.error) for p in host.problems] == [
        ("wrong", "kandev_lsp_default_settings", "returned str, not a mapping; ignored"),
        ("wrong", "kandev_lsp_initialization_options", "returned int, not a mapping; ignored"),
        ("wrong", "kandev_lsp_client_capabilities", "returned list, not a mapping; ignored"),
    ]



def test_the_same_problem_again_is_kept_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    # serve and mcp call the settings hooks per session: a hook that fails every time grew the problem
    # list and logged a warning on every session, without bound.
    class Failing:
        @hookimpl
        def kandev_lsp_default_settings(self) -> dict[str, object]:
            raise RuntimeError("settings service down")

    host = make_plugin_host(kandev_lsp_go, Failing(), names=["go", "failing"])
    go = host.language("go")
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            assert host.default_settings(go) == {"ui.semanticTokens": True}
    assert [(p.plugin, p.phase) for p in host.problems] == [("failing", "kandev_lsp_default_settings")]
    assert len([r for r in caplog.records if "settings service down" in r.getMessage()]) == 1

def test_discovered_items_that_are_not_candidates_are_reported(tmp_path: Path) -> None:
    # A plugin returning paths as strings (an easy first mistake) had them dropped without a word.
    from kandev_lsp import Candidate

    gopls = fake_executable(tmp_path / "custom", "gopls")

    class Strings:
        @hookimpl
        def kandev_lsp_discover(self, language: LanguageSpec) -> list[object]:
            return [str(tmp_path / "elsewhere" / "gopls"), 42, Candidate(gopls, "custom"), "x"]

    host = make_plugin_host(kandev_lsp_go, Strings(), names=["go", "strings"])
    task = make_task(str(tmp_path / "ws"), path=[], home=str(tmp_path / "home"))
    assert resolve_in(host, "go", task).executable == gopls  # the real Candidate still counts
    [problem] = host.problems
    assert (problem.plugin, problem.phase) == ("strings", "kandev_lsp_discover")
    assert problem.error == "gave a str, not a Candidate; ignored (and any more like it)"
