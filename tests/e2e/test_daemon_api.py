"""The control plane as E2B's SDKs see it, and the daemon's guarantees:
TTL enforcement, restart survival, and cleanup that leaves nothing behind."""
from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from harness import SHARED_TEMPLATES, start_daemon, stop_daemon
from helpers import cgroup_dirs, cgroup_instance_name, sandbox_host_pids, veth_prefix, wait_until


def create(api: httpx.Client, **body) -> dict:
    r = api.post("/sandboxes", json={"templateID": "base", **body})
    assert r.status_code == 201, r.text
    return r.json()


def run(daemon, sandbox: dict, cmd: str, user: str | None = None, timeout_ms: int = 30000):
    """process.Process/Start over the Connect protocol; returns (stdout, stderr, end event)."""
    headers = {
        "E2b-Sandbox-Id": sandbox["sandboxID"], "E2b-Sandbox-Port": "49983",
        "Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
        "Connect-Timeout-Ms": str(timeout_ms),
    }
    if sandbox.get("envdAccessToken"):
        headers["X-Access-Token"] = sandbox["envdAccessToken"]
    if user:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:".encode()).decode()
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", cmd]}}).encode()
    body = struct.pack(">BI", 0, len(msg)) + msg
    r = httpx.post(daemon.url + "/process.Process/Start", content=body, headers=headers, timeout=60)
    assert r.status_code == 200, r.text
    data, frames = r.content, []
    while data:
        flags, n = struct.unpack(">BI", data[:5])
        frames.append((flags, json.loads(data[5:5 + n])))
        data = data[5 + n:]
    assert "start" in frames[0][1]["event"], "the first event must be start"
    out, err, end = b"", b"", None
    for flags, msg in frames:
        ev = msg.get("event", {})
        if "data" in ev:
            out += base64.b64decode(ev["data"].get("stdout", ""))
            err += base64.b64decode(ev["data"].get("stderr", ""))
        if "end" in ev:
            end = ev["end"]
    assert frames[-1][0] & 2, "the stream must close with an end-of-stream frame"
    return out.decode(), err.decode(), end


def leftovers(data_dir: Path) -> dict[str, object]:
    """What this daemon's sandboxes hold on the host: state dirs, cgroup dirs,
    mounts and network devices. Counts, not ids: the runtime's warm pool
    replaces the sandboxes it hands out with new ones."""
    ids = {p.name for p in (data_dir / "sandboxes").glob("*")}
    # Only what this daemon could have made: other tests' and builds' mounts and links on
    # the same host come and go meanwhile.
    mounts = [line for line in Path("/proc/mounts").read_text().splitlines()
              if str(data_dir) in line or str(SHARED_TEMPLATES) in line]
    prefix = veth_prefix(data_dir / "sandboxes") or "\0"  # its sandboxes' veths
    return {
        "mounts": len(mounts),
        "links": sum(1 for name in os.listdir("/sys/class/net") if name.startswith(prefix)),
        "sandbox_dirs": len(ids),
        "cgroups": sum(1 for p in cgroup_dirs() if p.name in ids),
    }


@pytest.mark.offline
def test_health_needs_no_key(daemon):
    assert httpx.get(daemon.url + "/health").status_code == 204


@pytest.mark.offline
def test_requests_without_a_valid_key_get_401(daemon):
    for headers in ({}, {"X-API-KEY": "e2b_" + "1" * 40}):
        r = httpx.get(daemon.url + "/v2/sandboxes", headers=headers)
        assert r.status_code == 401
        assert r.json()["code"] == 401 and r.json()["message"]


def test_create_returns_the_fields_the_sdks_require(daemon):
    with daemon.api() as api:
        sb = create(api, timeout=60, metadata={"k": "v"}, secure=True)
        try:
            for field in ("templateID", "sandboxID", "clientID", "envdVersion", "envdAccessToken"):
                assert sb.get(field), field
            assert sb["sandboxID"].isalnum() and sb["sandboxID"].islower()
            detail = api.get(f"/sandboxes/{sb['sandboxID']}").json()
            for field in ("startedAt", "endAt", "cpuCount", "memoryMB", "diskSizeMB", "state"):
                assert field in detail, field
            assert detail["state"] == "running" and detail["metadata"] == {"k": "v"}
        finally:
            assert api.delete(f"/sandboxes/{sb['sandboxID']}").status_code == 204


@pytest.mark.offline
def test_bad_input_gets_400_naming_the_field(daemon):
    with daemon.api() as api:
        r = api.post("/sandboxes", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 400
        r = api.post("/sandboxes", json={"templateID": "base", "timeout": "soon"})
        assert r.status_code == 400 and "timeout" in r.json()["message"]
        r = api.post("/sandboxes", json={"timeout": 10})
        assert r.status_code == 400 and "templateID" in r.json()["message"]
        r = api.post("/sandboxes", json={"templateID": "no-such-template"})
        assert r.status_code == 400 and "no-such-template" in r.json()["message"]


@pytest.mark.offline
def test_unknown_sandbox_gets_404_and_502(daemon):
    with daemon.api() as api:
        r = api.get("/sandboxes/izzzzzzzzzzzzzzzzzzzz")
        assert r.status_code == 404 and "izzzzzzzzzzzzzzzzzzzz" in r.json()["message"]
        assert api.delete("/sandboxes/izzzzzzzzzzzzzzzzzzzz").status_code == 404
    r = httpx.get(daemon.url + "/health", headers={"E2b-Sandbox-Id": "izzzzzzzzzzzzzzzzzzzz",
                                                   "E2b-Sandbox-Port": "49983"})
    assert r.status_code == 502


def test_commands_stream_and_report_exit_codes(daemon):
    with daemon.api() as api:
        sb = create(api)
        try:
            out, err, end = run(daemon, sb, "echo hi; echo oops >&2; exit 7")
            assert (out, err) == ("hi\n", "oops\n")
            assert end["exitCode"] == 7
            out, _, end = run(daemon, sb, "id -u", user="root")
            assert out == "0\n" and end.get("exitCode", 0) == 0
        finally:
            api.delete(f"/sandboxes/{sb['sandboxID']}")


def test_set_timeout_moves_the_end_time(daemon):
    with daemon.api() as api:
        sb = create(api, timeout=30)
        try:
            before = api.get(f"/sandboxes/{sb['sandboxID']}").json()["endAt"]
            assert api.post(f"/sandboxes/{sb['sandboxID']}/timeout",
                            json={"timeout": 600}).status_code == 204
            after = api.get(f"/sandboxes/{sb['sandboxID']}").json()["endAt"]
            assert after > before
        finally:
            api.delete(f"/sandboxes/{sb['sandboxID']}")


def test_end_time_is_enforced_and_cleans_up(daemon):
    with daemon.api() as api:
        sb = create(api, timeout=1)
        sandbox_id = sb["sandboxID"]
        assert sandbox_host_pids(sandbox_id)
        wait_until(lambda: api.get(f"/sandboxes/{sandbox_id}").status_code == 404, timeout=15,
                   what="the daemon to remove the sandbox at its end time")
    # The API forgets the sandbox first; its processes, network and state go right after.
    wait_until(lambda: sandbox_host_pids(sandbox_id) == [], timeout=15,
               what="the sandbox's processes to end")
    wait_until(lambda: not (daemon.data_dir / "sandboxes" / sandbox_id).exists(), timeout=15,
               what="the sandbox's state dir to go")


def settled_leftovers(data_dir: Path) -> dict[str, object]:
    """leftovers() once the runtime's warm pool has finished refilling."""
    previous = leftovers(data_dir)
    for _ in range(50):
        time.sleep(0.2)
        current = leftovers(data_dir)
        if current == previous:
            return current
        previous = current
    return previous


def test_kill_leaves_no_mount_cgroup_netdev_or_process(daemon):
    with daemon.api() as api:  # fill the warm pool first: its sandboxes are steady state
        api.delete(f"/sandboxes/{create(api)['sandboxID']}")
    before = settled_leftovers(daemon.data_dir)
    with daemon.api() as api:
        ids = [create(api)["sandboxID"] for _ in range(3)]
        during = settled_leftovers(daemon.data_dir)  # the pool refilled what it handed out
        assert during["sandbox_dirs"] >= before["sandbox_dirs"] + 3
        for sandbox_id in ids:
            assert api.delete(f"/sandboxes/{sandbox_id}").status_code == 204
    assert settled_leftovers(daemon.data_dir) == before
    for sandbox_id in ids:
        assert sandbox_host_pids(sandbox_id) == []
        assert not [p for p in cgroup_dirs() if p.name == sandbox_id]
        assert not (daemon.data_dir / "sandboxes" / sandbox_id).exists()


def test_sandboxes_survive_a_daemon_killed_with_sigkill(state_dir):
    d = start_daemon(state_dir / "state")
    try:
        with d.api() as api:
            keep = create(api, timeout=300)
            expire = create(api, timeout=2)
        d.proc.kill()  # SIGKILL to the daemon alone, as a crash would
        d.proc.wait()
        time.sleep(3)  # `expire` passes its end time while no daemon runs
        d = start_daemon(state_dir / "state")
        with d.api() as api:
            assert api.get(f"/sandboxes/{keep['sandboxID']}").status_code == 200
            out, _, _ = run(d, keep, "echo still here")
            assert out == "still here\n"
            assert api.get(f"/sandboxes/{expire['sandboxID']}").status_code == 404
        assert sandbox_host_pids(expire["sandboxID"]) == []
    finally:
        stop_daemon(d)
    assert sandbox_host_pids(keep["sandboxID"]) == []


def test_a_paused_sandbox_stays_paused_through_a_daemon_crash(state_dir):
    d = start_daemon(state_dir / "state")
    try:
        with d.api() as api:
            paused = create(api, timeout=2)
            run(d, paused, "echo kept > /tmp/kept")
            assert api.post(f"/sandboxes/{paused['sandboxID']}/pause").status_code == 204
        d.proc.kill()  # SIGKILL to the daemon alone, as a crash would
        d.proc.wait()
        time.sleep(3)  # past its old end time: a paused sandbox has none
        d = start_daemon(state_dir / "state")
        with d.api() as api:
            info = api.get(f"/sandboxes/{paused['sandboxID']}")
            assert info.status_code == 200 and info.json()["state"] == "paused", info.text
            assert sandbox_host_pids(paused["sandboxID"])  # frozen, not gone
            resumed = api.post(f"/sandboxes/{paused['sandboxID']}/connect", json={"timeout": 60})
            assert resumed.status_code == 201, resumed.text
            out, _, _ = run(d, paused, "cat /tmp/kept")
            assert out == "kept\n"
    finally:
        stop_daemon(d)
    assert sandbox_host_pids(paused["sandboxID"]) == []


def test_fifty_sandboxes_at_once(daemon):
    import concurrent.futures as cf
    with daemon.api() as api, cf.ThreadPoolExecutor(16) as pool:
        sandboxes = list(pool.map(lambda _: create(api), range(50)))
        outputs = list(pool.map(lambda sb: run(daemon, sb, "echo $((6*7))")[0], sandboxes))
        assert outputs == ["42\n"] * 50
        codes = list(pool.map(lambda sb: api.delete(f"/sandboxes/{sb['sandboxID']}").status_code,
                              sandboxes))
        assert codes == [204] * 50


def cpu_weight(data_dir: Path, sandbox_id: str) -> str:
    """The sandbox's CPU weight as its cgroup says (v1 cpu.shares, v2 cpu.weight)."""
    instance = cgroup_instance_name(data_dir / "sandboxes")
    for path in (Path("/sys/fs/cgroup/cpu/abx") / instance / sandbox_id / "cpu.shares",
                 Path("/sys/fs/cgroup/abx") / instance / sandbox_id / "cpu.weight"):
        if path.exists():
            return path.read_text().strip()
    pytest.skip("no cpu controller: sandboxes have no CPU weight here")


def test_the_warm_pool_waits_at_a_low_cpu_weight_and_hands_out_the_default(state_dir):
    """A refill (an interpreter starting in a pooled sandbox) must not slow the sandboxes
    callers use; a sandbox taken from the pool is an ordinary one again. A daemon of its
    own: every sandbox dir it has that the API does not list is a pooled one."""
    d = start_daemon(state_dir)
    sandboxes = d.data_dir / "sandboxes"
    try:
        with d.api() as api:
            create(api)  # the spec enters the pool on its first create
            listed = lambda: {s["sandboxID"] for s in api.get("/sandboxes").json()}  # noqa: E731
            def settled_pool() -> set[str]:
                seen = {p.name for p in sandboxes.iterdir() if p.is_dir()} - listed()
                time.sleep(0.3)  # none being made: the same twice, each with its cgroup
                again = {p.name for p in sandboxes.iterdir() if p.is_dir()} - listed()
                return seen if seen == again else set()
            pooled = wait_until(settled_pool, what="the warm pool to refill")
            assert {cpu_weight(d.data_dir, i) for i in pooled} <= {"102", "10"}, pooled
            taken = create(api)["sandboxID"]
            assert taken in pooled  # the pool's
            assert cpu_weight(d.data_dir, taken) in {"1024", "100"}
    finally:
        stop_daemon(d)
