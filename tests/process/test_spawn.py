"""Starting a child in the task: its environment, working directory, argv[0] lookup and start errors."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from kandev_lsp.errors import KandevLspError
from kandev_lsp.process import (
    OWNER_VARIABLE,
    CommandNotFoundError,
    ProcessStartError,
    run,
    spawn,
)
from kandev_lsp.taskenv import TaskEnvironment

if TYPE_CHECKING:  # the fixture's type; conftest is not importable under --import-mode=importlib
    from conftest import Kit

DUMP_ENVIRONMENT = """
    import json, os
    with open("/proc/self/environ", "rb") as handle:
        entries = [e.decode() for e in handle.read().split(b"\\0") if e]
    print(json.dumps({"env": dict(e.split("=", 1) for e in entries), "cwd": os.getcwd()}))
"""


def tool(folder: Path, name: str, says: str) -> Path:
    """An executable script ``name`` in ``folder`` that prints ``says``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!{sys.executable}\nprint({says!r})\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def test_child_gets_exactly_the_task_environment_and_the_workspace(kit: Kit) -> None:
    variables = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "ONLY_IN_TASK": "yes", "HOME": str(kit.root)}
    env = TaskEnvironment.from_mapping(variables)
    assert "ONLY_IN_TASK" not in os.environ

    result = asyncio.run(run(kit.script(DUMP_ENVIRONMENT), env=env, cwd=kit.cwd, timeout=30))

    assert result.returncode == 0, result.output
    seen = json.loads(result.output)
    token = seen["env"].pop(OWNER_VARIABLE)
    assert seen["env"] == variables
    assert len(token) >= 16 and " " not in token
    assert seen["cwd"] == os.path.realpath(kit.cwd)


def test_an_inherited_owner_marker_is_kept_and_extended(kit: Kit) -> None:
    env = TaskEnvironment.from_mapping({"PATH": "/usr/bin", OWNER_VARIABLE: "outer-token"})
    result = asyncio.run(run(kit.script(DUMP_ENVIRONMENT), env=env, cwd=kit.cwd, timeout=30))
    tokens = json.loads(result.output)["env"][OWNER_VARIABLE].split()
    assert tokens[0] == "outer-token" and len(tokens) == 2


def test_bare_name_is_looked_up_on_the_task_path_not_the_agents(kit: Kit) -> None:
    tool(kit.root / "task-bin", "kandev-test-tool", "from task PATH")
    env = kit.env.with_overrides({"PATH": f"{kit.root / 'task-bin'}:/usr/bin:/bin"})
    result = asyncio.run(run(["kandev-test-tool"], env=env, cwd=kit.cwd, timeout=30))
    assert result.returncode == 0
    assert result.output == "from task PATH\n"
    assert result.argv[0] == str(kit.root / "task-bin" / "kandev-test-tool")


def test_relative_path_entries_are_ignored(kit: Kit) -> None:
    tool(kit.workspace / "rel", "kandev-test-tool", "relative entry")
    tool(kit.root / "abs", "kandev-test-tool", "absolute entry")
    env = kit.env.with_overrides({"PATH": f"rel:{kit.root / 'abs'}"})
    result = asyncio.run(run(["kandev-test-tool"], env=env, cwd=kit.cwd, timeout=30))
    assert result.output == "absolute entry\n"

    only_relative = kit.env.with_overrides({"PATH": "rel"})
    with pytest.raises(CommandNotFoundError) as caught:
        asyncio.run(run(["kandev-test-tool"], env=only_relative, cwd=kit.cwd, timeout=30))
    assert "relative entry ignored" in str(caught.value)


def test_a_path_hit_inside_the_workspace_is_skipped(kit: Kit) -> None:
    planted = tool(kit.workspace / "node_modules" / ".bin", "kandev-test-tool", "planted by the repo")
    tool(kit.root / "abs", "kandev-test-tool", "trusted")
    env = kit.env.with_overrides({"PATH": f"{planted.parent}:{kit.root / 'abs'}"})
    result = asyncio.run(run(["kandev-test-tool"], env=env, cwd=kit.cwd, timeout=30))
    assert result.output == "trusted\n"

    only_workspace = kit.env.with_overrides({"PATH": str(planted.parent)})
    with pytest.raises(CommandNotFoundError) as caught:
        asyncio.run(run(["kandev-test-tool"], env=only_workspace, cwd=kit.cwd, timeout=30))
    assert "inside the task workspace" in str(caught.value)


def test_an_absolute_path_inside_the_workspace_is_refused(kit: Kit) -> None:
    planted = tool(kit.workspace / "bin", "server", "planted")
    with pytest.raises(ProcessStartError) as caught:
        asyncio.run(run([str(planted)], env=kit.env, cwd=kit.cwd, timeout=30))
    assert not isinstance(caught.value, CommandNotFoundError)
    assert "inside the task workspace" in str(caught.value)


@pytest.mark.parametrize("command", ["./kandev-test-tool", "bin/kandev-test-tool"])
def test_relative_paths_with_a_separator_are_refused(kit: Kit, command: str) -> None:
    tool(kit.workspace / "bin", "kandev-test-tool", "relative")
    tool(kit.workspace, "kandev-test-tool", "relative")
    with pytest.raises(ProcessStartError) as caught:
        asyncio.run(run([command], env=kit.env, cwd=kit.cwd, timeout=30))
    message = str(caught.value)
    assert command in message and "relative path" in message and "absolute path" in message


def test_missing_command_says_what_was_searched_and_what_to_do(kit: Kit) -> None:
    env = kit.env.with_overrides({"PATH": f"{kit.root / 'nothing-here'}:/usr/bin"})
    with pytest.raises(CommandNotFoundError) as caught:
        asyncio.run(run(["kandev-no-such-tool"], env=env, cwd=kit.cwd, timeout=30))
    error = caught.value
    assert isinstance(error, ProcessStartError) and isinstance(error, KandevLspError)
    message = str(error)
    assert "kandev-no-such-tool" in message
    assert str(kit.root / "nothing-here") in message and "/usr/bin" in message
    assert "Install kandev-no-such-tool or add the folder" in message
    assert error.searched == (
        str(kit.root / "nothing-here" / "kandev-no-such-tool"),
        "/usr/bin/kandev-no-such-tool",
    )


def test_missing_absolute_path_is_command_not_found(kit: Kit) -> None:
    with pytest.raises(CommandNotFoundError, match="no such file"):
        asyncio.run(run([str(kit.root / "absent")], env=kit.env, cwd=kit.cwd, timeout=30))


def test_file_without_execute_bit_is_refused(kit: Kit) -> None:
    path = tool(kit.root / "bin", "not-executable", "x")
    path.chmod(0o644)
    with pytest.raises(ProcessStartError, match="no execute permission"):
        asyncio.run(run([str(path)], env=kit.env, cwd=kit.cwd, timeout=30))


def test_a_script_without_interpreter_line_is_a_clear_start_error(kit: Kit) -> None:
    path = kit.root / "bin" / "no-shebang"
    path.parent.mkdir()
    path.write_bytes(b"\x7fNOT-AN-ELF\x00\x01\x02")
    path.chmod(0o755)
    with pytest.raises(ProcessStartError) as caught:
        asyncio.run(run([str(path)], env=kit.env, cwd=kit.cwd, timeout=30))
    assert "exec format error" in str(caught.value) and "#! line" in str(caught.value)


def test_a_missing_interpreter_is_a_clear_start_error(kit: Kit) -> None:
    path = kit.root / "bin" / "bad-interpreter"
    path.parent.mkdir()
    path.write_text("#!/nonexistent/interpreter\n")
    path.chmod(0o755)
    with pytest.raises(ProcessStartError, match="interpreter on its #! line"):
        asyncio.run(run([str(path)], env=kit.env, cwd=kit.cwd, timeout=30))


@pytest.mark.parametrize("cwd", ["relative/dir", "/nonexistent/kandev-workspace"])
def test_working_directory_must_be_an_existing_absolute_folder(kit: Kit, cwd: str) -> None:
    with pytest.raises(ProcessStartError, match="working directory"):
        asyncio.run(run([sys.executable, "-c", "pass"], env=kit.env, cwd=cwd, timeout=30))


def test_empty_argv_is_refused(kit: Kit) -> None:
    with pytest.raises(ProcessStartError, match="argv is empty"):
        asyncio.run(run([], env=kit.env, cwd=kit.cwd))


def test_stdin_and_stdout_pipes_carry_bytes_both_ways(kit: Kit) -> None:
    echo = kit.script(
        """
        data = sys.stdin.buffer.read()
        sys.stdout.buffer.write(data[::-1])
        sys.stderr.write("note on stderr\\n")
        """
    )

    async def main() -> tuple[bytes, int | None, str]:
        process = await spawn(echo, env=kit.env, cwd=kit.cwd, stdin=True, stdout="pipe")
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(b"hello kandev")
        await process.stdin.drain()
        process.stdin.close()
        data = await asyncio.wait_for(process.stdout.read(), 10)
        await asyncio.wait_for(process.wait(), 10)
        await process.stop()
        return data, process.returncode, process.captured_output()

    data, returncode, captured = asyncio.run(main())
    assert data == b"vednak olleh"
    assert returncode == 0
    assert captured == "note on stderr\n"


def test_discarded_streams_are_not_captured(kit: Kit) -> None:
    noisy = kit.script('print("out"); print("err", file=sys.stderr)')

    async def main() -> str:
        process = await spawn(noisy, env=kit.env, cwd=kit.cwd, stdout="discard", stderr="discard")
        assert process.stdout is None and process.stdin is None
        await process.wait()
        await process.stop()
        return process.captured_output()

    assert asyncio.run(main()) == ""


def test_wait_returns_when_the_child_exits_even_if_a_grandchild_holds_its_pipes(kit: Kit) -> None:
    """asyncio's own Process.wait also waits for the pipes; ours reports the child's exit at once."""
    script = kit.script(
        """
        if os.fork() == 0:
            publish(sys.argv[1], os.getpid())
            time.sleep(60)   # keeps the inherited stderr pipe open
            os._exit(0)
        while not os.path.exists(sys.argv[1]):
            time.sleep(0.01)
        sys.exit(3)
        """
    )
    pidfile = kit.pidfile("holder")

    async def main() -> tuple[int, float, int]:
        loop = asyncio.get_running_loop()
        process = await spawn([*script, pidfile], env=kit.env, cwd=kit.cwd, stdout="capture")
        holder = await kit.wait_pid(pidfile)
        started = loop.time()
        returncode = await asyncio.wait_for(process.wait(), 10)
        waited = loop.time() - started
        await process.stop(grace=0.2)
        return returncode, waited, holder

    returncode, waited, holder = asyncio.run(main())
    assert returncode == 3
    assert waited < 2.0
    assert holder not in kit.alive()
