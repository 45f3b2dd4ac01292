"""An editor's own server settings through ``kandev-lsp run`` (issue 7, item 18): when the client
advertises ``workspace.configuration``, the server's configuration requests go to it too and its answer
is merged over kandev-lsp's per-language settings."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from kandev_lsp.session import BridgeLimits, ServerSession, merge_configuration_answers
from kandev_lsp.stream.bridge import bridge
from stream_testkit import LspPeer, RealServers, StreamKit, tagged_alive


@pytest.mark.parametrize(
    ("ours", "client", "merged"),
    [
        # objects: shallow merge, the client's keys win
        ([{"a": 1, "b": {"x": 1}}], [{"b": {"y": 2}, "c": 3}], [{"a": 1, "b": {"y": 2}, "c": 3}]),
        # null from the client keeps ours; a scalar or list from the client replaces ours
        (["ours", None, {"k": 1}], [None, "theirs", [1, 2]], ["ours", "theirs", [1, 2]]),
        # the client has an object where we have nothing
        ([None], [{"typeCheckingMode": "strict"}], [{"typeCheckingMode": "strict"}]),
        # a result that is not a list of the same length is ignored
        ([1, 2], [3], [1, 2]),
        ([1], None, [1]),
        ([1], {"0": 2}, [1]),
    ],
)
def test_merge_configuration_answers(ours: list[Any], client: Any, merged: list[Any]) -> None:
    assert merge_configuration_answers(ours, client) == merged


class MemoryChannel:
    """A client in this process: the test puts message bodies in and reads the server's out."""

    def __init__(self) -> None:
        self.inbound: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.outbound: asyncio.Queue[bytes] = asyncio.Queue()

    async def messages(self) -> AsyncGenerator[bytes, None]:
        while (body := await self.inbound.get()) is not None:
            yield body

    async def send(self, body: bytes) -> None:
        await self.outbound.put(body)

    def put(self, message: dict[str, Any]) -> None:
        self.inbound.put_nowait(json.dumps(message).encode())

    async def get(self) -> dict[str, Any]:
        async with asyncio.timeout(10):
            message: dict[str, Any] = json.loads(await self.outbound.get())
        return message


ITEMS = [
    {"section": "fake-echo"},
    {"section": "fake-echo.kept"},
    {"section": "fake-echo.nested"},
    {"section": "other.section"},
]
OURS = [{"fake.flag": True, "nested": {"level": 1}, "kept": "default"}, "default", {"level": 1}, None]


async def _session_with(
    kit: StreamKit, *, advertise: bool, limits: BridgeLimits | None = None
) -> tuple[ServerSession, MemoryChannel, asyncio.Task[Any]]:
    plugins = kit.plugins()
    session = await ServerSession.start(
        [kit.fake, "echo"],
        kit.task(),
        language=plugins.language("fake-echo"),
        plugins=plugins,
        limits=limits or BridgeLimits(),
        ask_client_configuration=True,
    )
    channel = MemoryChannel()
    running = asyncio.ensure_future(bridge(session, channel))
    capabilities = {"workspace": {"configuration": True}} if advertise else {}
    channel.put({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": capabilities}})
    assert (await channel.get())["id"] == 1
    channel.put({"jsonrpc": "2.0", "method": "test/askConfiguration", "params": {"items": ITEMS}})
    return session, channel, running


async def _finish(session: ServerSession, channel: MemoryChannel, running: asyncio.Task[Any]) -> None:
    channel.inbound.put_nowait(None)
    await running
    await session.aclose()


def test_the_clients_answer_is_merged_over_ours(kit: StreamKit) -> None:
    async def scenario() -> None:
        session, channel, running = await _session_with(kit, advertise=True)
        try:
            asked = await channel.get()  # the server's request, under an id of the session's
            assert asked["method"] == "workspace/configuration"
            assert asked["params"] == {"items": ITEMS}
            assert str(asked["id"]).startswith("kandev-lsp-cfg-")
            editor = [{"kept": "editor", "new": 1}, None, {"extra": 2}, "x"]
            channel.put({"jsonrpc": "2.0", "id": asked["id"], "result": editor})
            # The echo server writes back what it received: the merged answer, under its own id.
            answered = await channel.get()
            assert answered == {
                "jsonrpc": "2.0",
                "id": "cfg-1",
                "result": [
                    {"fake.flag": True, "nested": {"level": 1}, "kept": "editor", "new": 1},
                    "default",
                    {"level": 1, "extra": 2},
                    "x",
                ],
            }
        finally:
            await _finish(session, channel, running)
        assert not tagged_alive(kit.tag)

    asyncio.run(scenario())


def test_an_error_from_the_client_gives_the_server_our_answer(kit: StreamKit) -> None:
    async def scenario() -> None:
        session, channel, running = await _session_with(kit, advertise=True)
        try:
            asked = await channel.get()
            channel.put({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -32601, "message": "no"}})
            assert (await channel.get())["result"] == OURS
        finally:
            await _finish(session, channel, running)

    asyncio.run(scenario())


def test_a_client_that_does_not_answer_in_time_leaves_our_answer(kit: StreamKit) -> None:
    async def scenario() -> None:
        limits = BridgeLimits(client_configuration_timeout=0.3)
        session, channel, running = await _session_with(kit, advertise=True, limits=limits)
        try:
            asked = await channel.get()
            answered = await channel.get()  # nothing sent by the client: the session answered
            assert (answered["id"], answered["result"]) == ("cfg-1", OURS)
            channel.put({"jsonrpc": "2.0", "id": asked["id"], "result": ["late", None, None, None]})
            channel.put({"jsonrpc": "2.0", "method": "after"})
            # The late answer is passed on as it is (the server ignores an unknown id), not merged again.
            assert (await channel.get())["id"] == asked["id"]
            assert (await channel.get())["method"] == "after"
        finally:
            await _finish(session, channel, running)

    asyncio.run(scenario())


def test_a_client_without_configuration_support_is_not_asked(kit: StreamKit) -> None:
    async def scenario() -> None:
        session, channel, running = await _session_with(kit, advertise=False)
        try:
            answered = await channel.get()
            assert (answered["id"], answered["result"]) == ("cfg-1", OURS)
        finally:
            await _finish(session, channel, running)

    asyncio.run(scenario())


# With real pyright through `kandev-lsp run` --------------------------------------------------------------
STRICT_ONLY = "def double(value):\n    return value * 2\n"


#: An editor's settings for the server, as Neovim's ``settings`` table or eglot's
#: ``eglot-workspace-configuration`` hold them: a request's section is a dotted path into it.
EDITOR_SETTINGS: dict[str, Any] = {"python": {"analysis": {"typeCheckingMode": "strict"}}}


def _editor_setting(section: Any) -> Any:
    node: Any = EDITOR_SETTINGS
    for part in str(section or "").split("."):
        if not isinstance(node, dict) or part not in node:
            return None  # what editors answer for a section they have nothing for
        node = node[part]
    return node


@pytest.mark.real_server
@pytest.mark.network_registry
def test_an_editors_pyright_settings_apply_through_run(kit: StreamKit, real_servers: RealServers) -> None:
    """The editor (as Neovim or eglot do from their config) answers pyright's ``python`` section with
    ``analysis.typeCheckingMode: strict``: pyright then reports the missing annotation, which it does
    not in its default mode. Before, the bridge answered alone and the editor's setting had no effect."""
    from test_real_servers import _run_command

    async def scenario() -> None:
        source = kit.workspace / "strict.py"
        source.write_text(STRICT_ONLY, encoding="utf-8")
        uri = source.as_uri()
        process = await _run_command(kit, real_servers, "python")
        peer = LspPeer.over_stdio(process)
        asked_sections: list[Any] = []

        def answer(request: dict[str, Any]) -> Any:
            if request["method"] != "workspace/configuration":
                return None
            items = request["params"]["items"]
            asked_sections.extend(item.get("section") for item in items)
            return [_editor_setting(item.get("section")) for item in items]

        peer.answer = answer
        try:
            root = kit.workspace.as_uri()
            await peer.request(
                "initialize",
                {
                    "processId": None,
                    "rootUri": root,
                    "workspaceFolders": [{"uri": root, "name": "workspace"}],
                    "capabilities": {"workspace": {"configuration": True}},
                },
                timeout=60,
            )
            await peer.notify("initialized", {})
            await peer.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": STRICT_ONLY}},
            )
            messages: list[str] = []
            async with asyncio.timeout(45):
                while not any("value" in text and "annotation" in text.lower() for text in messages):
                    published = await peer.wait_notification("textDocument/publishDiagnostics", timeout=45)
                    if published["params"]["uri"] == uri:
                        messages = [d["message"] for d in published["params"]["diagnostics"]]
            assert "python" in asked_sections
            await peer.request("shutdown", timeout=20)
            await peer.notify("exit")
            assert process.stdin is not None
            process.stdin.close()
            async with asyncio.timeout(20):
                await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert not tagged_alive(kit.tag)

    asyncio.run(scenario())
