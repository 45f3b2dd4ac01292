"""The stream route with a fake echo server: status frames, message pass-through, what the session adds
(initializationOptions, workspace/configuration answers, live settings), and the hand-off rule."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from stream_testkit import LspPeer, StreamKit, tagged_alive
from websockets.exceptions import ConnectionClosed


async def _ready(ws: Any) -> dict[str, Any]:
    frame = json.loads(await ws.recv())
    assert frame["status"] == "ready", frame
    return frame


def _initialize(number: int = 1, **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": number,
        "method": "initialize",
        "params": {"processId": None, "rootUri": None, "capabilities": {}, **params},
    }


def test_ready_frame_then_messages_pass_through_unchanged(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve() as server, kit.connect(server, "fake-echo") as ws:
            ready = await _ready(ws)
            assert ready["workspacePath"] == str(kit.workspace)
            assert ready["workspaceUri"] == "file://" + str(kit.workspace)
            body = (
                '{"jsonrpc":"2.0","id":7,"method":"custom/thing","params":{"text":"h\\u00e9 \\ud83d\\ude00"}}'
            )
            await ws.send(body)
            assert await ws.recv() == body  # byte for byte: nothing parsed or re-encoded on the way
            await ws.send(b'{"jsonrpc":"2.0","method":"binary/frame"}')  # binary messages are accepted
            assert await ws.recv() == '{"jsonrpc":"2.0","method":"binary/frame"}'

    asyncio.run(scenario())


def test_initialize_gets_plugin_options_and_configuration_support(kit: StreamKit) -> None:
    async def scenario() -> None:
        plugins = kit.plugins()
        settings = kit.settings(plugins, {"lsp_server_configs": {"fake-echo": {"kept": "user"}}})
        async with kit.serve(plugins, settings=settings) as server, kit.connect(server, "fake-echo") as ws:
            await _ready(ws)
            await ws.send(json.dumps(_initialize()))
            answer = json.loads(await ws.recv())
            received = answer["result"]["received"]
            # The plugin's hook saw the merged settings (the user's value over the default).
            assert received["initializationOptions"] == {"fromPlugin": True, "kept": "user"}
            assert received["capabilities"]["workspace"]["configuration"] is True

    asyncio.run(scenario())


def test_client_initialization_options_and_capabilities_are_kept(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve() as server, kit.connect(server, "fake-echo") as ws:
            await _ready(ws)
            message = _initialize(
                initializationOptions={"mine": 1}, capabilities={"workspace": {"configuration": False}}
            )
            await ws.send(json.dumps(message))
            received = json.loads(await ws.recv())["result"]["received"]
            assert received["initializationOptions"] == {"mine": 1}
            assert received["capabilities"] == {"workspace": {"configuration": False}}

    asyncio.run(scenario())


def test_workspace_configuration_is_answered_by_the_bridge_and_not_forwarded(kit: StreamKit) -> None:
    async def scenario() -> None:
        plugins = kit.plugins()
        settings = kit.settings(
            plugins, {"lsp_server_configs": {"fake-echo": {"kept": "user", "nested": {"level": 2}}}}
        )
        async with kit.serve(plugins, settings=settings) as server, kit.connect(server, "fake-echo") as ws:
            await _ready(ws)
            items = [
                {"section": "fake-echo"},
                {"section": "fake-echo.nested.level"},
                {"section": "fake.flag"},
                {"section": "fake-echo.missing"},
                {},
            ]
            await ws.send(
                json.dumps({"jsonrpc": "2.0", "method": "test/askConfiguration", "params": {"items": items}})
            )
            # The fake sends workspace/configuration; the bridge answers it; the fake echoes the answer.
            answer = json.loads(await ws.recv())
            assert answer["id"] == "cfg-1"
            whole = {"fake.flag": True, "nested": {"level": 2}, "kept": "user"}
            assert answer["result"] == [whole, 2, True, None, whole]
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "test/askConfiguration", "params": {}}))
            assert json.loads(await ws.recv())["result"] == [whole]

    asyncio.run(scenario())


def test_settings_change_reaches_an_initialized_server(kit: StreamKit) -> None:
    async def scenario() -> None:
        plugins = kit.plugins()
        settings = kit.settings(plugins, {"lsp_server_configs": {"fake-echo": {"kept": "first"}}})
        limits = kit_limits(settings_poll_interval=0.05)
        async with (
            kit.serve(plugins, settings=settings, limits=limits) as server,
            kit.connect(server, "fake-echo") as ws,
        ):
            await _ready(ws)
            peer = LspPeer.over_websocket(ws)
            await peer.request("initialize", _initialize()["params"])
            await peer.notify("initialized", {})
            assert (await peer.wait_notification("initialized"))["method"] == "initialized"
            kit.write_settings({"lsp_server_configs": {"fake-echo": {"kept": "second"}}})
            changed = await peer.wait_notification("workspace/didChangeConfiguration", timeout=5)
            assert changed["params"] == {
                "settings": {"fake.flag": True, "nested": {"level": 1}, "kept": "second"}
            }
            # A change to another language's settings sends nothing.
            kit.write_settings(
                {"lsp_server_configs": {"fake-echo": {"kept": "second"}, "fake-mute": {"x": 1}}}
            )
            await asyncio.sleep(0.3)
            await ws.send('{"jsonrpc":"2.0","method":"marker"}')
            assert json.loads(await ws.recv())["method"] == "marker"

    asyncio.run(scenario())


def kit_limits(**changes: Any) -> Any:
    from kandev_lsp.session import BridgeLimits

    return BridgeLimits(**changes)


def test_settings_change_before_initialized_is_not_sent(kit: StreamKit) -> None:
    async def scenario() -> None:
        plugins = kit.plugins()
        settings = kit.settings(plugins, {"lsp_server_configs": {"fake-echo": {"kept": "first"}}})
        limits = kit_limits(settings_poll_interval=0.05)
        async with (
            kit.serve(plugins, settings=settings, limits=limits) as server,
            kit.connect(server, "fake-echo") as ws,
        ):
            await _ready(ws)
            kit.write_settings({"lsp_server_configs": {"fake-echo": {"kept": "second"}}})
            await asyncio.sleep(0.3)
            await ws.send('{"jsonrpc":"2.0","method":"marker"}')
            # Nothing came before the marker: the server was not initialized yet.
            assert json.loads(await ws.recv())["method"] == "marker"
            # But the server's next configuration request gets the new value.
            await ws.send(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "method": "test/askConfiguration",
                        "params": {"items": [{"section": "fake-echo.kept"}]},
                    }
                )
            )
            assert json.loads(await ws.recv())["result"] == ["second"]

    asyncio.run(scenario())


def test_client_close_stops_the_server(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve() as server:
            async with kit.connect(server, "fake-echo") as ws:
                await _ready(ws)
                assert tagged_alive(kit.tag)
            for _ in range(100):
                if not tagged_alive(kit.tag):
                    break
                await asyncio.sleep(0.05)
            assert not tagged_alive(kit.tag)

    asyncio.run(scenario())


def test_messages_sent_before_ready_are_delivered_after_it(kit: StreamKit) -> None:
    async def scenario() -> None:
        async with kit.serve() as server, kit.connect(server, "fake-echo") as ws:
            for number in range(5):
                await ws.send(json.dumps({"jsonrpc": "2.0", "method": "early", "params": number}))
            await _ready(ws)
            echoed = [json.loads(await ws.recv())["params"] for _ in range(5)]
            assert echoed == [0, 1, 2, 3, 4]

    asyncio.run(scenario())


def test_serve_shutdown_closes_connections_with_1001(kit: StreamKit) -> None:
    async def scenario() -> None:
        server_cm = kit.serve()
        server = await server_cm.__aenter__()
        ws = await kit.connect(server, "fake-echo").__aenter__()
        await _ready(ws)
        await server_cm.__aexit__(None, None, None)
        try:
            await ws.recv()
        except ConnectionClosed as exc:
            assert exc.rcvd is not None and exc.rcvd.code == 1001
        else:
            raise AssertionError("the connection stayed open")
        assert not tagged_alive(kit.tag)
        await ws.close()

    asyncio.run(scenario())


def test_a_control_frame_serve_does_not_act_on_is_answered_not_passed_to_the_server(kit: StreamKit) -> None:
    """An unknown control, a settings request over 256 KiB or a stop frame over 1 KiB was traffic: serve
    passed it to the language server, and gopls exits on an object that is not JSON-RPC (tried: a
    300 KiB settings request after initialize, then 4006 'server stopped'). It is answered with an error
    ack now; the server never sees it and the connection carries on. The echoing fake server is the
    oracle: whatever reaches it comes back."""
    frames = {
        '{"control":"bogus","id":1}': {"ack": "bogus", "ok": False, "error": "unknown_control"},
        json.dumps({"control": "settings", "settings": {"big": "x" * (300 * 1024)}}): {
            "ack": "settings",
            "ok": False,
            "error": "too_large",
        },
        '{"control":"settings","settings":[1]}': {"ack": "settings", "ok": False, "error": "bad_request"},
        json.dumps({"control": "stop", "id": "i" * 2048}): {
            "ack": "stop",
            "ok": False,
            "error": "bad_request",
        },
        '{"control":7}': {"ack": "?", "ok": False, "error": "unknown_control"},
    }

    async def scenario() -> None:
        async with kit.serve(kit.plugins()) as server, kit.connect(server, "fake-echo") as ws:
            await _ready(ws)
            for body, answer in frames.items():
                await ws.send(body)
                assert json.loads(await ws.recv()) == answer  # not the echo of the frame
            await ws.send('{"jsonrpc":"2.0","method":"marker"}')
            assert json.loads(await ws.recv())["method"] == "marker"  # the first thing the server echoed

    asyncio.run(scenario())


def test_a_control_frame_nested_past_the_parsers_depth_is_traffic_not_a_crash(
    kit: StreamKit, caplog: pytest.LogCaptureFixture
) -> None:
    """serve parses a message that starts with ``{"control"`` (at most 256 KiB) to see whether it is its
    settings or stop request. One nested 5 000 deep (10 KB) made ``json.loads`` raise RecursionError, not
    ValueError: the connection's handler died with a traceback ("connection handler failed"), the client
    got 1011 and no connection_close line was logged. A client of serve (a page behind the broker's
    proxy mode, whose frames pass byte for byte) could send it. It is traffic now, like any message that
    is not a control frame, and the connection carries on."""

    async def scenario() -> None:
        plugins = kit.plugins()
        async with kit.serve(plugins) as server, kit.connect(server, "fake-echo") as ws:
            await _ready(ws)
            deep = '{"control":"settings","settings":' + "[" * 5000 + "]" * 5000 + "}"
            await ws.send(deep)
            assert await ws.recv() == deep  # passed to the server, which echoes it
            await ws.send('{"jsonrpc":"2.0","method":"marker"}')
            assert json.loads(await ws.recv())["method"] == "marker"

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
