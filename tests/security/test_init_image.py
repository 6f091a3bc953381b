"""Issue 33's first step: a sandbox's init runs from a file CRIU can name on restore (a private,
content-named copy in the state dir, no longer a memfd) and leads its own session, and that
file is as safe from the sandbox as the sealed memfd was (the runc CVE-2019-5736 class: a
sandbox root rewriting the binary every other sandbox's init runs)."""
from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from helpers import ABX_BIN, abx, sandbox


def init_exe(daemon, sandbox_id: str) -> Path:
    pid = (daemon.data_dir / "sandboxes" / sandbox_id / "init").read_text().split()[0]
    return Path(os.readlink(f"/proc/{pid}/exe"))


def test_init_runs_from_a_content_named_read_only_copy(daemon):
    built = Path(ABX_BIN).with_name("abx-init").read_bytes()
    with sandbox(daemon) as sandbox_id:
        exe = init_exe(daemon, sandbox_id)
        assert exe.parent == daemon.data_dir / "sandboxes", exe
        assert exe.name.startswith("abx-init-") and "memfd" not in str(exe), exe
        st = exe.stat()
        assert stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid(), st
        assert stat.S_IMODE(st.st_mode) == 0o555, oct(st.st_mode)
        assert hashlib.sha256(exe.read_bytes()).digest() == hashlib.sha256(built).digest()
        pid = (daemon.data_dir / "sandboxes" / sandbox_id / "init").read_text().split()[0]
        assert Path(f"/proc/{pid}/comm").read_text() == "abx-init\n"  # as ps shows it
        # A second sandbox runs the very same file.
        with sandbox(daemon) as other:
            assert init_exe(daemon, other) == exe


def test_sandbox_root_cannot_touch_init_and_init_leads_its_session(daemon):
    with sandbox(daemon) as sandbox_id:
        exe = init_exe(daemon, sandbox_id)
        before = hashlib.sha256(exe.read_bytes()).hexdigest()
        r = abx(daemon, "exec", "--user", "root", sandbox_id, "--", "sh", "-c",
                "echo x >> /proc/1/exe && echo wrote-exe;"
                " cat /proc/1/exe > /dev/null 2>&1 && echo read-exe;"
                " cut -d' ' -f6 /proc/1/stat")
        assert "wrote-exe" not in r.stdout and "read-exe" not in r.stdout, r.stdout + r.stderr
        assert r.stdout.split()[-1] == "1", r.stdout  # init's session is its own (pid 1)
        assert hashlib.sha256(exe.read_bytes()).hexdigest() == before
