"""A stand-in language server that writes down what it receives (not a test module).

Every message it reads is appended, as one JSON line, to the file named by ``KANDEV_TEST_RECORD``, before
it is handled: the test reads that file, so what the server got is known from the server's side, not from
anything kandev-lsp reports about itself. It answers ``initialize`` and ``shutdown``, exits on ``exit``,
and, like gopls, answers a ``workspace/didChangeConfiguration`` by pulling ``workspace/configuration``
for the ``gopls`` section (the answer it gets is recorded like any other message).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # standin_framing (see its docstring)
from standin_framing import read_frame, send


def main() -> None:
    record = os.environ["KANDEV_TEST_RECORD"]
    pulls = 0
    while (body := read_frame(sys.stdin.buffer)) is not None:
        message = json.loads(body)
        with open(record, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(message) + "\n")
        method = message.get("method")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {"hoverProvider": True}}})
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "exit":
            return
        elif method == "workspace/didChangeConfiguration":
            pulls += 1
            params = {"items": [{"section": "gopls"}]}
            send(
                {
                    "jsonrpc": "2.0",
                    "id": f"pull-{pulls}",
                    "method": "workspace/configuration",
                    "params": params,
                }
            )


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        main()
