"""The real pyright-langserver behind a wiretap (not a test module).

Installed as ``pyright-langserver`` in a folder on the task's PATH, it starts the real server
(``$WIRETAP_SERVER``) and passes it every message from ``serve`` unchanged, after appending one JSON line
per message to ``$WIRETAP_RECORD``: its method, whether it is a request, and the real server's pid. The
server's output goes straight to ``serve`` (its stdout is this process's). So the page tests know from the
server's side how many ``initialize`` and ``initialized`` pyright received, and which process got them,
whatever the broker or the page say about themselves.

While the file ``$WIRETAP_HOLD`` exists, messages are recorded but not passed on (a server slow to start,
deterministically: "a reload during a cold initialize").
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # standin_framing (see its docstring)
from standin_framing import read_frame


def main() -> int:
    real = os.environ["WIRETAP_SERVER"]
    record, hold = Path(os.environ["WIRETAP_RECORD"]), Path(os.environ["WIRETAP_HOLD"])
    server = subprocess.Popen([real, *sys.argv[1:]], stdin=subprocess.PIPE)
    assert server.stdin is not None
    while (body := read_frame(sys.stdin.buffer)) is not None:
        message = json.loads(body)
        entry = {"method": message.get("method"), "request": "id" in message, "pid": server.pid}
        with record.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
        while hold.exists():
            time.sleep(0.02)
        try:
            server.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            server.stdin.flush()
        except BrokenPipeError:
            break
    with contextlib.suppress(BrokenPipeError):
        server.stdin.close()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main())
