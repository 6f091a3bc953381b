"""Template ownership as API keys meet it: built-ins are everyone's and only an admin removes
them; `template rm --force` of a template live sandboxes use is an admin's, and its layers stay
until the last of those sandboxes ends; another team's template answers exactly like one that
does not exist."""
from __future__ import annotations

import io
import json
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from harness import ABX_BIN, Daemon, start_daemon, stop_daemon
from helpers import wait_until

pytestmark = pytest.mark.offline  # a hand-made busybox image: no Debian build

BUSYBOX = Path("/bin/busybox")  # Debian's busybox-static: runs without any library
IMPORT_TIMEOUT = 300
MARKER = "made by the tiny image"


def add_file(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


def add_entry(tar: tarfile.TarFile, name: str, kind: bytes, mode: int = 0o755,
              target: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = kind, mode, target
    tar.addfile(info)


def busybox_layer() -> bytes:
    """A root with a shell: busybox, `bash` as a wrapper of its sh, and a marker file."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for d, mode in (("bin", 0o755), ("etc", 0o755), ("root", 0o700), ("tmp", 0o1777)):
            add_entry(tar, d, tarfile.DIRTYPE, mode)
        add_file(tar, "bin/busybox", BUSYBOX.read_bytes(), 0o755)
        for applet in ("sh", "cat", "ls"):
            add_entry(tar, f"bin/{applet}", tarfile.SYMTYPE, 0o777, "busybox")
        add_file(tar, "bin/bash", b'#!/bin/sh\nexec /bin/sh "$@"\n', 0o755)
        add_file(tar, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
        add_file(tar, "etc/group", b"root:x:0:\n")
        add_file(tar, "etc/marker.txt", MARKER.encode() + b"\n")
    return out.getvalue()


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> Path:
    """The image as `docker save` writes it: manifest.json, a config, one layer."""
    if not BUSYBOX.exists():
        pytest.fail("busybox-static is needed: run scripts/install-deps.sh")
    path = tmp_path_factory.mktemp("image") / "tiny.tar"
    config = {"config": {"Env": ["PATH=/bin"], "WorkingDir": "/", "User": "0"}}
    with tarfile.open(path, "w") as tar:
        add_file(tar, "config.json", json.dumps(config).encode())
        add_file(tar, "layer/layer.tar", busybox_layer())
        manifest = [{"Config": "config.json", "RepoTags": ["tiny:latest"],
                     "Layers": ["layer/layer.tar"]}]
        add_file(tar, "manifest.json", json.dumps(manifest).encode())
    return path


@pytest.fixture
def own_daemon(state_dir) -> Iterator[Daemon]:
    # Templates of its own: a forced removal here must not meet other daemons' sandboxes.
    d = start_daemon(state_dir / "state", shared_templates=False, extra_args=("--warm-pool", "0"))
    yield d
    stop_daemon(d)


def client(d: Daemon, key: str) -> httpx.Client:
    return httpx.Client(base_url=d.url, headers={"X-API-KEY": key}, timeout=60)


def same_team_key(d: Daemon) -> str:
    """A second, non-admin key of the default team, as `abx keys create` makes it."""
    made = subprocess.run([str(ABX_BIN), "keys", "create", "--name", "second"], env=d.env(),
                          capture_output=True, text=True, timeout=60, check=False)
    assert made.returncode == 0, made.stderr
    return next(w for w in made.stdout.split() if w.startswith("e2b_"))


def team_key(d: Daemon, team: str) -> str:
    """A non-admin key of `team`, made by the admin through the keys API."""
    with d.api() as admin:
        r = admin.post("/abx/v1/keys", json={"team": team})
    assert r.status_code == 201, r.text
    assert r.json()["team"] == team and not r.json()["admin"]
    return r.json()["key"]


def import_image(d: Daemon, key: str, name: str, image: Path) -> httpx.Response:
    with client(d, key) as api:
        r = api.post(f"/abx/v1/templates/{name}/import", content=image.read_bytes(),
                     headers={"Content-Type": "application/x-tar"}, timeout=IMPORT_TIMEOUT)
    if r.status_code == 200:
        last = json.loads(r.text.strip().splitlines()[-1])
        assert "done" in last, r.text
    return r


def create(d: Daemon, key: str, template: str) -> httpx.Response:
    with client(d, key) as api:
        return api.post("/sandboxes", json={"templateID": template, "timeout": 300})


def layer_ids(d: Daemon) -> set[str]:
    layers = d.data_dir / "templates" / ".layers"
    return {p.name for p in layers.iterdir()} if layers.exists() else set()


def template_names(d: Daemon, key: str) -> set[str]:
    with client(d, key) as api:
        r = api.get("/abx/v1/templates")
    assert r.status_code == 200, r.text
    return {t["name"] for t in r.json()["templates"]}


def message_for_any_name(r: httpx.Response, name: str) -> tuple[int, str]:
    return r.status_code, r.json()["message"].replace(name, "NAME")


def test_only_an_admin_removes_a_builtin(own_daemon):
    second = same_team_key(own_daemon)
    with client(own_daemon, second) as api:
        for name in ("base", "host", "code-interpreter-v1"):
            r = api.delete(f"/abx/v1/templates/{name}")
            assert r.status_code == 403, (name, r.text)
            assert "built in" in r.json()["message"] and "admin" in r.json()["message"]
            assert "\n" not in r.json()["message"]
        assert api.get("/abx/v1/templates/host").status_code == 200, "host must still exist"
    with own_daemon.api() as admin:
        # The admin gets past the check: base is not stored yet, host cannot go at all.
        assert admin.delete("/abx/v1/templates/base").status_code == 404
        assert admin.delete("/abx/v1/templates/host").status_code == 403


def test_a_non_admin_may_not_replace_a_builtin(own_daemon, image):
    second = same_team_key(own_daemon)
    r = import_image(own_daemon, second, "code-interpreter-v1", image)
    assert r.status_code == 403, r.text
    assert "only an admin key" in r.json()["message"]
    assert "code-interpreter-v1" in template_names(own_daemon, second), "still the built-in"


def test_force_remove_in_use_is_admin_only_and_keeps_the_layers_until_the_last_sandbox(
        own_daemon, image):
    second = same_team_key(own_daemon)
    before = layer_ids(own_daemon)
    r = import_image(own_daemon, second, "tiny", image)
    assert r.status_code == 200, r.text
    image_layers = layer_ids(own_daemon) - before
    assert image_layers, "the import stored a layer"
    made = create(own_daemon, second, "tiny")
    assert made.status_code == 201, made.text
    sandbox_id = made.json()["sandboxID"]

    with client(own_daemon, second) as api:
        r = api.delete("/abx/v1/templates/tiny")
        assert r.status_code == 409 and "--force" in r.json()["message"]
        r = api.delete("/abx/v1/templates/tiny", params={"force": "true"})
        assert r.status_code == 403, r.text
        assert r.json()["message"] == "only an admin key may force-remove a template in use"
        assert api.get("/abx/v1/templates/tiny").status_code == 200, "refused: still there"

    with own_daemon.api() as admin:
        r = admin.delete("/abx/v1/templates/tiny", params={"force": "true"})
        assert r.status_code == 200, r.text
        assert r.json() == {"name": "tiny", "runningSandboxes": 1}
        assert admin.get("/abx/v1/templates/tiny").status_code == 404
    assert "tiny" not in template_names(own_daemon, own_daemon.api_key)
    assert create(own_daemon, second, "tiny").status_code == 400, "gone for new sandboxes"

    # The sandbox made before the removal still runs on the image's files.
    ran = subprocess.run([str(ABX_BIN), "exec", sandbox_id, "--", "cat", "/etc/marker.txt"],
                         env=own_daemon.env(), capture_output=True, text=True, timeout=60,
                         check=False)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == MARKER
    assert image_layers <= layer_ids(own_daemon), "kept while a sandbox runs on them"

    with own_daemon.api() as admin:
        assert admin.delete(f"/sandboxes/{sandbox_id}").status_code == 204
    assert not image_layers & layer_ids(own_daemon), "freed when its last sandbox ended"
    assert not (own_daemon.data_dir / "templates" / ".retired").exists()


def test_removing_a_template_nobody_uses_frees_its_layers_at_once(own_daemon, image):
    before = layer_ids(own_daemon)
    assert import_image(own_daemon, own_daemon.api_key, "tiny", image).status_code == 200
    with own_daemon.api() as admin:
        assert admin.delete("/abx/v1/templates/tiny").status_code == 204
    assert layer_ids(own_daemon) == before


def test_another_teams_template_answers_like_an_unknown_one(own_daemon, image):
    assert import_image(own_daemon, own_daemon.api_key, "tiny", image).status_code == 200
    other = team_key(own_daemon, "other")
    names = template_names(own_daemon, other)
    assert "tiny" not in names
    assert {"base", "host", "code-interpreter-v1"} <= names, "built-ins are everyone's"
    with client(own_daemon, other) as api:
        for method in ("GET", "DELETE"):
            foreign = api.request(method, "/abx/v1/templates/tiny")
            unknown = api.request(method, "/abx/v1/templates/no-such-one")
            assert foreign.status_code == 404, foreign.text
            assert message_for_any_name(foreign, "tiny") == \
                message_for_any_name(unknown, "no-such-one")
        forced = api.delete("/abx/v1/templates/tiny", params={"force": "true"})
        assert forced.status_code == 404
    foreign = create(own_daemon, other, "tiny")
    unknown = create(own_daemon, other, "no-such-one")
    assert foreign.status_code == unknown.status_code == 400
    assert message_for_any_name(foreign, "tiny") == message_for_any_name(unknown, "no-such-one")
    assert "tiny" not in foreign.json()["message"].replace("'tiny'", ""), "no other names leak"
    assert "tiny" in template_names(own_daemon, own_daemon.api_key), "the owner still has it"


def alias_answer(d: Daemon, key: str, name: str) -> tuple[int, str]:
    """E2B's Template.exists(): what GET /templates/aliases/NAME tells `key`."""
    with client(d, key) as api:
        r = api.get(f"/templates/aliases/{name}")
    return r.status_code, r.json().get("message", "").replace(name, "NAME")


def test_two_teams_may_use_one_name_and_neither_learns_of_the_other(own_daemon, image):
    assert import_image(own_daemon, own_daemon.api_key, "tiny", image).status_code == 200
    other = team_key(own_daemon, "other")
    # Probing the name tells the other team nothing: as for a name nobody uses.
    assert alias_answer(own_daemon, other, "tiny") == alias_answer(own_daemon, other, "no-such")
    assert alias_answer(own_daemon, other, "tiny")[0] == 404

    r = import_image(own_daemon, other, "tiny", image)
    assert r.status_code == 200, r.text
    with client(own_daemon, other) as api:
        theirs = api.get("/abx/v1/templates/tiny").json()
    with own_daemon.api() as admin:
        mine = admin.get("/abx/v1/templates/tiny").json()
    assert theirs["name"] == mine["name"] == "tiny"
    assert theirs["owner"] == "other" and mine["owner"] == "default"
    assert theirs["resolved"] != mine["resolved"], "two templates, not one"
    assert alias_answer(own_daemon, other, "tiny")[0] == 200

    # Each team's sandbox runs on its own; removing one leaves the other's.
    ours, yours = create(own_daemon, own_daemon.api_key, "tiny"), create(own_daemon, other, "tiny")
    assert ours.status_code == yours.status_code == 201, (ours.text, yours.text)
    assert ours.json()["templateID"] == mine["resolved"]
    assert yours.json()["templateID"] == theirs["resolved"]
    for key, sandbox in ((own_daemon.api_key, ours), (other, yours)):
        with client(own_daemon, key) as api:
            assert api.delete(f"/sandboxes/{sandbox.json()['sandboxID']}").status_code == 204
    with client(own_daemon, other) as api:
        assert api.delete("/abx/v1/templates/tiny").status_code == 204
    assert "tiny" not in template_names(own_daemon, other)
    with own_daemon.api() as admin:
        assert admin.get("/abx/v1/templates/tiny").json()["owner"] == "default"
    # A user cannot name another team's id to reach its template.
    third = team_key(own_daemon, "third")
    assert create(own_daemon, third, mine["resolved"] + "@third").status_code == 400
    with client(own_daemon, third) as api:
        assert api.get("/abx/v1/templates/tiny@default").status_code == 404
    assert import_image(own_daemon, third, "tiny@third", image).status_code == 400


def test_a_sandboxfile_cannot_build_from_another_teams_template(own_daemon, image, tmp_path):
    assert import_image(own_daemon, own_daemon.api_key, "tiny", image).status_code == 200
    other = team_key(own_daemon, "other")
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "Sandboxfile").write_text("FROM tiny\nRUN cat /etc/marker.txt\n")
    env = {**own_daemon.env(), "ABX_SANDBOX_API_KEY": other}
    r = subprocess.run([str(ABX_BIN), "template", "build", str(context), "--name", "mine"],
                       env=env, capture_output=True, text=True, timeout=IMPORT_TIMEOUT,
                       check=False)
    assert r.returncode != 0
    assert "unknown template 'tiny' in FROM" in r.stderr
    assert "mine" not in template_names(own_daemon, other)


def test_a_builtin_is_every_teams_and_does_not_name_who_built_it(own_daemon, image):
    # Only an admin may replace a built-in; its owner is then the admin's team.
    r = import_image(own_daemon, own_daemon.api_key, "code-interpreter-v1", image)
    assert r.status_code == 200, r.text
    other = team_key(own_daemon, "other")
    with client(own_daemon, other) as api:
        info = api.get("/abx/v1/templates/code-interpreter-v1").json()
        assert info["owner"] == "", "another team's name is not shown"
        made = api.post("/sandboxes", json={"templateID": "code-interpreter-v1"})
        assert made.status_code == 201, made.text
        assert api.delete(f"/sandboxes/{made.json()['sandboxID']}").status_code == 204


def cli(d: Daemon, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(ABX_BIN), *args], env=d.env(), capture_output=True, timeout=60,
                          input=data, stdin=None if data is not None else subprocess.DEVNULL,
                          check=False)


def test_cli_force_rm_keeps_live_sandboxes_working_and_list_and_rm_agree(own_daemon, image):
    before = layer_ids(own_daemon)
    assert import_image(own_daemon, own_daemon.api_key, "tiny", image).status_code == 200
    image_layers = layer_ids(own_daemon) - before
    made = cli(own_daemon, "create", "--template", "tiny")
    assert made.returncode == 0, made.stderr
    sandbox_id = made.stdout.decode().strip()

    refused = cli(own_daemon, "template", "rm", "tiny")
    assert refused.returncode != 0 and b"--force" in refused.stderr
    removed = cli(own_daemon, "template", "rm", "--force", "tiny")
    assert removed.returncode == 0, removed.stderr
    assert b"1 running sandbox still use tiny" in removed.stderr, removed.stderr
    listed = cli(own_daemon, "template", "list")
    assert listed.returncode == 0 and b"tiny" not in listed.stdout
    again = cli(own_daemon, "template", "rm", "--force", "tiny")
    assert again.returncode != 0 and b"not found" in again.stderr.lower(), again.stderr

    # The sandbox runs on: commands and files still reach the image's files.
    ran = cli(own_daemon, "exec", sandbox_id, "--", "cat", "/etc/marker.txt")
    assert ran.returncode == 0 and ran.stdout.decode().strip() == MARKER, ran.stderr
    read = cli(own_daemon, "download", sandbox_id, "/etc/marker.txt", "-")
    assert read.returncode == 0 and read.stdout.decode().strip() == MARKER, read.stderr
    assert image_layers <= layer_ids(own_daemon), "kept while the sandbox runs"

    assert cli(own_daemon, "kill", sandbox_id, "--yes").returncode == 0
    assert not image_layers & layer_ids(own_daemon), "gone from disk with the last sandbox"


def test_layers_of_a_removed_template_go_when_its_sandbox_ended_while_the_daemon_was_down(
        state_dir, image):
    d = start_daemon(state_dir / "state", shared_templates=False, extra_args=("--warm-pool", "0"))
    try:
        before = layer_ids(d)
        assert import_image(d, d.api_key, "tiny", image).status_code == 200
        image_layers = layer_ids(d) - before
        made = cli(d, "create", "--template", "tiny", "--timeout", "5")
        made_at = time.time()
        assert made.returncode == 0, made.stderr
        assert cli(d, "template", "rm", "--force", "tiny").returncode == 0
        assert (d.data_dir / "templates" / ".retired").exists(), "kept for the live sandbox"
        stop_daemon(d, kill_sandboxes=False)
        # Its timeout passes while no daemon runs; the next start destroys it.
        wait_until(lambda: time.time() > made_at + 6, timeout=15, what="the sandbox's end")
        d = start_daemon(state_dir / "state", shared_templates=False,
                         extra_args=("--warm-pool", "0"))
        assert image_layers and not image_layers & layer_ids(d), "freed at the daemon's start"
        assert not (d.data_dir / "templates" / ".retired").exists()
    finally:
        stop_daemon(d)
