"""E2B's template builds through the unmodified E2B Python SDK: Template().from_template(...)
.set_envs(...).run_cmd(...).copy(...) and Template.build() against the daemon (POST /v3/templates,
the upload link, the steps, status polling), then a sandbox of the new template shows what the
steps did. Real daemon, the Debian `base` built by tests/templates/conftest.py; no internet."""
from __future__ import annotations

import io
import json
import tarfile
import uuid
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
from harness import Daemon
from helpers import abx

BUILD_TIMEOUT_S = 600


@pytest.fixture
def e2b(built_base: Daemon, monkeypatch: pytest.MonkeyPatch) -> Daemon:
    monkeypatch.setenv("E2B_API_URL", built_base.url)
    monkeypatch.setenv("E2B_SANDBOX_URL", built_base.url)
    monkeypatch.setenv("E2B_API_KEY", built_base.api_key)
    monkeypatch.setenv("E2B_DOMAIN", f"localhost:{urlparse(built_base.url).port}")
    return built_base


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_sdk_build_runs_steps_and_a_sandbox_has_their_effect(e2b: Daemon, tmp_path: Path):
    from e2b import Sandbox, Template

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "note.txt").write_text("from the context\n")
    template = (
        Template(file_context_path=str(tmp_path))
        .from_template("base")
        .set_envs({"GREETING": "hello e2b", "QUOTED": 'a "b" $c'})
        .run_cmd("echo built > /opt/marker.txt", user="root")
        .copy("data/*", "/opt/data", user="root")
        .set_workdir("/opt")
    )
    name = unique("sdk-tpl")
    logs: list[str] = []
    info = Template.build(template, name, on_build_logs=lambda entry: logs.append(entry.message))
    assert info.template_id == name
    assert any("RUN" in line for line in logs), logs

    sb = Sandbox.create(name, timeout=120)
    try:
        r = sb.commands.run('cat /opt/marker.txt /opt/data/note.txt; echo "$GREETING|$QUOTED"; pwd')
        assert r.stdout == 'built\nfrom the context\nhello e2b|a "b" $c\n/opt\n'
    finally:
        sb.kill()

    listed = json.loads(abx(e2b, "template", "list", "--json").stdout)
    mine = [t for t in listed if t["name"] == name]
    assert mine and mine[0]["owner"], listed

    # The same files again: the daemon has them by hash, nothing is uploaded.
    logs.clear()
    Template.build(template, unique("sdk-tpl-again"), on_build_logs=lambda e: logs.append(e.message))
    assert any("already cached" in line for line in logs), logs


def test_sdk_build_failure_is_a_build_exception_with_the_step_output(e2b: Daemon):
    from e2b import Template
    from e2b.exceptions import BuildException

    template = Template().from_template("base").run_cmd("echo about to fail >&2; exit 3")
    with pytest.raises(BuildException) as failed:
        Template.build(template, unique("sdk-fail"))
    assert "exit" in str(failed.value) or "3" in str(failed.value)


def test_build_in_background_then_status_until_ready(e2b: Daemon):
    import time

    from e2b import Template
    from e2b.template.types import TemplateBuildStatus

    template = Template().from_template("base").run_cmd("true")
    info = Template.build_in_background(template, unique("sdk-bg"))
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    status = Template.get_build_status(info)
    while status.status in (TemplateBuildStatus.BUILDING, TemplateBuildStatus.WAITING):
        assert time.monotonic() < deadline
        time.sleep(0.5)
        status = Template.get_build_status(info)
    assert status.status == TemplateBuildStatus.READY, status.reason


def api(d: Daemon) -> httpx.Client:
    return httpx.Client(base_url=d.url, headers={"X-API-Key": d.api_key}, timeout=60)


def test_hostile_inputs_get_clear_errors(e2b: Daemon):
    with api(e2b) as client:
        assert client.get("/templates/x/files/..%2F..%2Fetc").status_code in (400, 404)
        r = client.get("/templates/x/files/" + "g" * 64)
        assert r.status_code == 400 and "hash" in r.json()["message"]
        assert httpx.put(f"{e2b.url}/abx/v1/e2b-uploads/nosuchtoken", content=b"x").status_code == 404
        r = client.post("/v3/templates", json={"name": "../evil"})
        assert r.status_code == 400
        r = client.post("/v3/templates", json={"name": unique("sdk-bad")})
        assert r.status_code == 202
        build = r.json()
        steps_url = f"/v2/templates/{build['templateID']}/builds/{build['buildID']}"
        r = client.post(steps_url, json={"fromTemplate": "base", "steps": [{"type": "FROBNICATE"}]})
        assert r.status_code == 400 and "FROBNICATE" in r.json()["message"]
        r = client.post(steps_url, json={"fromTemplate": "base",
                                         "steps": [{"type": "ENV", "args": ["A B", "1"]}]})
        assert r.status_code == 400


def test_an_upload_whose_tar_leaves_the_context_fails_the_build(e2b: Daemon):
    """A tar member named ../x, or a symlink out, never lands outside the build's context."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = b"escaped\n"
        member = tarfile.TarInfo("../escaped.txt")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    files_hash = uuid.uuid4().hex * 2
    with api(e2b) as client:
        build = client.post("/v3/templates", json={"name": unique("sdk-escape")}).json()
        link = client.get(f"/templates/{build['templateID']}/files/{files_hash}").json()
        assert link["present"] is False
        assert httpx.put(link["url"], content=buf.getvalue()).status_code == 200
        # A used link is gone.
        assert httpx.put(link["url"], content=b"x").status_code == 404
        steps = {"fromTemplate": "base",
                 "steps": [{"type": "COPY", "args": ["escaped.txt", "/tmp/"], "filesHash": files_hash}]}
        base = f"/templates/{build['templateID']}/builds/{build['buildID']}"
        assert client.post(f"/v2{base}", json=steps).status_code == 202
        for _ in range(600):
            status = client.get(f"{base}/status").json()
            if status["status"] in ("ready", "error"):
                break
            import time
            time.sleep(0.5)
        assert status["status"] == "error"
        assert "outside" in status["reason"]["message"], status
