"""Issue 31, loose end: an idle daemon held 79 threads, 64 of them the long lane's (code
executions, builds), started whether or not any such work ever came. The lane now starts a
thread when its work outnumbers its threads (test_blocking_lanes runs ten executions at once
on it), and the short lane (creates, kills, file operations; 8 at most) alike, so an idle
daemon holds a few threads: its io threads, the DNS forwarder's, the proxy's acceptor, the
reaper (7 here; 15 while the short lane started its 8 at once)."""
from __future__ import annotations

from pathlib import Path

IDLE_MOST = 12


def test_an_idle_daemon_holds_no_long_lane_threads(own_daemon):
    d = own_daemon["d"]
    with d.api() as api:
        assert api.get("/sandboxes").status_code == 200
    threads = len(list(Path(f"/proc/{d.proc.pid}/task").iterdir()))
    assert threads <= IDLE_MOST, f"an idle daemon runs {threads} threads"
