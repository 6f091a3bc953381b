"""A sandbox whose root SIGSTOPs every new process cannot stall the daemon: its
own spawns fail with a clear error (stopped before it could start, or busy:
retry), while another team's sandbox and the daemon's API keep answering.
Before, each such spawn held init and a daemon thread for 30 s, and a burst
of them filled the short lane every tenant shares."""
from __future__ import annotations

import asyncio

import pytest
from agent_sandbox import Sandbox, SandboxException

pytestmark = pytest.mark.offline  # the `host` template needs no build

OTHER_TEAM = "sdk-stopped-spawns"
BURST = 16  # twice the daemon's short lane
ROUNDS = 3

# kill(-1) reaches every process but init and the caller; the long PATH of
# missing dirs makes each child try hundreds of execve()s first, so many are
# stopped before their exec.
STOPPER = ("python3 -c 'import os, signal\nprint(\"stopping\", flush=True)\nwhile True:\n"
           "    try: os.kill(-1, signal.SIGSTOP)\n    except OSError: pass'")
MISSING_PATH = ":".join(f"/missing{i}" for i in range(2000)) + ":/usr/bin:/bin"
EXPECTED_REFUSALS = ("stopped before it could start", "busy starting other processes")


@pytest.fixture
def other_team_conn(daemon):
    with daemon.api() as admin:
        made = admin.post("/abx/v1/keys", json={"team": OTHER_TEAM, "name": "stopped spawns"})
        assert made.status_code == 201, made.text
        yield {"api_url": daemon.url, "api_key": made.json()["key"]}
        assert admin.delete(f"/abx/v1/keys/{made.json()['id']}").status_code in (200, 204)


async def spawn_into_stopper(sandbox: Sandbox) -> str:
    """'started', or the refusal's message."""
    try:
        await sandbox.commands.run("true", background=True, envs={"PATH": MISSING_PATH})
        return "started"  # stopped only after its exec: a process like any other
    except SandboxException as e:
        return str(e)


async def test_a_sandbox_stopping_its_new_processes_does_not_stall_others(
        conn, other_team_conn, daemon):
    async with await Sandbox.create(template="host", **conn) as hostile, \
            await Sandbox.create(template="host", **conn) as same_team, \
            await Sandbox.create(template="host", **other_team_conn) as other_team:
        stopper = await hostile.commands.run(STOPPER, background=True, user="root")
        await wait_for_output(stopper, "stopping")
        outcomes = []
        for _ in range(ROUNDS):
            burst = asyncio.gather(*(spawn_into_stopper(hostile) for _ in range(BURST)))
            for neighbour in (same_team, other_team):
                done = await neighbour.commands.run("echo fine")
                assert done.stdout == "fine\n"
            with daemon.api() as api:
                assert api.get("/sandboxes").status_code == 200
            outcomes += await burst
        refusals = [o for o in outcomes if o != "started"]
        assert all(any(r in o for r in EXPECTED_REFUSALS) for o in refusals), refusals
        assert any(EXPECTED_REFUSALS[0] in o for o in refusals), outcomes
        await stopper.kill()
        assert (await hostile.commands.run("echo recovered")).stdout == "recovered\n"


async def wait_for_output(handle, text: str) -> None:
    while text not in handle.stdout:
        await asyncio.sleep(0.05)
