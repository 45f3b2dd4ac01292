"""How a server kandev-lsp installed with npm is started: ``<node> <script>``, never through its launcher.

npm's launchers (``node_modules/.bin/pyright-langserver``) are the package's script behind a
``#!/usr/bin/env node`` line (a symlink to it on Unix, a ``.cmd`` shim on Windows). Started that way, the
kernel runs ``env``, and ``env`` runs the first ``node`` on the PATH it is given: the task's, whose absolute
entries are kept even inside the workspace (a server's own lookups belong to the task). A repository that
plants ``<ws>/node_modules/.bin/node`` and has that folder first on the task's PATH would then be the
interpreter of kandev-lsp's own install, and of its verification (issue 17 item 1).

So a launcher in the managed cache is started as ``node script``, as Zed starts the servers it installs:

* the script is the one the install recorded in its receipt (``script``, found from the package's
  ``bin`` entry), else the file the launcher is (its symlink resolved) when that file is a node script;
* ``node`` is the one the install recorded (``interpreter``: the trusted lookup's answer, the node npm ran
  with) while it is still an executable file that may run for this task (outside its workspace: a node
  recorded for one task may lie inside another's); else the trusted lookup on this task's PATH
  (:func:`~kandev_lsp.executables.locate`: absolute entries only, never a file whose real path is inside
  the workspace). A node that was removed or upgraded away is thus replaced by the task's own trusted
  one, and ``--explain`` says so. With no node at all, the launcher is refused and the resolver moves on.

A launcher that is not a node script (a binary, or a script for another interpreter) is started as it is.
A server found outside the cache (the task's PATH, a plugin's candidate) whose file is a
``#!/usr/bin/env node`` script (a user's ``npm install -g``) gets the same interpreter choice
(:func:`path_launch`): ``env`` would take a planted node for it just the same.
On Windows a launcher is a shim that looks ``node`` up itself, so without a recorded script it is refused
(reinstalling records one). Interpreters the *server* looks up while it runs (pyright's ``python``) stay the
task's: they are the project's.

Light at import, like the resolver that calls it: the receipt module is imported on first use.
"""

from __future__ import annotations

from kandev_lsp._values import dataclass
from kandev_lsp.executables import WorkspaceGate, locate
from kandev_lsp.fileprobe import FileProbe, ProbeStatus

__all__ = ["NpmLaunch", "is_node_script", "npm_launch", "path_launch", "runs_on_node"]

#: How much of a launcher is read to see its ``#!`` line.
_HEAD = 256
_NODE_NAMES = frozenset({"node", "nodejs", "node.exe"})


@dataclass(frozen=True, slots=True)
class NpmLaunch:
    """How to start one npm launcher: ``command`` (``(node, script)``, or ``(launcher,)`` for one that is
    not a node script), what ``--explain`` says about it (``note``), or why it cannot run (``refusal``)."""

    command: tuple[str, ...] = ()
    note: str = ""
    refusal: str | None = None


def _shebang(head: bytes) -> tuple[bool, list[str]]:
    """Of a file starting with ``head``: whether its ``#!`` line runs ``env``, and the interpreter and
    arguments it names (after env's own options and assignments); no ``#!`` line: ``(False, [])``."""
    if not head.startswith(b"#!"):
        return False, []
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").replace("\\", "/").split()
    if words and words[0].rsplit("/", 1)[-1] == "env":
        return True, [word for word in words[1:] if not word.startswith("-") and "=" not in word]
    return False, words


def runs_on_node(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a script for node: ``#!/usr/bin/env node``,
    ``#!/usr/bin/env -S node --flag``, ``#!/opt/node/bin/node``."""
    return _names_node(_shebang(head)[1])


def looks_node_up(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a node script whose interpreter ``env`` finds on the PATH
    (``#!/usr/bin/env node``), rather than one naming its node by absolute path."""
    through_env, words = _shebang(head)
    return through_env and _names_node(words)


def _names_node(words: list[str]) -> bool:
    """Whether a ``#!`` line's command words (after any ``env``) start with node."""
    return bool(words) and words[0].rsplit("/", 1)[-1].lower() in _NODE_NAMES


def is_node_script(path: str, probe: FileProbe) -> bool:
    """Whether the regular file at ``path`` is a script for node, by its ``#!`` line (:func:`runs_on_node`):
    an npm launcher's target, or npm's own launcher."""
    return runs_on_node(probe.read_head(path, _HEAD) or b"")


def npm_launch(launcher: str, real_launcher: str, gate: WorkspaceGate) -> NpmLaunch:
    """How to start the npm launcher ``launcher`` (whose real path is ``real_launcher``) found in the
    managed cache at ``<version folder>/node_modules/.bin/``, for the task ``gate`` decides for."""
    from kandev_lsp.install.receipts import MAX_RECEIPT_BYTES, RECEIPT_NAME, parse_receipt

    probe, host = gate.probe, gate.env.host
    pure = host.pure_path(launcher)
    folder = probe.real_path(str(pure.parent.parent.parent))  # .../current -> .../versions/<dir>
    receipt = parse_receipt(probe.read_head(host.join(folder, RECEIPT_NAME), MAX_RECEIPT_BYTES), folder)
    if receipt is not None and receipt.script is not None:
        script = host.join(folder, *receipt.script.split("/"))
    elif is_node_script(real_launcher, probe):
        script = real_launcher  # the launcher is (a link to) the package's script
    elif host.is_windows:
        return NpmLaunch(
            refusal="an npm launcher whose script was not recorded: started as it is, it would take node "
            "from the task's PATH; reinstall the server (`kandev-lsp install LANG`) so its receipt records it"
        )
    else:
        return NpmLaunch((launcher,), "not a node script: started as it is")
    checked = probe.probe(script)
    if checked.status is not ProbeStatus.OK and checked.status is not ProbeStatus.NOT_EXECUTABLE:
        return NpmLaunch(refusal=f"its script {script} is {checked.status.value}; reinstall the server")
    refused = gate.refusal(checked.real_path or probe.real_path(script))
    if refused:
        return NpmLaunch(refusal=f"its script {script} is {refused}")
    return _on_node(script, receipt.interpreter if receipt is not None else None, gate)


def path_launch(real_path: str, gate: WorkspaceGate) -> NpmLaunch | None:
    """How to start a server found outside the managed cache (the task's PATH, a plugin's candidate)
    whose file is a ``#!/usr/bin/env node`` script, as a user's ``npm install -g`` launcher resolves to:
    ``(node, script)`` with node from the trusted lookup, so that a ``node`` a workspace folder on the
    task's PATH planted before the real one is never its interpreter. None: start it as it is (a binary,
    a script naming its interpreter by path, any other interpreter; and on Windows, whose launchers are
    ``.cmd`` shims)."""
    if gate.env.host.is_windows or not looks_node_up(gate.probe.read_head(real_path, _HEAD) or b""):
        return None
    return _on_node(real_path, None, gate)


def _on_node(script: str, recorded: str | None, gate: WorkspaceGate) -> NpmLaunch:
    """``script`` started by the node :func:`_node` picks (the ``recorded`` one, else the trusted lookup's),
    or refused when there is none."""
    node, note = _node(recorded, gate)
    if node is None:
        return NpmLaunch(refusal=note)
    return NpmLaunch((node, script), f"runs as {node} {script} ({note})")


def _node(recorded: str | None, gate: WorkspaceGate) -> tuple[str | None, str]:
    """The node to run with and where it came from, or None and why there is none."""
    env, workspace, probe = gate.env, gate.workspace, gate.probe
    gone = ""
    if recorded is not None:
        kept = locate(recorded, env, workspace, probe)
        if kept.path is not None:
            return kept.path, "the node recorded at install"
        gone = f"; the node recorded at install, {recorded}, cannot be used: {kept.reason}"
    found = locate("node", env, workspace, probe)
    if found.path is not None:
        return found.path, f"node from the task's PATH{gone}"
    return None, f"its interpreter node was not found: {found.reason}{gone}. {found.advice}"
