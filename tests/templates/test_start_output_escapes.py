"""Review: a failed start command's last output goes into the create's error, the daemon's own
log and (through the CLI) the caller's terminal; its escape sequences are the sandbox's and
must arrive as plain text. A busybox image in the build context: no base to build."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from harness import start_daemon, stop_daemon
from test_import import TAG, add_layer, lower_layer, umoci

pytestmark = pytest.mark.skipif(not shutil.which("umoci"), reason="umoci builds the test image")

SANDBOXFILE = (
    "FROM ./image.tar\nUSER root\nWORKDIR /tmp\n"
    r"CMD printf 'started \033]0;owned\007\033[2J here\n'; exit 3" "\n"
    "READY test -f /nonexistent\n")


def test_start_output_reaches_the_error_without_its_escapes(state_dir, tmp_path):
    layout = tmp_path / "layout"
    umoci("init", "--layout", layout)
    umoci("new", "--image", f"{layout}:{TAG}")
    add_layer(layout, tmp_path / "bundle", lower_layer)
    context = tmp_path / "ctx"
    context.mkdir()
    subprocess.run(["tar", "-cf", str(context / "image.tar"), "-C", str(layout), "."], check=True)
    (context / "Sandboxfile").write_text(SANDBOXFILE)
    tar = tmp_path / "ctx.tar"
    subprocess.run(["tar", "-cf", str(tar), "-C", str(context), "."], check=True)
    d = start_daemon(state_dir / "state", shared_templates=False,
                     extra_args=("--warm-pool", "0"), env={"ABX_READY_TIMEOUT_S": "5"})
    try:
        with d.api() as api:
            r = api.post("/abx/v1/templates/esc/build", content=Path(tar).read_bytes(),
                         headers={"Content-Type": "application/x-tar"}, timeout=300)
            assert r.status_code == 200 and '"error"' not in r.text, r.text
            r = api.post("/sandboxes", json={"templateID": "esc"}, timeout=120)
            assert r.status_code >= 400, r.text
            message = r.json()["message"]
            assert "started" in message and "here" in message, message
            assert "\x1b" not in message and "\x07" not in message, repr(message)
            assert api.get("/health").status_code in (200, 204)
        log = (d.data_dir / "daemon.log").read_text(errors="replace")
        assert "started" in log and "\x1b" not in log, "the sandbox's escapes reached the log"
        assert d.proc.poll() is None
    finally:
        stop_daemon(d)
