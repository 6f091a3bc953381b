"""The Debian `base`: built by mmdebstrap from templates/base, listed, used by sandboxes."""
from __future__ import annotations

import json
import re
from pathlib import Path

from helpers import abx, create

REPO = Path(__file__).resolve().parents[2]
EXPECTED_TOTALS = ["shanghai   200", "hangzhou   165", "beijing    110"]


def test_build_shows_progress_and_keeps_a_log(built_base):
    r = abx(built_base, "template", "build", "base")
    assert r.returncode == 0, r.stderr
    assert "step:" in r.stderr
    log = built_base.data_dir / "templates" / "base.log"
    assert "building base" in log.read_text()


def test_list_and_inspect_show_the_built_base(built_base):
    listed = json.loads(abx(built_base, "template", "list", "--json").stdout)
    base = next(t for t in listed if t["name"] == "base")
    assert base["built"] and base["sizeBytes"] > 50 << 20
    assert "mmdebstrap" in base["source"]
    assert {"host", "code-interpreter-v1"} <= {t["name"] for t in listed}
    table = abx(built_base, "template", "list").stdout
    assert "NAME" in table and "base" in table
    info = json.loads(abx(built_base, "template", "inspect", "base").stdout)
    assert info["resolved"] == "base"


def test_files_belong_to_the_sandbox_users(built_base):
    templates = built_base.data_dir / "templates"
    layers = json.loads((templates / "base" / "meta.json").read_text())["layers"]
    assert len(layers) == 1
    rootfs = templates / ".layers" / layers[0]
    root_uid = (rootfs / "usr").stat().st_uid
    assert root_uid != 0, "template files must be shifted into the sandbox id range"
    assert (rootfs / "home" / "user").stat().st_uid == root_uid + 1000


def test_seed_example_runs_on_the_debian_base(built_base):
    sandbox_id = create(built_base)
    try:
        for name in ("sales.csv", "analyze.py"):
            r = abx(built_base, "upload", sandbox_id, str(REPO / "examples" / name),
                    f"/home/user/{name}")
            assert r.returncode == 0, r.stderr
        r = abx(built_base, "exec", sandbox_id, "--", "python", "/home/user/analyze.py")
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines() == EXPECTED_TOTALS
        r = abx(built_base, "exec", sandbox_id, "--", "sh", "-c",
                "id -un; cat /etc/debian_version; for c in git curl pip3 ps; do command -v $c; done")
        lines = r.stdout.splitlines()
        assert lines[0] == "user" and lines[1].startswith("12")
        assert len(lines) == 6, r.stdout
    finally:
        abx(built_base, "kill", sandbox_id, "--yes")


def test_rm_is_refused_while_a_sandbox_uses_it(built_base):
    sandbox_id = create(built_base)
    try:
        r = abx(built_base, "template", "rm", "base")
        assert r.returncode != 0
        assert "--force" in r.stderr
    finally:
        abx(built_base, "kill", sandbox_id, "--yes")


def test_first_create_builds_base_with_progress_and_prints_only_the_id(state_dir):
    """Built on first use: the create shows the build's progress on stderr; stdout stays the id."""
    from harness import start_daemon, stop_daemon
    d = start_daemon(state_dir / "state", shared_templates=False)
    try:
        r = abx(d, "create", "--template", "base", timeout=900)
        assert r.returncode == 0, r.stderr[-3000:]
        assert re.fullmatch(r"[a-z0-9]+\n", r.stdout), r.stdout
        assert "building it once" in r.stderr and "done: base" in r.stderr
        again = abx(d, "create", "--template", "base")
        assert again.returncode == 0 and "building" not in again.stderr
        for sandbox_id in (r.stdout.strip(), again.stdout.strip()):
            abx(d, "kill", sandbox_id, "--yes")
    finally:
        stop_daemon(d)


def test_a_second_build_request_waits_for_the_running_one(state_dir):
    """Two first builds at once: one extracts base, the other waits for it and reuses it."""
    import subprocess
    from harness import ABX_BIN, start_daemon, stop_daemon
    d = start_daemon(state_dir / "state", shared_templates=False)
    try:
        builds = [subprocess.Popen([str(ABX_BIN), "template", "build", "base"], env=d.env(),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                  for _ in range(2)]
        outputs = [b.communicate(timeout=900) for b in builds]
        assert [b.returncode for b in builds] == [0, 0], [err[-2000:] for _, err in outputs]
        extracting = [err for _, err in outputs if "step: extracting" in err]
        assert len(extracting) == 1, "the second request must not start another build"
        layers = list((d.data_dir / "templates" / ".layers").iterdir())
        assert len(layers) == 1, layers
    finally:
        stop_daemon(d)
