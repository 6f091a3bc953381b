"""Many sandboxes from one event loop."""
from __future__ import annotations

import asyncio
from typing import Tuple

from agent_sandbox import Sandbox


async def test_fifty_sandboxes_at_once(conn):
    async def one(i: int) -> Tuple[str, str]:
        async with await Sandbox.create(**conn) as sandbox:
            return sandbox.sandbox_id, (await sandbox.commands.run(f"echo {i}")).stdout

    results = await asyncio.gather(*(one(i) for i in range(50)))
    assert [stdout for _, stdout in results] == [f"{i}\n" for i in range(50)]
    ids = {sandbox_id for sandbox_id, _ in results}
    assert len(ids) == 50
    assert not ids & {s.sandbox_id for s in await Sandbox.list(**conn)}
