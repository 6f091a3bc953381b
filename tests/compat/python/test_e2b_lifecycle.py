"""e2b lifecycle calls: create, list (filters, pagination), get_info, set_timeout,
connect, kill, is_running, get_metrics."""
from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from e2b import Sandbox, SandboxQuery, SandboxState
from e2b.exceptions import NotFoundException, SandboxException
from helpers import wait_until


def test_sandbox_create_with_template_timeout_metadata_envs():
    """Sandbox.create(template, timeout, metadata, envs) and get_info()."""
    sb = Sandbox.create(template="base", timeout=90, metadata={"suite": "compat"}, envs={"GREETING": "hi"})
    try:
        info = sb.get_info()
        assert info.sandbox_id == sb.sandbox_id
        assert info.metadata == {"suite": "compat"}
        assert info.state == SandboxState.RUNNING
        assert 80 <= (info.end_at - info.started_at).total_seconds() <= 100
        assert sb.commands.run("echo $GREETING").stdout == "hi\n"
    finally:
        sb.kill()


def test_sandbox_create_secure_requires_access_token():
    """Sandbox.create(secure=True): envd calls carry X-Access-Token; a wrong token is 401."""
    sb = Sandbox.create(secure=True)
    try:
        assert sb.commands.run("echo ok").stdout == "ok\n"
        headers = {"E2b-Sandbox-Id": sb.sandbox_id, "X-Access-Token": "wrong"}
        reply = httpx.get(f"{os.environ['E2B_SANDBOX_URL']}/envs", headers=headers)
        assert reply.status_code == 401
    finally:
        sb.kill()


def test_sandbox_list_filters_by_metadata_and_state():
    """Sandbox.list(query=SandboxQuery(metadata, state))."""
    tag = uuid.uuid4().hex
    sb = Sandbox.create(metadata={"tag": tag})
    try:
        query = SandboxQuery(metadata={"tag": tag}, state=[SandboxState.RUNNING])
        found = Sandbox.list(query=query).next_items()
        assert [s.sandbox_id for s in found] == [sb.sandbox_id]
        paused = Sandbox.list(query=SandboxQuery(metadata={"tag": tag}, state=[SandboxState.PAUSED]))
        assert paused.next_items() == []
    finally:
        sb.kill()


def test_sandbox_list_paginates_with_next_token():
    """Sandbox.list(limit) pages through X-Next-Token (paginator.has_next / next_items)."""
    tag = uuid.uuid4().hex
    sandboxes = [Sandbox.create(metadata={"page": tag}) for _ in range(3)]
    try:
        paginator = Sandbox.list(query=SandboxQuery(metadata={"page": tag}), limit=2)
        first = paginator.next_items()
        assert len(first) == 2 and paginator.has_next
        second = paginator.next_items()
        assert len(second) == 1 and not paginator.has_next
        seen = {s.sandbox_id for s in first + second}
        assert seen == {s.sandbox_id for s in sandboxes}
    finally:
        for sb in sandboxes:
            sb.kill()


def test_set_timeout_moves_end_time(sandbox):
    """sandbox.set_timeout(seconds)."""
    sandbox.set_timeout(600)
    info = sandbox.get_info()
    assert 590 <= (info.end_at - info.started_at).total_seconds() <= 620


def test_connect_to_existing_sandbox(sandbox):
    """Sandbox.connect(sandbox_id) reaches the same sandbox."""
    sandbox.files.write("/tmp/marker", "here")
    again = Sandbox.connect(sandbox.sandbox_id)
    assert again.files.read("/tmp/marker") == "here"


def test_kill_and_is_running():
    """sandbox.kill(), sandbox.is_running() and Sandbox.kill(id) → False for an unknown id."""
    sb = Sandbox.create()
    assert sb.is_running()
    sb.kill()
    assert not sb.is_running()
    assert Sandbox.kill(sb.sandbox_id) is False
    assert Sandbox.kill("inotasandbox0000000000") is False


@pytest.mark.offline
def test_get_info_unknown_sandbox_is_not_found():
    """Sandbox.get_info(unknown id) raises NotFoundException."""
    with pytest.raises(NotFoundException):
        Sandbox.get_info("inotasandbox0000000000")


@pytest.mark.offline
def test_connect_unknown_sandbox_fails():
    """Sandbox.connect(unknown id) raises."""
    with pytest.raises(SandboxException):
        Sandbox.connect("inotasandbox0000000000")


def test_get_metrics(sandbox):
    """sandbox.get_metrics() returns cpu/memory samples."""
    metrics = sandbox.get_metrics()
    assert metrics, "no metrics"
    sample = metrics[-1]
    assert sample.cpu_count >= 1 and sample.mem_total > 0


def test_get_metrics_over_time_and_by_range(e2b_env):
    """Mirrors E2B's test_sbx_metrics_time_range (e2b-python-sdk tests/{sync,async}/.../
    test_metrics.py, e2b-js-sdk metrics.test.ts 'sbx metrics time range'): the daemon samples
    a live sandbox every 5 s, and get_metrics(start, end) returns the samples of that range,
    oldest first; a range before the sandbox existed has none."""
    start = datetime.now(UTC).replace(microsecond=0)
    sb = Sandbox.create(timeout=120)
    try:
        sb.commands.run("head -c 3000000 /dev/zero > /home/user/disk")
        samples = wait_until(lambda: (m := sb.get_metrics()) and len(m) >= 2 and m, timeout=30,
                             what="a second sample from the sampler")
        end = datetime.now(UTC)
        assert [m.timestamp for m in samples] == sorted(m.timestamp for m in samples)
        assert samples[-1].disk_used >= 3000000 and samples[-1].mem_used > 0
        # The range is in whole seconds (the SDK rounds start and end down).
        ranged = sb.get_metrics(start=start, end=end)
        assert ranged and all(start <= m.timestamp < end + timedelta(seconds=1) for m in ranged)
        first = samples[0].timestamp.replace(microsecond=0)
        in_first_second = sb.get_metrics(start=first, end=first)
        assert samples[0].timestamp in [m.timestamp for m in in_first_second]
        assert all(m.timestamp.replace(microsecond=0) == first for m in in_first_second)
        before = start - timedelta(hours=1)
        assert sb.get_metrics(start=before, end=before + timedelta(minutes=30)) == []
        api = httpx.Client(base_url=e2b_env.url, headers={"X-API-Key": e2b_env.api_key})
        for query in ("start=2&end=1", "start=soon", "end=1.5"):
            r = api.get(f"/sandboxes/{sb.sandbox_id}/metrics?{query}")
            assert r.status_code == 400 and ("start" in r.text or "end" in r.text), r.text
    finally:
        sb.kill()




@pytest.mark.skip(reason="out of scope: template builds through the SDK (Template.build); use `abx template build`")
def test_template_build():
    """Template.build(...)."""
