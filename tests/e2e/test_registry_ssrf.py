"""A registry reference is any HOST[:PORT] an API caller names, and skopeo runs in the
daemon's own network namespace (the host's, as root): a registry on loopback, the host's
private networks or the cloud metadata address (which no sandbox may reach either) is refused
before skopeo dials it, unless an admin opened it (registries.openPrivate)."""
from __future__ import annotations

import shutil
import socket
import threading

import pytest
from harness import start_daemon, stop_daemon
from helpers import stop_listening

pytestmark = [pytest.mark.offline,
              pytest.mark.skipif(not shutil.which("skopeo"), reason="skopeo is not installed")]

BANNER = b"SSH-2.0-host-only-service-7f3a\r\n"


@pytest.fixture
def host_service():
    """A service on the host's loopback that only the host should see (an SSH banner)."""
    listener = socket.create_server(("127.0.0.1", 0))
    stopping = threading.Event()

    def serve() -> None:
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                conn.sendall(BANNER)
                conn.recv(65536)
            except OSError:
                pass
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stopping.set()
    stop_listening(listener, thread)


def test_a_pull_does_not_reach_or_quote_the_hosts_own_services(state_dir, host_service):
    d = start_daemon(state_dir / "state", shared_templates=False, extra_args=("--warm-pool", "0"))
    try:
        with d.api() as api:
            r = api.post("/abx/v1/templates/probe/pull",
                         json={"ref": f"127.0.0.1:{host_service}/x/y:1", "insecure": True},
                         timeout=120)
            text = r.text
            assert "host-only-service" not in text, \
                f"the host's loopback service answered through the pull: {text[-400:]}"
            # Refused before skopeo runs, in the job's outcome line.
            assert '"errno":13' in text and "openPrivate" in text, text
            for ref in ("localhost:1/x/y:1", "169.254.169.254/x/y:1", "[::1]:1/x/y:1"):
                r = api.post("/abx/v1/templates/probe/pull", json={"ref": ref}, timeout=60)
                assert "openPrivate" in r.text, (ref, r.text)
            assert api.get("/health").status_code in (200, 204)
        assert d.proc.poll() is None
    finally:
        stop_daemon(d)
