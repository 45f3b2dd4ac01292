"""Resolution rules: PATH, PATHEXT, execute bits, toolchain folders, the managed cache, the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import kandev_lsp_go
import kandev_lsp_kotlin
import kandev_lsp_python
import kandev_lsp_rust
import kandev_lsp_typescript
import pytest
from kandev_lsp import HostPlatform, MissingReason
from kandev_lsp.discovery import ProbeStatus
from kandev_lsp.host import PluginHost
from kandev_lsp.testing import TableProbe, fake_executable, make_plugin_host, make_task, resolve_in

LINUX = HostPlatform("linux", "x86_64")
DARWIN = HostPlatform("darwin", "aarch64")
WINDOWS = HostPlatform("windows", "x86_64")
OK = ProbeStatus.OK


def windows_receipt(**fields: str) -> bytes:
    """The receipt an npm install writes (only what the resolver reads varies)."""
    import json

    base = {
        "schema": "kandev-lsp/install-receipt", "version": 1, "language": "python", "plugin": "python",
        "pluginVersion": "0.1.0", "recipe": "npm", "serverVersion": "1.1.414", "packages": ["pyright@1.1.414"],
        "identity": "npm pyright@1.1.414", "source": "npm registry", "sha256": None,
        "executable": "node_modules/.bin/pyright-langserver.cmd", "installedAt": "2026-12-01T00:00:00Z",
        "toolchain": {},
    }  # fmt: skip
    return json.dumps(base | fields).encode()


def toolchain(root: Path, *tools: str) -> str:
    """A folder holding (stand-ins for) an installer's tools: ``installable`` asks whether they are there."""
    folder = root / "toolchain"
    for tool in tools:
        fake_executable(folder, tool)
    return str(folder)


@pytest.fixture
def plugins() -> PluginHost:
    return make_plugin_host(
        kandev_lsp_typescript, kandev_lsp_python, kandev_lsp_go, kandev_lsp_rust, kandev_lsp_kotlin
    )


@pytest.fixture
def workspace(tmp_path: Path) -> str:
    folder = tmp_path / "workspace"
    folder.mkdir()
    return str(folder)


def test_first_path_entry_with_an_executable_wins(
    plugins: PluginHost, tmp_path: Path, workspace: str
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    fake_executable(second, "gopls")
    winner = fake_executable(first, "gopls")
    task = make_task(workspace, path=[str(first), str(second)], home=str(tmp_path / "home"))
    resolution = resolve_in(plugins, "go", task)
    assert resolution.found and resolution.executable == winner
    assert resolution.argv == (winner, "serve")
    assert resolution.source == "PATH[0]"


def test_file_without_execute_bit_is_rejected_on_unix(
    plugins: PluginHost, tmp_path: Path, workspace: str
) -> None:
    folder = tmp_path / "bin"
    path = Path(fake_executable(folder, "gopls"))
    path.chmod(0o644)
    directory_named_like_it = tmp_path / "dir" / "gopls"
    directory_named_like_it.mkdir(parents=True)
    task = make_task(workspace, path=[str(folder), str(tmp_path / "dir")], home=str(tmp_path / "home"))
    resolution = resolve_in(plugins, "go", task)
    assert not resolution.found
    verdicts = {(s.path, s.reason) for s in resolution.trail}
    assert (str(path), "no execute permission") in verdicts
    assert (str(directory_named_like_it), "not a regular file") in verdicts


def test_empty_and_relative_path_entries_are_skipped_even_when_they_hold_the_binary(
    plugins: PluginHost, tmp_path: Path, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    fake_executable(tmp_path / "rel", "gopls")
    fake_executable(tmp_path, "gopls")  # what "" would mean to a naive lookup: the current folder
    task = make_task(workspace, path=["", "rel", "."], home=str(tmp_path / "home"))
    resolution = resolve_in(plugins, "go", task)
    assert not resolution.found
    assert [(s.verdict, s.reason) for s in resolution.trail[:3]] == [
        ("skipped", "empty entry ignored"),
        ("skipped", "relative entry ignored"),
        ("skipped", "relative entry ignored"),
    ]


def test_binary_inside_workspace_is_never_trusted(
    plugins: PluginHost, tmp_path: Path, workspace: str
) -> None:
    inside = Path(workspace) / "node_modules" / ".bin"
    fake_executable(inside, "typescript-language-server")
    # A symlink outside the workspace that points into it is just as untrusted.
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(inside / "typescript-language-server", outside / "typescript-language-server")
    node = toolchain(tmp_path, "npm", "node")
    task = make_task(workspace, path=[str(inside), str(outside), node], home=str(tmp_path / "home"))
    resolution = resolve_in(plugins, "typescript", task)
    assert not resolution.found
    assert resolution.reason is MissingReason.INSTALLABLE_NOT_REQUESTED
    untrusted = [s for s in resolution.trail if "workspace" in s.reason]
    assert len(untrusted) == 2


def test_go_toolchain_folders_in_order(plugins: PluginHost, tmp_path: Path, workspace: str) -> None:
    home = tmp_path / "home"
    gopath_a, gopath_b = tmp_path / "gp1", tmp_path / "gp2"
    expected_order = [
        str(tmp_path / "gobin" / "gopls"),
        str(gopath_a / "bin" / "gopls"),
        str(gopath_b / "bin" / "gopls"),
        str(home / "go" / "bin" / "gopls"),
    ]
    task = make_task(
        workspace,
        path=[],
        home=str(home),
        extra={"GOBIN": str(tmp_path / "gobin"), "GOPATH": f"{gopath_a}:relative:{gopath_b}"},
    )
    resolution = resolve_in(plugins, "go", task)
    probed = [s.path for s in resolution.trail if s.verdict == "rejected" and "managed cache" not in s.source]
    assert probed == expected_order
    assert any(s.verdict == "skipped" and s.path == "relative" for s in resolution.trail)
    # And each one is really used when present: the last one alone.
    last = fake_executable(home / "go" / "bin", "gopls")
    assert resolve_in(plugins, "go", task).executable == last


def test_go_toolchain_folders_only_for_go(plugins: PluginHost, tmp_path: Path, workspace: str) -> None:
    fake_executable(tmp_path / "gobin", "pyright-langserver")
    task = make_task(workspace, home=str(tmp_path / "home"), extra={"GOBIN": str(tmp_path / "gobin")})
    assert not resolve_in(plugins, "python", task).found


def test_managed_cache_layouts(plugins: PluginHost, tmp_path: Path, workspace: str) -> None:
    home = tmp_path / "home"
    cache = home / ".kandev" / "lsp-servers"
    task = make_task(workspace, home=str(home))
    legacy = fake_executable(cache / "node_modules" / ".bin", "pyright-langserver")
    resolution = resolve_in(plugins, "python", task)
    assert resolution.executable == legacy and resolution.source == "managed cache (shared)"
    own = fake_executable(cache / "python" / "current" / "node_modules" / ".bin", "pyright-langserver")
    resolution = resolve_in(plugins, "python", task)
    assert resolution.executable == own and resolution.source == "managed cache"
    assert resolution.argv[1:] == ("--stdio",)


def test_relative_home_disables_the_cache_and_says_so(
    plugins: PluginHost, tmp_path: Path, workspace: str
) -> None:
    task = make_task(workspace, home="relative/home")
    resolution = resolve_in(plugins, "typescript", task)
    assert resolution.reason is MissingReason.CACHE_UNAVAILABLE
    assert resolution.close_code == 4007 and not resolution.installable
    assert "HOME" in resolution.message and "absolute" in resolution.message
    cache_steps = [s for s in resolution.trail if s.source == "managed cache"]
    assert [s.verdict for s in cache_steps] == ["skipped"]
    assert cache_steps[0].reason.startswith("HOME is not an absolute path")


def test_missing_reasons_and_close_codes(plugins: PluginHost, tmp_path: Path, workspace: str) -> None:
    task = make_task(workspace, path=[toolchain(tmp_path, "npm", "node")], home=str(tmp_path / "home"))
    ts = resolve_in(plugins, "typescript", task)
    assert (ts.reason, ts.close_code, ts.installable) == (MissingReason.INSTALLABLE_NOT_REQUESTED, 4001, True)
    assert "kandev-lsp install typescript" in ts.message
    kotlin = resolve_in(plugins, "kotlin", task)
    assert (kotlin.reason, kotlin.close_code, kotlin.installable) == (MissingReason.NO_INSTALLER, 4007, False)
    assert "never installed automatically" in kotlin.message
    unknown = resolve_in(plugins, "cobol", task)
    assert unknown.reason is MissingReason.UNSUPPORTED_LANGUAGE and unknown.close_code is None
    assert "go, kotlin, python, rust, typescript" in unknown.message


def test_rustup_proxy_without_component_is_not_found(
    plugins: PluginHost, tmp_path: Path, workspace: str
) -> None:
    cargo_bin = tmp_path / "cargo" / "bin"
    fake_executable(
        cargo_bin,
        "rustup",
        "import sys\nsys.stderr.write(\"error: Unknown binary 'rust-analyzer' in official toolchain\\n\")\nsys.exit(1)\n",
    )
    os.symlink(cargo_bin / "rustup", cargo_bin / "rust-analyzer")
    task = make_task(workspace, path=[str(cargo_bin), str(cargo_bin)], home=str(tmp_path / "home"))
    resolution = resolve_in(plugins, "rust", task)
    assert not resolution.found
    assert "Unknown binary 'rust-analyzer'" in resolution.trail[0].reason
    assert resolution.trail[1].reason == "same file as PATH[0]"


RUSTUP_WITHOUT_COMPONENT = (
    "import os, sys\n"
    "if os.path.basename(sys.argv[0]) == 'rust-analyzer':\n"
    "    sys.stderr.write(\"error: Unknown binary 'rust-analyzer' in official toolchain\\n\")\n"
    "    sys.exit(1)\n"
    "print('rustup 1.27.1')\n"
)


@pytest.mark.parametrize("how", ["hard link", "copy"])
def test_rustup_proxy_installed_as_a_hard_link_or_a_copy_is_checked_like_a_symlink(
    plugins: PluginHost, tmp_path: Path, workspace: str, how: str
) -> None:
    """Issue 7 item 3: rustup makes its proxies hard links to itself (a copy on some file systems), not
    symlinks; a proxy without the component must not count as found."""
    cargo_bin = tmp_path / "cargo" / "bin"
    rustup = Path(fake_executable(cargo_bin, "rustup", RUSTUP_WITHOUT_COMPONENT))
    proxy = cargo_bin / "rust-analyzer"
    if how == "hard link":
        os.link(rustup, proxy)
    else:
        proxy.write_bytes(rustup.read_bytes())
        proxy.chmod(0o755)
    task = make_task(workspace, path=[str(cargo_bin)], home=str(tmp_path / "home"))
    resolution = resolve_in(plugins, "rust", task)
    assert not resolution.found
    assert resolution.trail[0].verdict == "rejected"
    assert "rustup proxy cannot run rust-analyzer" in resolution.trail[0].reason
    assert "Unknown binary 'rust-analyzer'" in resolution.trail[0].reason


def test_rustup_proxy_with_component_and_plain_binary_are_found(
    plugins: PluginHost, tmp_path: Path, workspace: str
) -> None:
    cargo_bin = tmp_path / "cargo" / "bin"
    fake_executable(cargo_bin, "rustup", "print('rust-analyzer 1.0.0')\n")
    os.symlink(cargo_bin / "rustup", cargo_bin / "rust-analyzer")
    task = make_task(workspace, path=[str(cargo_bin)], home=str(tmp_path / "home"))
    assert resolve_in(plugins, "rust", task).executable == str(cargo_bin / "rust-analyzer")
    # A plain rust-analyzer binary is trusted without being run (it would fail if it were run).
    plain = tmp_path / "plain"
    fake_executable(plain, "rust-analyzer", "import sys\nsys.exit(3)\n")
    task = make_task(workspace, path=[str(plain)], home=str(tmp_path / "home"))
    assert resolve_in(plugins, "rust", task).found


# Simulated hosts -------------------------------------------------------------------------------------


def test_windows_pathext_applies_only_to_names_without_extension(plugins: PluginHost) -> None:
    probe = TableProbe({r"C:\Tools\gopls.EXE": OK, r"C:\Tools\gopls": OK}, WINDOWS)
    task = make_task(r"C:\work\task", path=[r"C:\Tools"], home=r"C:\Users\me", host=WINDOWS)
    resolution = resolve_in(plugins, "go", task, probe)
    assert resolution.executable == r"C:\Tools\gopls.exe"  # .COM comes first in PATHEXT but does not exist
    assert r"C:\Tools\gopls" not in probe.probed  # the extension-less file is never considered


def test_windows_custom_pathext_order_and_case_insensitive_paths(plugins: PluginHost) -> None:
    probe = TableProbe({r"c:\tools\GOPLS.CMD": OK, r"C:\Tools\gopls.exe": OK}, WINDOWS)
    task = make_task(
        r"C:\work", path=[r"C:\Tools"], home=r"C:\Users\me", extra={"PathExt": ".CMD;.EXE"}, host=WINDOWS
    )
    assert resolve_in(plugins, "go", task, probe).executable == r"C:\Tools\gopls.cmd"


def test_windows_relative_and_driveless_entries_are_ignored(plugins: PluginHost) -> None:
    probe = TableProbe({r"tools\gopls.exe": OK, r"\tools\gopls.exe": OK}, WINDOWS)
    task = make_task(r"C:\work", path=["tools", r"\tools", ""], home=r"C:\Users\me", host=WINDOWS)
    resolution = resolve_in(plugins, "go", task, probe)
    assert not resolution.found
    assert [s.verdict for s in resolution.trail[:3]] == ["skipped"] * 3


def test_windows_workspace_binary_rejected_case_insensitively(plugins: PluginHost) -> None:
    probe = TableProbe({r"C:\Work\Task\bin\gopls.exe": OK}, WINDOWS)
    task = make_task(r"c:\work\task", path=[r"C:\Work\Task\bin"], home=r"C:\Users\me", host=WINDOWS)
    resolution = resolve_in(plugins, "go", task, probe)
    assert not resolution.found
    assert any("workspace" in s.reason for s in resolution.trail)


def test_windows_userprofile_cache_and_go_bin(plugins: PluginHost) -> None:
    task = make_task(r"C:\work", home="", extra={"USERPROFILE": r"C:\Users\me"}, host=WINDOWS)
    go_bin = TableProbe({r"C:\Users\me\go\bin\gopls.exe": OK}, WINDOWS)
    resolution = resolve_in(plugins, "go", task, go_bin)
    assert resolution.executable == r"C:\Users\me\go\bin\gopls.exe"
    assert resolution.source == "$USERPROFILE/go/bin"
    # An npm install: the .cmd shim is what is found; it is started as node and the recorded script.
    current = r"C:\Users\me\.kandev\lsp-servers\python\current"
    node, script = r"C:\Program Files\nodejs\node.exe", current + r"\node_modules\pyright\langserver.index.js"
    receipt = {"interpreter": node, "script": "node_modules/pyright/langserver.index.js"}
    cached = TableProbe(
        {current + r"\node_modules\.bin\pyright-langserver.cmd": OK, script: OK, node: OK},
        WINDOWS,
        contents={current + r"\receipt.json": windows_receipt(**receipt)},
    )
    found = resolve_in(plugins, "python", task, cached)
    assert found.source == "managed cache"
    assert found.executable == current + r"\node_modules\.bin\pyright-langserver.cmd"
    assert found.argv == (node, script, "--stdio")


def test_rust_has_no_installer_on_windows_but_a_manual_install_resolves(plugins: PluginHost) -> None:
    task = make_task(r"C:\work", path=[r"C:\rust"], home=r"C:\Users\me", host=WINDOWS)
    missing = resolve_in(plugins, "rust", task, TableProbe({}, WINDOWS))
    assert (missing.reason, missing.close_code) == (MissingReason.NO_INSTALLER, 4007)
    assert "windows-x86_64" in missing.message
    manual = resolve_in(plugins, "rust", task, TableProbe({r"C:\rust\rust-analyzer.exe": OK}, WINDOWS))
    assert manual.found


@pytest.mark.parametrize(
    ("host", "installable"),
    [
        (HostPlatform("linux", "x86_64"), True),
        (HostPlatform("linux", "aarch64"), True),
        (HostPlatform("darwin", "x86_64"), True),
        (DARWIN, True),
        (HostPlatform("linux", "other"), False),
        (HostPlatform("windows", "aarch64"), False),
    ],
)
def test_rust_installer_gating_by_platform(
    plugins: PluginHost, host: HostPlatform, installable: bool
) -> None:
    spec = plugins.language("rust")
    assert plugins.installer_available(spec, host) is installable


def test_darwin_uses_unix_rules(plugins: PluginHost) -> None:
    probe = TableProbe({"/opt/homebrew/bin/gopls": OK, "/opt/homebrew/bin/gopls.exe": OK}, DARWIN)
    task = make_task("/Users/me/task", path=["/opt/homebrew/bin"], home="/Users/me", host=DARWIN)
    resolution = resolve_in(plugins, "go", task, probe)
    assert resolution.executable == "/opt/homebrew/bin/gopls"


def test_resolution_json_contract(plugins: PluginHost, tmp_path: Path, workspace: str) -> None:
    task = make_task(workspace, path=["rel"], home=str(tmp_path / "home"))
    data = resolve_in(plugins, "kotlin", task).to_json(explain=True)
    assert data["schema"] == "kandev-lsp/resolution" and data["version"] == 1
    assert data["status"] == "missing" and data["reason"] == "no_installer" and data["closeCode"] == 4007
    assert data["argv"] == [] and data["executable"] is None
    assert data["explain"][0] == {
        "source": "PATH[0]",
        "path": "rel",
        "verdict": "skipped",
        "reason": "relative entry ignored",
    }


@pytest.mark.parametrize(
    ("language", "tools", "lacking"),
    [("go", (), "go"), ("python", ("node",), "npm"), ("typescript", ("npm",), "node")],
)
def test_installable_only_when_the_installers_toolchain_is_there(
    plugins: PluginHost, tmp_path: Path, workspace: str, language: str, tools: tuple[str, ...], lacking: str
) -> None:
    # issue 17 item 6: "installable" promised an install that then failed for want of go or npm.
    task = make_task(workspace, path=[toolchain(tmp_path, *tools)], home=str(tmp_path / "home"))
    missing = resolve_in(plugins, language, task)
    assert (missing.reason, missing.close_code, missing.installable) == (
        MissingReason.NO_INSTALLER,
        4007,
        False,
    )
    assert f"It cannot be installed here: {lacking} was not found on the task's PATH" in missing.message
    assert "kandev-lsp install" not in missing.message
    needed = {"go": ("go",), "python": ("npm", "node"), "typescript": ("npm", "node")}[language]
    fine = make_task(workspace, path=[toolchain(tmp_path, *needed)], home=str(tmp_path / "home"))
    assert resolve_in(plugins, language, fine).installable


def test_an_installers_tool_only_inside_the_workspace_is_named_as_refused(
    plugins: PluginHost, tmp_path: Path, workspace: str
) -> None:
    planted = toolchain(Path(workspace), "go")
    missing = resolve_in(plugins, "go", make_task(workspace, path=[planted], home=str(tmp_path / "home")))
    assert not missing.installable
    assert "go was not found on the task's PATH outside the task workspace" in missing.message
    assert f"{planted}/go: inside the task workspace; never run" in missing.message
