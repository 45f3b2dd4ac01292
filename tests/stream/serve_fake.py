"""Run a stream server with the test kit's fake plugin in its own process (for RSS measurements).

``serve_fake.py FAKE BAD WORKSPACE HOME MAX_MESSAGE``: prints the server's URL, serves until stdin ends.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


async def main(fake: str, bad: str, workspace: str, home: str, max_message: int) -> None:
    from kandev_lsp.host import PluginHost
    from kandev_lsp.protocol import FrameLimits
    from kandev_lsp.session import BridgeLimits
    from kandev_lsp.stream.auth import StreamToken
    from kandev_lsp.stream.server import StreamConfig, StreamServer
    from kandev_lsp.taskenv import Task, TaskEnvironment
    from stream_testkit import TOKEN, FakePlugin

    host = PluginHost()
    host.register(FakePlugin(fake, bad, None), "fake")
    task = Task(workspace, TaskEnvironment.from_agent({"HOME": home}))
    limits = BridgeLimits(frame=FrameLimits(body=max_message))
    async with StreamServer(
        plugins=host, task=task, token=StreamToken(TOKEN), config=StreamConfig(limits=limits)
    ) as server:
        print(server.url, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
