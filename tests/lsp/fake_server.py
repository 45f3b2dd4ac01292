"""A fake language server for fault injection in the endpoint tests (not a test module).

It answers ``initialize`` (echoing the params it got under ``received``) and ``shutdown``, and obeys:

``test/echo``           answer with the params;
``test/never``          never answer; on ``$/cancelRequest`` for it, answer RequestCancelled and send a
                        ``test/cancelled`` notification carrying the id;
``test/ask``            send the client the request ``params.method`` / ``params.params`` with id
                        ``"srv-N"``; its answer is reported back in a ``test/answer`` notification;
``test/askThenCancel``  like ``test/ask``, then ``$/cancelRequest`` for that request at once;
``test/notify``         send ``params.count`` notifications ``test/tick`` (``params.size`` bytes of filler);
``test/badJson``        write one frame whose body is not JSON, then answer with ``"after"``;
``test/garbage``        write bytes that are not LSP framing;
``test/crash``          exit(3) at once, without answering;
``test/progressThenAnswer``  create a token, begin, end it, then answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # standin_framing (see its docstring)
from standin_framing import read_frame, send, write_body, write_raw


def main() -> None:
    never: set[object] = set()
    asked = 0
    while (body := read_frame(sys.stdin.buffer)) is not None:
        message = json.loads(body)
        method = message.get("method")
        params = message.get("params")
        request_id = message.get("id")
        if method is None:  # an answer to one of our requests
            send({"jsonrpc": "2.0", "method": "test/answer", "params": message})
        elif method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"capabilities": {}, "received": params}})
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": request_id, "result": None})
        elif method == "exit":
            sys.exit(0)
        elif method == "test/echo":
            send({"jsonrpc": "2.0", "id": request_id, "result": params})
        elif method == "test/never":
            never.add(request_id)
        elif method == "$/cancelRequest":
            target = params["id"]
            if target in never:
                never.discard(target)
                send({"jsonrpc": "2.0", "id": target, "error": {"code": -32800, "message": "cancelled"}})
                send({"jsonrpc": "2.0", "method": "test/cancelled", "params": {"id": target}})
        elif method == "test/ask":
            asked += 1
            send(
                {
                    "jsonrpc": "2.0",
                    "id": f"srv-{asked}",
                    "method": params["method"],
                    "params": params.get("params"),
                }
            )
            send({"jsonrpc": "2.0", "id": request_id, "result": f"srv-{asked}"})
        elif method == "test/askThenCancel":
            asked += 1
            send({"jsonrpc": "2.0", "id": f"srv-{asked}", "method": params["method"], "params": {}})
            send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": f"srv-{asked}"}})
            send({"jsonrpc": "2.0", "id": request_id, "result": f"srv-{asked}"})
        elif method == "test/notify":
            filler = "x" * params.get("size", 0)
            for number in range(params["count"]):
                send({"jsonrpc": "2.0", "method": "test/tick", "params": {"n": number, "fill": filler}})
            send({"jsonrpc": "2.0", "id": request_id, "result": params["count"]})
        elif method == "test/badJson":
            write_body(b"{this is not json")
            send({"jsonrpc": "2.0", "id": request_id, "result": "after"})
        elif method == "test/garbage":
            write_raw(b"a log line on stdout\r\n\r\n")
        elif method == "test/crash":
            os._exit(3)
        elif method == "test/progressThenAnswer":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": "create-1",
                    "method": "window/workDoneProgress/create",
                    "params": {"token": "p"},
                }
            )
            for value in (
                {"kind": "begin", "title": "Indexing", "percentage": 0},
                {"kind": "end", "message": "done"},
            ):
                send({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "p", "value": value}})
            send({"jsonrpc": "2.0", "id": request_id, "result": "indexed"})
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": method}})


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        main()
