"""E2B's pause and resume (issue 15), with the unmodified SDK: a paused sandbox is frozen
(nothing in it runs, its envd answers 502 so `is_running()` is False), listed and shown as
paused, and `connect()` resumes it as it was: files, a background process (same pid) and
its env vars. As E2B's tests/sandbox/snapshot.test.ts, test_connect.py, test_sbx_list.py,
test_create.py (auto-pause)."""
from __future__ import annotations

import time

import httpx
import pytest
from e2b import Sandbox, SandboxQuery, SandboxState


def wait_until_paused(sb: Sandbox) -> None:
    """Until its timeout has paused the sandbox (autoPause), at most 10 s."""
    for _ in range(50):
        if Sandbox.get_info(sb.sandbox_id).state == SandboxState.PAUSED:
            break
        time.sleep(0.2)
    assert Sandbox.get_info(sb.sandbox_id).state == SandboxState.PAUSED


def test_pause_freezes_and_connect_resumes_as_it_was(e2b_env):
    sb = Sandbox.create(timeout=120, envs={"TEST_VAR": "sfisback"})
    try:
        sb.files.write("kept.txt", "before the pause")
        counter = sb.commands.run(
            "i=0; while true; do i=$((i+1)); echo $i > /tmp/count; sleep 0.1; done",
            background=True)
        time.sleep(0.5)
        before = int(sb.files.read("/tmp/count"))
        sb.pause()
        paused_at = time.monotonic()
        assert not sb.is_running()
        assert Sandbox.get_info(sb.sandbox_id).state == SandboxState.PAUSED
        refused = httpx.get(f"{e2b_env.url}/files", params={"path": "/tmp/count"},
                            headers={"E2b-Sandbox-Id": sb.sandbox_id,
                                     "E2b-Sandbox-Port": "49983", "X-API-Key": e2b_env.api_key})
        assert refused.status_code == 502 and "paused" in refused.text, refused.text
        paused = Sandbox.list(query=SandboxQuery(state=[SandboxState.PAUSED])).next_items()
        assert sb.sandbox_id in [p.sandbox_id for p in paused]
        running = Sandbox.list(query=SandboxQuery(state=[SandboxState.RUNNING])).next_items()
        assert sb.sandbox_id not in [r.sandbox_id for r in running]
        time.sleep(max(0.0, 3 - (time.monotonic() - paused_at)))
        resumed = Sandbox.connect(sb.sandbox_id, timeout=60)
        assert resumed.sandbox_id == sb.sandbox_id and sb.is_running()
        # Nothing ran while paused: 3 s paused would be ~30 counts running.
        after = int(sb.files.read("/tmp/count"))
        assert before <= after < before + 15
        assert sb.files.read("kept.txt") == "before the pause"
        assert counter.pid in [p.pid for p in sb.commands.list()]
        assert sb.commands.run('echo "$TEST_VAR"').stdout.strip() == "sfisback"
        info = Sandbox.get_info(sb.sandbox_id)
        assert info.state == SandboxState.RUNNING
    finally:
        sb.kill()


def test_pause_twice_and_resume_a_running_sandbox_are_409(e2b_env):
    sb = Sandbox.create(timeout=60)
    api = httpx.Client(base_url=e2b_env.url, headers={"X-API-Key": e2b_env.api_key})
    try:
        assert api.post(f"/sandboxes/{sb.sandbox_id}/resume", json={}).status_code == 409
        assert api.post(f"/sandboxes/{sb.sandbox_id}/pause").status_code == 204
        again = api.post(f"/sandboxes/{sb.sandbox_id}/pause")
        assert again.status_code == 409 and "already paused" in again.text
        net = api.put(f"/sandboxes/{sb.sandbox_id}/network", json={"denyOut": ["0.0.0.0/0"]})
        assert net.status_code == 409 and "paused" in net.text
        resumed = api.post(f"/sandboxes/{sb.sandbox_id}/resume", json={"timeout": 30})
        assert resumed.status_code == 201 and resumed.json()["sandboxID"] == sb.sandbox_id
        assert sb.is_running()
        assert api.post("/sandboxes/nosuchsandbox/pause").status_code == 404
    finally:
        api.close()
        sb.kill()


def test_auto_pause_at_the_timeout_then_connect_wakes_it(e2b_env):
    """As E2B's test_auto_pause_without_auto_resume_requires_connect."""
    sb = Sandbox.create(timeout=2, lifecycle={"on_timeout": "pause", "auto_resume": False})
    try:
        sb.files.write("kept.txt", "x")
        wait_until_paused(sb)
        assert not sb.is_running()
        time.sleep(3)  # paused: no timeout kills it
        sb.connect(timeout=30)
        assert sb.is_running() and sb.files.read("kept.txt") == "x"
    finally:
        sb.kill()


def test_auto_resume_wakes_on_a_request(e2b_env):
    sb = Sandbox.create(timeout=2, lifecycle={"on_timeout": "pause", "auto_resume": True})
    try:
        wait_until_paused(sb)
        assert sb.commands.run("echo awake").stdout == "awake\n"
        assert Sandbox.get_info(sb.sandbox_id).state == SandboxState.RUNNING
    finally:
        sb.kill()


def test_a_paused_sandbox_is_killed_cleanly(e2b_env):
    sb = Sandbox.create(timeout=60)
    sb.commands.run("sleep 600", background=True)
    sb.pause()
    assert sb.kill()
    with pytest.raises(Exception):
        Sandbox.get_info(sb.sandbox_id)


def test_command_deadlines_in_a_paused_sandbox_hold_up_nothing(e2b_env):
    """Commands whose timeout passes while paused: no daemon thread waits on the frozen
    sandbox (creates, kills and the resume still answer), and they are killed once it
    resumes."""
    sb = Sandbox.create(timeout=120)
    api = httpx.Client(base_url=e2b_env.url, headers={"X-API-Key": e2b_env.api_key},
                       timeout=15)
    try:
        handles = [sb.commands.run("sleep 600", background=True, timeout=2) for _ in range(10)]
        sb.pause()
        time.sleep(4)
        other = api.post("/sandboxes", json={"templateID": "base", "timeout": 30})
        assert other.status_code == 201, other.text
        assert api.delete(f"/sandboxes/{other.json()['sandboxID']}").status_code == 204
        assert api.post(f"/sandboxes/{sb.sandbox_id}/connect", json={"timeout": 60}).status_code == 201
        for _ in range(50):
            if not {h.pid for h in handles} & {p.pid for p in sb.commands.list()}:
                break
            time.sleep(0.2)
        assert not {h.pid for h in handles} & {p.pid for p in sb.commands.list()}
    finally:
        api.close()
        sb.kill()


def test_pause_racing_kill_leaves_the_daemon_answering(e2b_env):
    import concurrent.futures as cf

    api = httpx.Client(base_url=e2b_env.url, headers={"X-API-Key": e2b_env.api_key},
                       timeout=30)
    try:
        for _ in range(5):
            sb = Sandbox.create(timeout=60)
            sb.commands.run("sleep 600", background=True)
            with cf.ThreadPoolExecutor(2) as pool:
                pause = pool.submit(api.post, f"/sandboxes/{sb.sandbox_id}/pause")
                kill = pool.submit(api.delete, f"/sandboxes/{sb.sandbox_id}")
                assert kill.result().status_code == 204
                assert pause.result().status_code in (204, 404, 409)
            assert api.get(f"/sandboxes/{sb.sandbox_id}").status_code == 404
        assert httpx.get(f"{e2b_env.url}/health").status_code == 204
    finally:
        api.close()


def test_auto_resume_within_a_teams_shorter_max_timeout(e2b_env, monkeypatch):
    """Auto-resume gives 300 s, or the team's longest timeout when that is shorter (a team
    limited to 60 s would otherwise never wake)."""
    team = "short-lived"
    with e2b_env.api() as admin:
        made = admin.post("/abx/v1/keys", json={"team": team, "name": "auto-resume test"})
        assert made.status_code == 201, made.text
        assert admin.put(f"/abx/v1/teams/{team}/quota",
                         json={"maxTimeoutSec": 60}).status_code == 200
    monkeypatch.setenv("E2B_API_KEY", made.json()["key"])
    try:
        sb = Sandbox.create(timeout=2, lifecycle={"on_timeout": "pause", "auto_resume": True})
        try:
            wait_until_paused(sb)
            assert sb.commands.run("echo awake").stdout == "awake\n"
            info = Sandbox.get_info(sb.sandbox_id)
            assert info.state == SandboxState.RUNNING
            assert info.end_at.timestamp() - time.time() <= 60
        finally:
            sb.kill()
    finally:
        with e2b_env.api() as admin:
            admin.put(f"/abx/v1/teams/{team}/quota", json={"maxTimeoutSec": 0})
            admin.delete(f"/abx/v1/keys/{made.json()['id']}")
