"""Short, bounded runs of a candidate executable (``--version``), for checks that a file cannot answer.

Used sparingly: only for proxy launchers such as rustup (whose ``rust-analyzer`` link exists even when
the component is not installed) and by ``doctor`` to report versions.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from kandev_lsp.platform import HostPlatform

PROXY_CHECK_TIMEOUT = 5.0
_OUTPUT_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class BriefRun:
    ok: bool
    output: str
    summary: str


def proxy_launcher_of(path: str, launchers: tuple[str, ...], host: HostPlatform) -> str | None:
    """The launcher ``path`` resolves to (through symlinks), if it is one of ``launchers``."""
    real = os.path.realpath(path)
    stem = host.pure_path(real).name
    if host.is_windows:
        stem = stem.lower().removesuffix(".exe")
    return stem if stem in launchers else None


def run_briefly(argv: list[str], env: Mapping[str, str], *, timeout: float) -> BriefRun:
    """Run ``argv`` (never through a shell) with no stdin, capturing a little output."""
    try:
        completed = subprocess.run(  # noqa: S603 - argv from the resolver, absolute path, no shell
            argv,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return BriefRun(False, "", f"no answer to {' '.join(argv[1:])} within {timeout:g} s")
    except OSError as exc:
        return BriefRun(False, "", f"cannot execute: {exc.strerror}")
    output = (completed.stdout + completed.stderr)[:_OUTPUT_LIMIT].decode("utf-8", "replace").strip()
    first_line = output.splitlines()[0] if output else ""
    if completed.returncode != 0:
        return BriefRun(False, output, f"exit status {completed.returncode}: {first_line}".rstrip(": "))
    return BriefRun(True, output, first_line)
