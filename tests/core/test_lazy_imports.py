"""What ``kandev-lsp run`` imports before it can spawn the editor's server (issue 7 item 25)."""

from __future__ import annotations

import ast
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from kandev_lsp._lazy import LazyModule


def test_lazy_module_imports_on_first_attribute_use_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lazy_target_mod.py").write_text("import time\ntime.sleep(0.05)\nLOADS = [1]\nVALUE = 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_target_mod", raising=False)
    module = LazyModule("lazy_target_mod")
    assert "lazy_target_mod" not in sys.modules
    seen: list[int] = []
    threads = [threading.Thread(target=lambda: seen.append(module.VALUE)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [7, 7, 7, 7]
    assert sys.modules["lazy_target_mod"].LOADS == [1]  # executed once, whatever thread came first


def test_the_run_path_does_not_import_psutil() -> None:
    """psutil only stops process trees, secrets (hmac, hashlib, random) was one call to os.urandom:
    importing them before the spawn made every editor wait for them."""
    probe = (
        "import sys\n"
        "import kandev_lsp.cli.run, kandev_lsp.process, kandev_lsp.session, kandev_lsp.settings\n"
        "import kandev_lsp.stream.bridge, kandev_lsp.stream.stdio\n"
        "print(sorted(m for m in ('psutil', 'platformdirs', 'secrets', 'random') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.skipif(not Path("/usr/bin/gopls").exists(), reason="needs gopls (Debian) at /usr/bin/gopls")
def test_run_starts_the_server_before_it_imports_asyncio(tmp_path: Path) -> None:
    """asyncio (and ssl, socket, concurrent.futures with it) took longer to import than kandev-lsp's own
    start-up: ``run`` starts the server first, so the server starts up meanwhile (issue 7 item 25)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    probe = (
        "import sys\n"
        "seen = []\n"
        "def hook(event, args):\n"
        "    if event == 'subprocess.Popen' and not seen:\n"
        "        seen.append(1)\n"
        "        print(f'spawn {args[0]} asyncio={\"asyncio\" in sys.modules}', file=sys.stderr, flush=True)\n"
        "sys.addaudithook(hook)\n"
        "from kandev_lsp.cli import main\n"
        f"sys.argv = ['kandev-lsp', 'run', 'go', '--workspace', {str(workspace)!r},\n"
        f"            '--env=HOME={tmp_path}', '--env=PATH=/usr/bin:/bin']\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        input=b"",  # the editor closes its input at once: run stops the server and exits 0
        capture_output=True,
        timeout=60,
        check=False,
    )
    first = done.stderr.decode().splitlines()[0]
    assert first == "spawn /usr/bin/gopls asyncio=False", done.stderr.decode()
    assert done.returncode == 0, done.stderr.decode()


def _modules_after(argv: list[str], names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` a fresh interpreter has imported after running ``kandev-lsp *argv``."""
    probe = (
        "import contextlib, io, sys\n"
        "from kandev_lsp.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    main({argv!r})\n"
        f"print(sorted(m for m in {names!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return list(ast.literal_eval(out.strip()))


def test_resolve_json_imports_neither_front_end() -> None:
    """``resolve --json`` reports the close code a missing server would get: the number comes from
    :mod:`kandev_lsp.codes`, not from the stream's contract (which brought urllib.parse and the stream
    package onto every resolve) nor from another command's module (issue 7 item 26)."""
    front_ends = (
        "kandev_lsp.stream",
        "kandev_lsp.stream.contract",
        "kandev_lsp.cli.run",
        "kandev_lsp.lifecycle",
    )
    assert _modules_after(["resolve", "typescript", "--json"], front_ends) == []


#: Counts the code kandev-lsp's own modules have compiled from strings (``dataclasses.dataclass``
#: compiles each generated method so, ``collections.namedtuple`` its ``__new__``) until the first process
#: is spawned, then prints it. The standard library's and pluggy's own (inspect's namedtuples, typing's
#: forward references) are not kandev-lsp's to avoid.
_COMPILED_PROBE = """
import sys
compiled = []
GENERATORS = ("dataclasses", "collections", "typing", "kandev_lsp._values")
WHOLE_RUN = sys.argv[1] == "--whole"
del sys.argv[1]
def hook(event, args):
    if event == "compile" and args[1] == "<string>":
        frame = sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__") in GENERATORS:
            frame = frame.f_back
        if frame is not None and frame.f_globals.get("__name__", "").startswith("kandev_lsp"):
            compiled.append(frame.f_globals["__name__"])
    elif event == "subprocess.Popen" and not WHOLE_RUN:
        print(f"compiled {sorted(set(compiled))}", file=sys.stderr, flush=True)
        raise SystemExit(0)
sys.addaudithook(hook)
from kandev_lsp.cli import main
main(sys.argv[1:])
print(f"compiled {sorted(set(compiled))}", file=sys.stderr, flush=True)
"""


@pytest.mark.parametrize("language", ["typescript", "go"])
def test_resolve_compiles_no_code_at_start_up(language: str) -> None:
    """The standard ``dataclasses.dataclass`` compiled ~140 methods (about 2 ms per frozen class) before
    ``resolve`` could answer; kandev_lsp._values declares the same classes without compiling (item 26)."""
    done = subprocess.run(
        [sys.executable, "-c", _COMPILED_PROBE, "--spawn", "resolve", language, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stderr.strip().splitlines()[-1] == "compiled []", done.stderr


@pytest.mark.skipif(not Path("/usr/bin/gopls").exists(), reason="needs gopls (Debian) at /usr/bin/gopls")
def test_run_compiles_no_code_before_it_spawns_the_server(tmp_path: Path) -> None:
    """Everything ``run`` does before the spawn is added to the editor's wait (item 25)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    argv = ["run", "go", "--workspace", str(workspace), f"--env=HOME={tmp_path}", "--env=PATH=/usr/bin:/bin"]
    done = subprocess.run(
        [sys.executable, "-c", _COMPILED_PROBE, "--spawn", *argv],
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.stderr.decode().strip().splitlines()[0] == "compiled []", done.stderr.decode()
    # After the spawn too: on gopls's path, the session and bridge imports are added to the editor's wait
    # (gopls answers initialize before they are done).
    done = subprocess.run(
        [sys.executable, "-c", _COMPILED_PROBE, "--whole", *argv],
        input=b"",  # the editor leaves at once: run stops the server and returns
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.stderr.decode().strip().splitlines()[-1] == "compiled []", done.stderr.decode()


def test_the_packages_names_are_imported_at_first_use() -> None:
    """``import kandev_lsp`` (every command's first import) loads none of its API's modules; each name of
    the API still resolves to its home module's object."""
    probe = (
        "import sys, kandev_lsp\n"
        "print(sorted(m for m in ('kandev_lsp.resolver', 'kandev_lsp.host', 'pluggy') if m in sys.modules))\n"
        "for name in kandev_lsp.__all__:\n"
        "    value = getattr(kandev_lsp, name)\n"
        "    assert value is getattr(sys.modules[kandev_lsp._HOMES[name]], name), name\n"
        "from kandev_lsp import codes, resolve\n"
        "print(resolve.__module__, codes.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["[]", "kandev_lsp.resolver kandev_lsp.codes"]
