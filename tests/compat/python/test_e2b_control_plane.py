"""Control-plane details E2B's own suites check (issue 14, items 3, 4 and 9), through the
unmodified e2b SDK configured as a user configures it (the env lines of `abx env e2b`), with
no header or variable a user would not set. Each test names the E2B test it mirrors, in
../shared/e2b-suites/e2b-python-sdk/tests/."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from datetime import timedelta

import httpx
import pytest
from e2b import Sandbox, SandboxQuery, Template
from helpers import wait_until


def ids(sandboxes) -> list[str]:
    return [s.sandbox_id for s in sandboxes]


def test_list_is_newest_first_unless_order_asc():
    """Mirrors sync/api_sync/test_sbx_list.py::test_list_sandboxes_with_order."""
    tag = uuid.uuid4().hex
    first = Sandbox.create(metadata={"order": tag})
    second = Sandbox.create(metadata={"order": tag})
    try:
        query = SandboxQuery(metadata={"order": tag})
        assert ids(Sandbox.list(query=query).next_items()) == [second.sandbox_id, first.sandbox_id]
        assert ids(Sandbox.list(query=query, order="desc").next_items()) == [
            second.sandbox_id, first.sandbox_id]
        assert ids(Sandbox.list(query=query, order="asc").next_items()) == [
            first.sandbox_id, second.sandbox_id]
        # Pages follow the order too.
        paginator = Sandbox.list(query=query, order="asc", limit=1)
        assert ids(paginator.next_items()) == [first.sandbox_id]
        assert ids(paginator.next_items()) == [second.sandbox_id] and not paginator.has_next
    finally:
        first.kill()
        second.kill()


def test_list_filters_by_start_time(sandbox, daemon):
    """Mirrors sync/api_sync/test_sbx_list.py::test_list_sandboxes_started_after;
    startedBefore (which this SDK does not send) through the API itself."""
    started = sandbox.get_info().started_at

    def listed(**query) -> list[str]:
        return ids(Sandbox.list(query=SandboxQuery(**query)).next_items())
    assert sandbox.sandbox_id in listed(started_after=started)
    assert sandbox.sandbox_id not in listed(started_after=started + timedelta(seconds=1))
    with daemon.api() as api:

        def raw(**params) -> list[str]:
            reply = api.get("/v2/sandboxes", params=params)
            assert reply.status_code == 200, reply.text
            return [s["sandboxID"] for s in reply.json()]
        at = started.isoformat()
        assert sandbox.sandbox_id in raw(startedBefore=at, startedAfter=at)
        assert sandbox.sandbox_id not in raw(
            startedBefore=(started - timedelta(seconds=1)).isoformat())


def test_list_filters_by_template(sandbox):
    """Mirrors sync/api_sync/test_sbx_list.py::test_list_sandboxes_with_template_filter."""
    template = sandbox.get_info().template_id
    assert sandbox.sandbox_id in ids(Sandbox.list(query=SandboxQuery(template=template)).next_items())
    assert sandbox.sandbox_id in ids(Sandbox.list(query=SandboxQuery(template="base")).next_items())
    assert Sandbox.list(query=SandboxQuery(template="unknown-template")).next_items() == []


@pytest.mark.parametrize("params, field", [
    ({"order": "sideways"}, "order"),
    ({"startedAfter": "yesterday"}, "startedAfter"),
    ({"startedBefore": "2026-13-01T00:00:00+0"}, "startedBefore"),
])
def test_list_refuses_a_bad_order_or_time(daemon, params, field):
    """A bad filter is a 400 that names the field, not an empty list."""
    with daemon.api() as api:
        reply = api.get("/v2/sandboxes", params=params)
    assert reply.status_code == 400
    assert reply.json()["message"].startswith(field + ":")
    assert daemon.proc.poll() is None


def test_template_exists():
    """Template.exists() (GET /templates/aliases/{alias}); E2B's suite checks it only with
    mocks (sync/template_sync/test_bound_api_params.py), so against a daemon it is ours."""
    assert Template.exists("base") is True
    assert Template.exists("code-interpreter-v1") is True
    assert Template.exists(f"no-such-template-{uuid.uuid4().hex[:8]}") is False


def test_set_timeout_zero_ends_the_sandbox_now():
    """E2B's API takes set_timeout(0) (sync/sandbox_sync/test_create.py uses it to end a
    sandbox's time now; test_timeout.py shortens it to 5 s): the sandbox stops."""
    sb = Sandbox.create(timeout=120)
    try:
        sb.set_timeout(0)
        wait_until(lambda: not sb.is_running(), timeout=30, what="the sandbox to stop")
    finally:
        if sb.is_running():
            sb.kill()


def test_set_timeout_out_of_range_is_refused(sandbox, daemon):
    with daemon.api() as api:
        for timeout in (-1, 86401, 1.5, "10"):
            reply = api.post(f"/sandboxes/{sandbox.sandbox_id}/timeout", json={"timeout": timeout})
            assert reply.status_code == 400, (timeout, reply.text)
            assert reply.json()["message"].startswith("timeout:")
    assert sandbox.is_running()


def test_signed_urls_work_as_handed_out(daemon):
    """Mirrors sync/sandbox_sync/files/test_secured.py::test_download_url_with_signing,
    ::test_download_url_with_signing_and_expiration and ::test_download_url_with_expired_signing:
    a plain GET or POST of the link the SDK returns, no sandbox header."""
    sb = Sandbox.create(timeout=120, secure=True)
    try:
        sb.files.write("signed.txt", "signed content")
        with urllib.request.urlopen(sb.download_url("signed.txt", "user")) as reply:
            assert reply.status == 200 and reply.read() == b"signed content"
        with urllib.request.urlopen(sb.download_url("signed.txt", "user", 120)) as reply:
            assert reply.read() == b"signed content"

        upload = sb.upload_url("/home/user/uploaded.txt", "user", 120)
        posted = httpx.post(upload, files={"file": ("uploaded.txt", b"via upload_url")})
        assert posted.status_code == 200, posted.text
        assert sb.files.read("/home/user/uploaded.txt") == "via upload_url"

        expired = sb.download_url("signed.txt", "user", use_signature_expiration=-120)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(expired)
        assert refused.value.code == 401
        assert json.loads(refused.value.read()) == {"code": 401, "message": "signature is already expired"}

        # A link for reading does not write; a changed link matches no sandbox.
        wrong_op = sb.download_url("/home/user/uploaded.txt", "user", 120)
        assert httpx.post(wrong_op, files={"file": ("x", b"x")}).status_code == 401
        tampered = sb.download_url("signed.txt", "user").replace("signature=v1_", "signature=v1_A")
        reply = httpx.get(tampered)
        assert reply.status_code == 401 and "matches no running sandbox" in reply.json()["message"]
    finally:
        sb.kill()
    # Once the sandbox is gone its links are refused, and the daemon is unharmed.
    assert httpx.get(daemon.url + "/health").status_code in (200, 204)
    assert daemon.proc.poll() is None


def test_signed_url_of_an_ended_sandbox_is_refused(daemon):
    sb = Sandbox.create(timeout=120, secure=True)
    sb.files.write("gone.txt", "x")
    link = sb.download_url("gone.txt", "user", 120)
    sb.kill()
    wait_until(lambda: httpx.get(link).status_code == 401, timeout=10,
               what="the ended sandbox's link to be refused")
    assert daemon.proc.poll() is None
