"""A small fake language server for fault injection (not a test module).

Run as ``fake_lsp.py MODE``. Modes:

``echo``   write every frame body it reads back verbatim (so a client sees exactly what the bridge sent),
           answer ``initialize`` with ``{"capabilities": ..., "received": <the params it got>}``,
           and obey a few test methods:
           ``test/askConfiguration`` (params = workspace/configuration params) -> send a
           ``workspace/configuration`` request with id ``"cfg-N"`` (its response is then echoed),
           ``test/spawnChild`` -> start a sleeping grandchild in a new session and send
           ``test/child`` with its pid, ``test/crash`` -> exit(3) at once, without answering,
           ``test/huge`` -> announce a frame of ``params.size`` bytes and stall,
           ``test/garbage`` -> write bytes that are not LSP framing,
           ``test/badUtf8`` -> write a frame whose body is not UTF-8,
           ``test/flood`` -> write ``params.count`` notifications of ``params.size`` bytes, flat out,
           ``test/exit0`` -> exit(0) at once, unasked; the ``exit`` notification -> exit(0) (as LSP says),
           ``test/ask`` (params = a list of ``{"id": "ask-N", "method", "params"}``) -> send those requests
           to the client; the answers it gets to ``ask-`` ids are recorded (not echoed), and
           ``test/answers`` -> a ``test/answers`` notification listing them in arrival order.
``mute``   never read stdin; sleep.
``stubborn`` ``echo`` that answers ``shutdown`` (null) but ignores ``exit``, the end of its input and
           SIGINT: only the supervisor's SIGKILL ends it (a hung server, for the stream's stop frame).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # standin_framing (see its docstring)
from standin_framing import read_frame, send, write_body, write_raw


def echo(stubborn: bool = False) -> None:
    stdin = sys.stdin.buffer
    asked = 0
    answers: list[dict] = []
    while (body := read_frame(stdin)) is not None:
        method = None
        if b'"ask-' in body and "method" not in (message := json.loads(body)):
            answers.append(message)  # an answer to one of its test/ask requests
            continue
        if b'"test/' in body:
            message = json.loads(body)
            method = message.get("method")
            params = message.get("params")
        if b'"exit"' in body and json.loads(body).get("method") == "exit":
            if stubborn:
                continue
            os._exit(0)
        if stubborn and b'"shutdown"' in body and (message := json.loads(body)).get("method") == "shutdown":
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            continue
        if b'"initialize"' in body and (message := json.loads(body)).get("method") == "initialize":
            result = {"capabilities": {"hoverProvider": True}, "received": message.get("params")}
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method == "test/askConfiguration":
            asked += 1
            send(
                {
                    "jsonrpc": "2.0",
                    "id": f"cfg-{asked}",
                    "method": "workspace/configuration",
                    "params": params,
                }
            )
        elif method == "test/ask":
            for asked_request in params:
                send({"jsonrpc": "2.0", **asked_request})
        elif method == "test/answers":
            send({"jsonrpc": "2.0", "method": "test/answers", "params": answers})
        elif method == "test/spawnChild":
            child = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(120)"],
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            send({"jsonrpc": "2.0", "method": "test/child", "params": {"pid": child.pid}})
        elif method == "test/crash":
            os._exit(3)
        elif method == "test/exit0":
            os._exit(0)
        elif method == "test/huge":
            write_raw(b"Content-Length: %d\r\n\r\n" % params["size"] + b"{" * 1024)
            time.sleep(120)
        elif method == "test/garbage":
            write_raw(b"this is a log line on stdout\r\n\r\n")
        elif method == "test/badUtf8":
            write_body(b'{"jsonrpc":"2.0","method":"x","params":"\xff\xfe"}')
        elif method == "test/flood":
            filler = "x" * params["size"]
            for number in range(params["count"]):
                send({"jsonrpc": "2.0", "method": "test/flood", "params": {"n": number, "fill": filler}})
        else:
            write_body(body)


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "echo"
    try:
        if mode == "mute":
            time.sleep(600)
        elif mode == "stubborn":
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            echo(stubborn=True)
            time.sleep(600)
        else:
            echo()
    except (KeyboardInterrupt, BrokenPipeError):
        pass


if __name__ == "__main__":
    main()
