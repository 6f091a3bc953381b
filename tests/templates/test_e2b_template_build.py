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


def test_a_failed_step_is_named_so_the_sdk_points_at_its_call(e2b: Daemon):
    """The status's reason.step names the failing step ("base" for FROM, "1" for steps[0]):
    the SDK then raises with the traceback of the line that added that step."""
    import traceback

    from e2b import Template
    from e2b.exceptions import BuildException

    template = Template().from_template("base").run_cmd("true").run_cmd("exit 4")  # step 2
    with pytest.raises(BuildException) as failed:
        Template.build(template, unique("sdk-step"))
    frames = traceback.extract_tb(failed.value.__traceback__)
    assert any(f.filename == __file__ and '.run_cmd("exit 4")' in (f.line or "") for f in frames), frames

    template = Template().from_template("no-such-template-here").run_cmd("true")
    with pytest.raises(BuildException) as failed:
        Template.build(template, unique("sdk-step-base"))
    frames = traceback.extract_tb(failed.value.__traceback__)
    assert any(f.filename == __file__ and "from_template(" in (f.line or "") for f in frames), frames

    with api(e2b) as client:  # the step as the API gives it
        build = client.post("/v3/templates", json={"name": unique("sdk-step-api")}).json()
        base = f"/templates/{build['templateID']}/builds/{build['buildID']}"
        steps = {"fromTemplate": "base", "steps": [{"type": "RUN", "args": ["true"]},
                                                   {"type": "RUN", "args": ["false", "root"]}]}
        assert client.post(f"/v2{base}", json=steps).status_code == 202
        status = wait_for_status(client, base)
        assert status["status"] == "error" and status["reason"]["step"] == "2", status


def wait_for_status(client: httpx.Client, base: str) -> dict:
    import time

    deadline = time.monotonic() + BUILD_TIMEOUT_S
    while True:
        status = client.get(f"{base}/status").json()
        if status["status"] in ("ready", "error") or time.monotonic() > deadline:
            return status
        time.sleep(0.3)


def test_run_cmd_as_another_user_and_as_one_that_does_not_exist(e2b: Daemon):
    from e2b import Template
    from e2b.exceptions import BuildException

    # base runs as root: a step as nobody, then the next one as the template's user again.
    template = (Template().from_template("base").skip_cache()
                .run_cmd('test "$(whoami)" = nobody', user="nobody")
                .run_cmd('test "$(whoami)" = root'))
    Template.build(template, unique("sdk-user"))

    template = Template().from_template("base").skip_cache().run_cmd("whoami", user="root123")
    with pytest.raises(BuildException) as failed:
        Template.build(template, unique("sdk-nouser"))
    assert ("failed to run command 'whoami': command failed: unauthenticated: invalid username: "
            "'root123'") in str(failed.value)


def test_make_symlink_and_copied_symlinks(e2b: Daemon, tmp_path: Path):
    from e2b import Sandbox, Template

    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "test.txt").write_text("This is a test file.")
    (folder / "symlink.txt").symlink_to("test.txt")
    template = (
        Template(file_context_path=str(tmp_path)).from_template("base").skip_cache()
        .set_workdir("/opt/links")
        .make_symlink(".bashrc", ".bashrc.local")
        .make_symlink(".profile", ".bashrc.local", force=True)
        .copy("folder/*", "folder", force_upload=True)
        .copy("folder/symlink.txt", "resolved.txt", force_upload=True, resolve_symlinks=True)
        .run_cmd("cat folder/symlink.txt resolved.txt")
    )
    name = unique("sdk-links")
    Template.build(template, name)
    sb = Sandbox.create(name, timeout=120)
    try:
        r = sb.commands.run("cd /opt/links && readlink .bashrc.local folder/symlink.txt && "
                            "test ! -L resolved.txt && cat resolved.txt")
        assert r.stdout == ".profile\ntest.txt\nThis is a test file.", r.stdout
    finally:
        sb.kill()


def test_tags_name_builds_and_sandboxes_start_from_them(e2b: Daemon):
    from e2b import Sandbox, Template
    from e2b.exceptions import SandboxException, TemplateException

    name = unique("sdk-tags")
    first = Template.build(Template().from_template("base").run_cmd("echo one > /tmp/v"),
                           f"{name}:v1")
    tagged = Template.assign_tags(f"{name}:v1", ["production", "latest"])
    assert tagged.build_id == first.build_id and set(tagged.tags) == {"production", "latest"}
    tags = {t.tag: t.build_id for t in Template.get_tags(name)}
    assert tags == {"v1": first.build_id, "production": first.build_id, "latest": first.build_id}

    sb = Sandbox.create(f"{name}:production", timeout=120)
    try:
        assert sb.commands.run("cat /tmp/v").stdout == "one\n"
    finally:
        sb.kill()

    Template.remove_tags(name, "latest")
    assert {t.tag for t in Template.get_tags(name)} == {"v1", "production"}

    # A new build: its tag names it; v1's build is replaced, so v1 starts nothing.
    second = Template.build(Template().from_template("base").run_cmd("echo two > /tmp/v"),
                            f"{name}:v2")
    assert second.build_id != first.build_id
    sb = Sandbox.create(f"{name}:v2", timeout=120)
    try:
        assert sb.commands.run("cat /tmp/v").stdout == "two\n"
    finally:
        sb.kill()
    with pytest.raises(SandboxException, match="later build replaced"):
        Sandbox.create(f"{name}:v1", timeout=120)

    for bad in (":invalid-tag", f"{name}:", "a b", "x" * 200):
        with pytest.raises(TemplateException, match="400"):
            Template.assign_tags(f"{name}:v2", bad)
    with pytest.raises(TemplateException, match="404"):
        Template.assign_tags(f"{name}:nope", "x")
    with pytest.raises(TemplateException, match="404"):
        Template.remove_tags(name, "nope")
    with pytest.raises(TemplateException, match="404"):
        Template.get_tags(unique("sdk-no-tags"))
    with api(e2b) as client:
        r = client.post("/templates/tags", json={"target": f"{name}:v2", "tags": ["t"] * 33})
        assert r.status_code == 400 and "\n" not in r.json()["message"]
        r = client.post("/templates/tags", json={"target": 7, "tags": ["t"]})
        assert r.status_code == 400
        r = client.post("/v3/templates", json={"name": f"{name}:bad tag"})
        assert r.status_code == 400
        r = client.post("/templates/tags", json={"target": "a\nb:v1", "tags": ["t"]})
        assert r.status_code == 400 and "\n" not in r.json()["message"]
        r = client.request("DELETE", "/templates/tags", json={"name": "a\rb", "tags": ["t"]})
        assert r.status_code == 400 and "\r" not in r.json()["message"]
        assert client.get("/templates/a%0Ab/tags").status_code in (400, 404)
