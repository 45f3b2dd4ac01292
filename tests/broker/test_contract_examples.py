"""The examples of docs/broker-contract.md run as written, against the shipped ``kandev-lsp broker``.

Where to mint a page ticket was left to the embedder to guess (a user trial's finding): the contract now
says it is the listening line's ``url`` with ``http://`` for ``ws://``, plus ``/lsp/tickets``, and shows
the whole backend call. Its ``mint_ticket`` is taken out of the document and run, so the document cannot
drift from the broker: the ticket it returns lets a page of the named origin through (the session is not
in the directory: close 4002 after the upgrade, a ticket refused would be 4401).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import cast

from routekit import closed_with
from test_cli_broker import _environ, _start, _stop
from websockets.asyncio.client import connect

CONTRACT = Path(__file__).resolve().parents[2] / "docs" / "broker-contract.md"
PAGE = "https://app.example"

MintTicket = Callable[[str, str, str, str, str], str]


def contract_mint_ticket() -> MintTicket:
    """The contract's ``mint_ticket``, from its Python block."""
    [source] = re.findall(r"```python\n(.*?def mint_ticket\(.*?)```", CONTRACT.read_text(), re.DOTALL)
    namespace: dict[str, object] = {}
    exec(compile(source, str(CONTRACT), "exec"), namespace)  # the document's own code, as written
    return cast(MintTicket, namespace["mint_ticket"])


def test_the_contracts_mint_ticket_call_works_against_the_listening_lines_url(tmp_path: Path) -> None:
    mint_ticket = contract_mint_ticket()
    directory = tmp_path / "directory.json"
    directory.write_text('{"sessions": {}, "executions": {}}')

    async def scenario() -> None:
        broker, line = await _start(
            "broker", "--directory", str(directory), "--allow-origin", PAGE, environ=_environ()
        )
        try:
            ticket = await asyncio.to_thread(mint_ticket, line["url"], line["token"], "S", "python", PAGE)
            async with connect(
                f"{line['url']}/lsp/S?language=python",
                subprotocols=["kandev-lsp.v1", f"kandev-lsp.ticket.{ticket}"],  # type: ignore[list-item]
                origin=PAGE,  # type: ignore[arg-type]
            ) as ws:
                assert ws.subprotocol == "kandev-lsp.v1"
                assert await closed_with(ws) == (4002, "session unavailable")  # let through
        finally:
            status = await _stop(broker)
        assert status == 0

    asyncio.run(scenario())
