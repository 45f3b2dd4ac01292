"""Safe-edit benchmark (issue 11): a rename touching 20 files on real pyright, from approval to files
written and to post-edit diagnostics settled, against baselines measured in the same run.

Run: ``.venv/bin/python bench/edit_bench.py --home DIR`` where ``DIR/.kandev/lsp-servers`` holds pyright
(``kandev-lsp install python`` with ``HOME=DIR``); without ``--home`` it is installed into a temporary
HOME first (real npm, ~10 s). ``--quick`` for a smoke run.

A generated project (``lib.py`` defining ``greet`` and ``--files - 1`` modules calling it) is opened
through :class:`~kandev_lsp.intel.service.IntelService`. Each round renames ``greet`` with
``code_rename`` the headless two-step way (the first call previews and parks a transaction, the second,
``{transactionId, approve: true}``, applies) and times:

* **preview**: the first call (prepareRename, rename, plan, diff preview, diagnostics baseline);
* **approve -> written**: from the approval call's start until the applier's commit returned (every file
  replaced atomically; measured by wrapping the coordinator's ``commit``; the files' mtimes otherwise),
  and the commit alone (digest recheck, temp file + fsync + ``os.replace`` per file): before it, the
  approval revalidates versions and digests and takes the touched files' diagnostics baseline;
* **approve -> settled**: the whole approval call, which returns once the servers were told
  (didChange/didSave) and the touched files' post-edit diagnostics settled (the receipt).

Baselines, on the same warm server in the same round, in alternating order:

* **plain writes**: the same rename's ``WorkspaceEdit`` (a raw ``textDocument/rename``) applied by plain
  Python (``str`` slicing, ``Path.write_text`` per file: no validation, no digests, no atomicity, no
  fsync) -- what "files written" costs without the applier's guarantees;
* **raw rename**: that ``textDocument/rename`` request alone (the server computing the edit);
* **read call**: a warm ``code_navigate`` references call on the same symbol (what a read tool costs).

The files are restored (written back, re-synced by the next call) after each round. Printed: medians over
the rounds with their spread (min-max), and the ratios approve->written / plain writes, commit / plain
writes and approve->settled / read call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from benchkit import bench_home


def python_project(folder: Path, files: int) -> dict[str, str]:
    """``lib.py`` plus ``files - 1`` modules using ``greet``: a rename of it touches ``files`` files."""
    texts = {
        "pyproject.toml": '[project]\nname = "bench"\nversion = "0"\n',
        "lib.py": (
            "def greet(name: str, excited: bool = False) -> str:\n"
            '    """Say hello."""\n'
            '    return "hello " + name\n'
        ),
    }
    for n in range(files - 1):
        texts[f"mod{n}.py"] = (
            "from lib import greet\n\n\n"
            f"def use{n}(x: str) -> str:\n"
            "    first = greet(x)\n"
            "    return first + greet(x, True)\n"
        )
    for name, text in texts.items():
        (folder / name).write_text(text)
    return texts


def restore(folder: Path, texts: Mapping[str, str]) -> None:
    for name, text in texts.items():
        path = folder / name
        if path.read_text() != text:
            path.write_text(text)


def plain_apply(edit: Mapping[str, Any]) -> int:
    """Apply a ``WorkspaceEdit`` the naive way (ASCII project: UTF-16 columns are str indexes)."""
    changes: dict[str, list[Mapping[str, Any]]] = {
        uri: list(edits) for uri, edits in (edit.get("changes") or {}).items()
    }
    for doc in edit.get("documentChanges") or []:
        if "textDocument" in doc:
            changes.setdefault(doc["textDocument"]["uri"], []).extend(doc["edits"])
    for uri, edits in changes.items():
        path = Path(unquote(urlparse(uri).path))
        lines = path.read_text().split("\n")
        starts, offset = [], 0
        for line in lines:
            starts.append(offset)
            offset += len(line) + 1
        text = "\n".join(lines)
        for item in sorted(
            edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"])
        )[::-1]:
            start = starts[item["range"]["start"]["line"]] + item["range"]["start"]["character"]
            end = starts[item["range"]["end"]["line"]] + item["range"]["end"]["character"]
            text = text[:start] + item["newText"] + text[end:]
        path.write_text(text)
    return len(changes)


@contextmanager
def commit_clock() -> Iterator[list[float]]:
    """Record when the coordinator's ``commit`` starts and returns (the files are written then), if it can
    be found: pairs of ``perf_counter`` stamps."""
    stamps: list[float] = []
    try:
        from kandev_lsp.intel.edits import coordinator
    except ImportError:
        yield stamps
        return
    original: Callable[..., Any] | None = getattr(coordinator, "commit", None)
    if original is None:
        yield stamps
        return

    def timed(*args: Any, **kwargs: Any) -> Any:
        stamps.append(time.perf_counter())
        value = original(*args, **kwargs)
        stamps.append(time.perf_counter())
        return value

    coordinator.commit = timed  # type: ignore[attr-defined]
    try:
        yield stamps
    finally:
        coordinator.commit = original  # type: ignore[attr-defined]


def _spread(values: list[float]) -> dict[str, float]:
    ms = [value * 1000 for value in values]
    return {"p50": round(statistics.median(ms), 2), "min": round(min(ms), 2), "max": round(max(ms), 2)}


async def bench(folder: Path, home: Path, files: int, rounds: int) -> dict[str, Any]:
    from kandev_lsp import TaskEnvironment
    from kandev_lsp.intel.service import IntelService
    from kandev_lsp.intel.surface.dispatch import IntelContext

    texts = python_project(folder, files)
    env = TaskEnvironment.from_agent({"HOME": str(home), "PATH": "/usr/bin:/bin"})
    ctx = IntelContext(deadline=120)
    target = {"path": "lib.py", "symbol": "greet"}
    read_payload = {"target": target, "kind": "references"}
    samples: dict[str, list[float]] = {
        key: [] for key in ("preview", "written", "commit", "settled", "plainWrites", "rawRename", "readCall")
    }
    out: dict[str, Any] = {"files": files, "rounds": rounds}
    read_s = 0.0
    async with IntelService.open([folder], env=env) as service:
        call = service.dispatch
        warm = await call("code_navigate", read_payload, ctx)
        assert warm["ok"], warm
        assert warm.get("totalFound", 0) >= 2 * (files - 1), warm  # every module is seen
        server = service.pool.servers[0]
        lib = service.workspace.resolve("lib.py")
        rename_params = {
            "textDocument": {"uri": lib.uri},
            "position": {"line": 0, "character": 4},
            "newName": "salute",
        }

        async def raw_rename() -> Any:
            return await server.client.request("textDocument/rename", rename_params)

        with commit_clock() as stamps:
            for index in range(rounds + 1):  # round 0 warms up
                # the tool: preview, then approval
                started = time.perf_counter()
                parked = await call("code_rename", {"target": target, "newName": "salute"}, ctx)
                preview_s = time.perf_counter() - started
                assert parked.get("needsApproval"), parked
                stamps.clear()
                mtime_floor = time.time_ns()
                started = time.perf_counter()
                applied = await call(
                    "code_rename", {"transactionId": parked["transactionId"], "approve": True}, ctx
                )
                settled_s = time.perf_counter() - started
                assert applied["ok"] and not applied.get("needsApproval"), applied
                if stamps:
                    written_s, out["writtenBy"] = stamps[-1] - started, "commit returned"
                    commit_s = stamps[-1] - stamps[-2]
                else:
                    commit_s = float("nan")
                    latest = max((folder / name).stat().st_mtime_ns for name in texts)
                    written_s, out["writtenBy"] = (latest - mtime_floor) / 1e9, "file mtimes"
                changed = sum(1 for name, text in texts.items() if (folder / name).read_text() != text)
                assert changed == files, f"{changed} files changed, expected {files}"
                receipt = applied.get("receipt", {})
                out["diagnosticsStatus"] = receipt.get("diagnostics", {}).get("status")
                restore(folder, texts)
                # the baselines (alternating order), then restore again
                read_first = index % 2 == 1
                if read_first:
                    elapsed, result = await _timed(lambda: call("code_navigate", read_payload, ctx))
                    assert result["ok"], result
                    read_s = elapsed
                raw_s, edit = await _timed(raw_rename)
                plain_started = time.perf_counter()
                written_files = plain_apply(edit)
                plain_s = time.perf_counter() - plain_started
                assert written_files == files, written_files
                restore(folder, texts)
                if not read_first:
                    elapsed, result = await _timed(lambda: call("code_navigate", read_payload, ctx))
                    assert result["ok"], result
                    read_s = elapsed
                if index == 0:
                    continue
                for key, value in (
                    ("preview", preview_s),
                    ("written", written_s),
                    ("commit", commit_s),
                    ("settled", settled_s),
                    ("plainWrites", plain_s),
                    ("rawRename", raw_s),
                    ("readCall", read_s),
                ):
                    samples[key].append(value)
    out["ms"] = {key: _spread(values) for key, values in samples.items()}
    p50 = {key: statistics.median(values) for key, values in samples.items()}
    out["ratios"] = {
        "writtenVsPlainWrites": round(p50["written"] / p50["plainWrites"], 2),
        "commitVsPlainWrites": round(p50["commit"] / p50["plainWrites"], 2),
        "settledVsReadCall": round(p50["settled"] / p50["readCall"], 2),
        "settledVsWritten": round(p50["settled"] / p50["written"], 2),
    }
    return out


async def _timed(step: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = await step()
    return time.perf_counter() - started, value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, help="a HOME whose managed cache holds pyright")
    parser.add_argument("--quick", action="store_true", help="few rounds")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--files", type=int, default=20, help="files the rename touches (default 20)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 15)
    with tempfile.TemporaryDirectory(prefix="edit-bench-") as temp:
        base = Path(temp)
        home = bench_home(args.home, base, ["python"])
        folder = base / "python"
        folder.mkdir()
        report = asyncio.run(bench(folder, home, args.files, rounds))
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"\npython (pyright): code_rename touching {report['files']} files, {report['rounds']} rounds; "
        f"files written = {report['writtenBy']}; post-edit diagnostics {report['diagnosticsStatus']}"
    )
    labels = {
        "preview": "preview (1st call)",
        "written": "approve -> files written",
        "commit": "  of which the commit",
        "settled": "approve -> diags settled",
        "plainWrites": "baseline: plain writes",
        "rawRename": "baseline: raw rename",
        "readCall": "baseline: read call",
    }
    print(f"  {'step':28} {'p50':>9} {'min':>9} {'max':>9}")
    for key, label in labels.items():
        row = report["ms"][key]
        print(f"  {label:28} {row['p50']:>7.2f}ms {row['min']:>7.2f}ms {row['max']:>7.2f}ms")
    ratios = report["ratios"]
    print(
        f"  ratios (p50): written / plain writes {ratios['writtenVsPlainWrites']}x, commit / plain writes "
        f"{ratios['commitVsPlainWrites']}x, "
        f"settled / read call {ratios['settledVsReadCall']}x, settled / written {ratios['settledVsWritten']}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
