"""Many sandboxes from one event loop."""
from __future__ import annotations

import asyncio

from agent_sandbox import Sandbox


async def test_fifty_sandboxes_at_once(conn):
    async def one(i: int) -> str:
        async with await Sandbox.create(**conn) as sandbox:
            return (await sandbox.commands.run(f"echo {i}")).stdout

    outputs = await asyncio.gather(*(one(i) for i in range(50)))
    assert outputs == [f"{i}\n" for i in range(50)]
    assert await Sandbox.list(**conn) == []
