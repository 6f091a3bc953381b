"""An uploaded build context is the caller's: its Sandboxfile may be a FIFO (reading it
blocked the build forever, holding its upload dir) or a sparse file of a terabyte that the
tar describes in a few hundred bytes (reading it filled the daemon's memory). Either build
ends with a one-line error naming the Sandboxfile, and the daemon stays up."""
from __future__ import annotations

import io
import tarfile

import httpx
import pytest
from harness import start_daemon, stop_daemon

pytestmark = pytest.mark.offline  # the build is refused before anything is built

# Far above the few ms a refusal takes: tells "ends" from "hangs".
BUILD_BOUND = 120
SPARSE_SIZE = 1 << 40


def fifo_context() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("Sandboxfile")
        info.type, info.mode = tarfile.FIFOTYPE, 0o644
        tar.addfile(info)
    return out.getvalue()


def sparse_context() -> bytes:
    """A PAX 1.0 sparse member: its map (one byte, at the end) is all the data it carries."""
    sparse_map = f"1\n{SPARSE_SIZE - 1}\n1\n".encode().ljust(512, b"\0")
    data = sparse_map + b"x"
    info = tarfile.TarInfo("GNUSparseFile.0/Sandboxfile")
    info.size, info.mode = len(data), 0o644
    info.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                        "GNU.sparse.name": "Sandboxfile",
                        "GNU.sparse.realsize": str(SPARSE_SIZE)}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    state = tmp_path_factory.mktemp("build-context")
    daemon = start_daemon(state / "state", shared_templates=False,
                          extra_args=("--templates-dir", str(state / "templates"),
                                      "--warm-pool", "0"))
    yield daemon
    stop_daemon(daemon)


@pytest.mark.parametrize("context, why", [(fifo_context, "not a regular file"),
                                           (sparse_context, "1 MiB")], ids=["fifo", "sparse"])
def test_a_sandboxfile_that_is_a_fifo_or_huge_is_refused(d, context, why):
    with d.api() as api:
        r = api.post("/abx/v1/templates/hostile-context/build", content=context(),
                     headers={"Content-Type": "application/x-tar"}, timeout=BUILD_BOUND)
    assert '"error"' in r.text, r.text
    assert "Sandboxfile" in r.text and why in r.text, r.text
    assert d.proc.poll() is None, "the daemon died"
    assert httpx.get(d.url + "/health", timeout=10).status_code == 204
