"""What a sandbox changed on top of its template, like `docker diff`: `abx diff ID` (A/C/D
lines, --json) and `GET /abx/v1/sandboxes/{id}/diff`; another team gets 404; a sandbox's own
tricks (a dir named like overlay's, symlinks out) change nothing of what is reported. Real
daemon, real `abx` binary, offline `host` template."""
from __future__ import annotations

import json

import pytest
from helpers import abx

pytestmark = pytest.mark.offline

SCRIPT = ("echo new > /tmp/added.txt && mkdir -p /tmp/newdir/sub && echo x > /tmp/newdir/sub/f"
          " && echo changed >> /etc/inputrc && rm /etc/timezone && ln -s /etc/shadow /tmp/link"
          " && mkdir /upper && echo decoy > /upper/decoy")


def test_abx_diff_shows_what_the_sandbox_changed(daemon):
    r = abx(daemon, "create", "host")
    assert r.returncode == 0, r.stderr
    sandbox = r.stdout.strip()
    try:
        made = abx(daemon, "exec", sandbox, "-u", "root", "--", "sh", "-c", SCRIPT)
        assert made.returncode == 0, made.stderr
        lines = abx(daemon, "diff", sandbox).stdout.splitlines()
        for line in ("A /tmp/added.txt", "A /tmp/newdir", "A /tmp/newdir/sub",
                     "A /tmp/newdir/sub/f", "C /etc/inputrc", "D /etc/timezone", "A /tmp/link",
                     "A /upper", "A /upper/decoy"):
            assert line in lines, (line, lines)
        assert "C /etc" not in lines and "C /tmp" not in lines, "parents copied up are no change"
        as_json = json.loads(abx(daemon, "diff", sandbox, "--json").stdout)
        by_path = {c["path"]: c for c in as_json["changes"]}
        assert by_path["/tmp/added.txt"] == {"path": "/tmp/added.txt", "kind": "file",
                                             "change": "added", "size": 4}
        assert by_path["/tmp/link"]["kind"] == "symlink"
        assert by_path["/etc/timezone"]["change"] == "deleted"
        assert as_json["truncated"] is False
        with daemon.api() as api:
            other = api.post("/abx/v1/keys", json={"team": "diff-other"}).json()["key"]
            foreign = api.get(f"/abx/v1/sandboxes/{sandbox}/diff", headers={"X-API-KEY": other})
            unknown = api.get("/abx/v1/sandboxes/nosuchsandbox/diff")
        assert foreign.status_code == unknown.status_code == 404
    finally:
        abx(daemon, "kill", sandbox, "--yes")



def started_on(daemon, sandbox: str, ids: list[str], snaps: list[str], script: str) -> str:
    """Run `script` as root in `sandbox`, snapshot it, start a sandbox on the snapshot."""
    ran = abx(daemon, "exec", sandbox, "-u", "root", "--", "sh", "-c", script)
    assert ran.returncode == 0, ran.stderr
    snap = abx(daemon, "snapshot", "create", sandbox)
    assert snap.returncode == 0, snap.stderr
    snaps.append(snap.stdout.strip())
    started = abx(daemon, "create", "--snapshot", snaps[-1])
    assert started.returncode == 0, started.stderr
    ids.append(started.stdout.strip())
    return ids[-1]


def test_a_dir_remade_in_a_snapshot_hides_the_layers_below_it(daemon):
    """A sandbox on a snapshot in which a dir was removed and made again (overlay marks it
    opaque): a file written there is new to it, even where a layer under the snapshot has that
    name; one the snapshot holds is changed."""
    first = abx(daemon, "create", "host")
    assert first.returncode == 0, first.stderr
    ids = [first.stdout.strip()]
    snaps: list[str] = []
    try:
        second = started_on(daemon, ids[0], ids, snaps,
                            "mkdir /etc/stack && echo old > /etc/stack/hidden")
        third = started_on(daemon, second, ids, snaps,
                           "rm -rf /etc/stack && mkdir /etc/stack && echo remade > /etc/stack/kept")
        wrote = abx(daemon, "exec", third, "-u", "root", "--", "sh", "-c",
                    "test ! -e /etc/stack/hidden && echo mine > /etc/stack/hidden"
                    " && echo more >> /etc/stack/kept")
        assert wrote.returncode == 0, wrote.stderr
        lines = abx(daemon, "diff", third).stdout.splitlines()
        assert "A /etc/stack/hidden" in lines, lines
        assert "C /etc/stack/kept" in lines, lines
    finally:
        abx(daemon, "kill", "--yes", *ids)
        for snap in reversed(snaps):  # the session daemon is shared: leave no snapshot quota used
            abx(daemon, "snapshot", "rm", snap)
