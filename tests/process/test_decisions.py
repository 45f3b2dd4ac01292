"""Pure decisions of the process layer, with the platform simulated: Windows flags and taskkill, argv[0]
lookup on a Windows task, marker handling, /proc parsing and the selection of a tree's processes."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest
from kandev_lsp.discovery import ProbeStatus
from kandev_lsp.platform import HostPlatform
from kandev_lsp.process import (
    OWNER_VARIABLE,
    CommandNotFoundError,
    PosixBackend,
    ProcessStartError,
    SpawnOptions,
    WindowsBackend,
    backend_for,
    interrupt_signal,
    locate_executable,
    spawn,
    spawn_options,
    taskkill_argv,
    windows_system_root,
)
from kandev_lsp.process._tree import (
    ProcInfo,
    marked_environment,
    owner_tokens,
    parse_stat,
    scan_proc,
    scan_psutil,
    select_targets,
)
from kandev_lsp.taskenv import TaskEnvironment
from kandev_lsp.testing import TableProbe

WINDOWS = HostPlatform("windows", "x86_64")
LINUX = HostPlatform("linux", "x86_64")
OK = ProbeStatus.OK


# Windows backend ----------------------------------------------------------------------------------


def test_windows_children_get_a_new_process_group_and_no_posix_session() -> None:
    assert spawn_options(WINDOWS) == SpawnOptions(start_new_session=False, creationflags=0x00000200)
    assert backend_for(WINDOWS).spawn_options() == spawn_options(WINDOWS)


def test_windows_interrupt_is_ctrl_break() -> None:
    assert interrupt_signal(WINDOWS) == 1  # CTRL_BREAK_EVENT; CTRL_C cannot target a group


def test_windows_kill_is_taskkill_of_the_tree_by_absolute_path() -> None:
    assert taskkill_argv(4242, "C:\\Windows") == (
        "C:\\Windows\\System32\\taskkill.exe",
        "/T",
        "/F",
        "/PID",
        "4242",
    )
    backend = WindowsBackend(WINDOWS, {"SystemRoot": "D:\\WINNT"})
    assert taskkill_argv(7, backend.system_root)[0] == "D:\\WINNT\\System32\\taskkill.exe"


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"SystemRoot": "D:\\WINNT"}, "D:\\WINNT"),
        ({"SYSTEMROOT": "E:\\Win"}, "E:\\Win"),
        ({"SystemRoot": "Windows"}, "C:\\Windows"),  # relative: never trusted
        ({"SystemRoot": ""}, "C:\\Windows"),
        ({}, "C:\\Windows"),
    ],
)
def test_windows_system_root_comes_from_the_agent_and_must_be_absolute(
    environ: dict[str, str], expected: str
) -> None:
    assert windows_system_root(environ) == expected


def test_windows_has_no_listable_groups_posix_groups_are_the_leader_pid() -> None:
    assert isinstance(backend_for(WINDOWS), WindowsBackend)
    assert backend_for(WINDOWS).group_of(1234) is None
    assert isinstance(backend_for(LINUX), PosixBackend)
    assert backend_for(LINUX).group_of(1234) == 1234


def test_posix_children_lead_a_new_session_and_are_interrupted_with_sigint() -> None:
    assert spawn_options(LINUX) == SpawnOptions(start_new_session=True, creationflags=0)
    assert interrupt_signal(LINUX) == signal.SIGINT


def test_a_task_environment_for_another_os_is_refused() -> None:
    env = TaskEnvironment.from_mapping({"Path": "C:\\tools"}, host=WINDOWS)
    with pytest.raises(ProcessStartError, match="describes a windows host"):
        asyncio.run(spawn([sys.executable], env=env, cwd=os.getcwd()))


# argv[0] lookup on a simulated Windows task -------------------------------------------------------


def windows_env(path: str, pathext: str = ".COM;.EXE;.BAT;.CMD") -> TaskEnvironment:
    return TaskEnvironment.from_mapping({"Path": path, "PATHEXT": pathext}, host=WINDOWS)


def test_windows_lookup_applies_pathext_and_skips_the_workspace() -> None:
    probe = TableProbe({"C:\\ws\\node_modules\\.bin\\tsls.cmd": OK, "C:\\tools\\tsls.cmd": OK}, WINDOWS)
    env = windows_env("C:\\ws\\node_modules\\.bin;relative;C:\\tools")
    assert locate_executable("tsls", env, "C:\\ws", probe) == "C:\\tools\\tsls.cmd"
    assert "C:\\ws\\node_modules\\.bin\\tsls.com" in probe.probed  # PATHEXT order is honoured


def test_windows_lookup_that_finds_only_the_workspace_copy_fails_and_says_why() -> None:
    probe = TableProbe({"C:\\WS\\bin\\gopls.exe": OK}, WINDOWS)
    with pytest.raises(CommandNotFoundError) as caught:
        locate_executable("gopls", windows_env("c:\\ws\\bin"), "C:\\ws", probe)
    assert "inside the task workspace" in str(caught.value)


@pytest.mark.parametrize("command", [".\\gopls.exe", "bin\\gopls.exe", "bin/gopls.exe", "C:gopls.exe"])
def test_windows_relative_paths_are_refused(command: str) -> None:
    with pytest.raises(ProcessStartError, match="relative path"):
        locate_executable(command, windows_env("C:\\tools"), "C:\\ws", TableProbe({}, WINDOWS))


def test_windows_absolute_path_is_used_as_given() -> None:
    probe = TableProbe({"D:\\lsp\\gopls.exe": OK}, WINDOWS)
    assert locate_executable("D:\\lsp\\gopls.exe", windows_env(""), "C:\\ws", probe) == "D:\\lsp\\gopls.exe"


def test_empty_path_says_so() -> None:
    with pytest.raises(CommandNotFoundError, match="PATH is empty"):
        locate_executable("gopls", windows_env(""), "C:\\ws", TableProbe({}, WINDOWS))


# The owner marker -----------------------------------------------------------------------------------


def test_marker_is_added_or_appended_case_insensitively_on_windows() -> None:
    assert marked_environment({"A": "1"}, "t1", windows=False) == {"A": "1", OWNER_VARIABLE: "t1"}
    assert marked_environment({OWNER_VARIABLE: "outer"}, "t2", windows=False) == {OWNER_VARIABLE: "outer t2"}
    assert marked_environment({"kandev_lsp_owner": "outer"}, "t3", windows=True) == {
        "kandev_lsp_owner": "outer t3"
    }
    # On POSIX a differently-cased name is another variable.
    assert marked_environment({"kandev_lsp_owner": "x"}, "t4", windows=False) == {
        "kandev_lsp_owner": "x",
        OWNER_VARIABLE: "t4",
    }


def test_owner_tokens_read_from_a_raw_environ() -> None:
    raw = b"PATH=/bin\0KANDEV_LSP_OWNER=outer inner\0XKANDEV_LSP_OWNER=nope\0"
    assert owner_tokens(raw) == frozenset({"outer", "inner"})
    assert owner_tokens(b"") == frozenset()


def test_parse_stat_survives_names_with_spaces_and_parentheses() -> None:
    assert parse_stat("123 (a (weird) name) S 45 67 67 0 -1") == ("S", 45, 67)


# Which processes belong to a tree ----------------------------------------------------------------


SNAPSHOT = [
    ProcInfo(1, 0, 1, frozenset()),
    ProcInfo(100, 1, 100, frozenset({"tok"})),  # the child (excluded by the caller)
    ProcInfo(101, 100, 100, frozenset({"tok"})),  # in the group
    ProcInfo(102, 100, 102, frozenset()),  # setsid + scrubbed env, still a descendant
    ProcInfo(103, 102, 102, frozenset()),  # its child
    ProcInfo(104, 1, 104, frozenset({"tok"})),  # orphaned daemon, marked
    ProcInfo(105, 1, 100, frozenset()),  # orphaned, scrubbed, still in the group
    ProcInfo(106, 1, 106, frozenset({"other"})),  # someone else's
    ProcInfo(107, 100, 100, frozenset({"tok"}), zombie=True),  # dead already
    ProcInfo(108, 1, 108, frozenset({"outer", "tok"})),  # nested owners
]


def test_selection_is_the_union_of_descendants_group_and_marker() -> None:
    selected = select_targets(SNAPSHOT, token="tok", root_pid=100, group_id=100, exclude={100})
    assert selected == {101, 102, 103, 104, 105, 108}


def test_without_a_live_root_only_the_marker_counts() -> None:
    assert select_targets(SNAPSHOT, token="tok", exclude={100}) == {101, 104, 108}


# Real snapshots of this machine ------------------------------------------------------------------


def test_proc_and_psutil_snapshots_agree_about_this_process() -> None:
    me = os.getpid()
    from_proc = {info.pid: info for info in scan_proc()}
    from_psutil = {info.pid: info for info in scan_psutil()}
    for snapshot in (from_proc, from_psutil):
        assert snapshot[me].ppid == os.getppid()
        assert snapshot[me].pgid == os.getpgid(0)
        assert not snapshot[me].zombie
