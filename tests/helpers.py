"""Helpers for tests that drive the real `abx` binary."""
from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Awaitable, Callable, Iterator, TypeVar
from urllib.parse import urlparse

from harness import ABX_BIN, Daemon, start_daemon, stop_daemon

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, what: str = "the condition",
               interval: float = 0.05) -> T:
    """Polls `predicate` until it returns something truthy and returns that; fails the test
    naming `what` when `timeout` seconds pass first. For conditions a test waits on (a
    process gone, a server up), instead of a fixed sleep that is too short under load and
    too long otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def stop_listening(listener: socket.socket, *threads: threading.Thread) -> None:
    """Closes a test's listening socket that another thread may be blocked accepting on.
    close() alone does not wake that accept: the thread keeps the port listening, or, when
    it had not yet entered the call, accepts on whatever socket reuses the descriptor next
    (another test's server, whose client then reads this one's answer). shutdown() wakes it
    (EINVAL on Linux); the join makes sure it is gone before the descriptor is freed."""
    try:
        listener.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    for thread in threads:
        thread.join(10)
    listener.close()


async def wait_until_async(predicate: Callable[[], Awaitable[T]], timeout: float = 10.0,
                           what: str = "the condition", interval: float = 0.05) -> T:
    """wait_until for a coroutine predicate, polled without blocking the event loop."""
    deadline = time.monotonic() + timeout
    while True:
        result = await predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(interval)


def abx(daemon: Daemon, *args: str, input: str | bytes | None = None, timeout: float = 60,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `abx ARGS...` against `daemon`; returns the completed process (text mode)."""
    full_env = daemon.env()
    if env:
        full_env.update(env)
    return subprocess.run([str(ABX_BIN), *args], input=input, capture_output=True,
                          text=not isinstance(input, bytes), timeout=timeout, env=full_env,
                          stdin=None if input is not None else subprocess.DEVNULL)


def create(daemon: Daemon, *extra: str, template: str = "base") -> str:
    r = abx(daemon, "create", "--template", template, *extra)
    assert r.returncode == 0, r.stderr
    sandbox_id = r.stdout.strip()
    assert sandbox_id, "create printed no id"
    return sandbox_id


@contextmanager
def sandbox(daemon: Daemon, template: str = "base") -> Iterator[str]:
    """A sandbox of `template`, killed when the block ends."""
    sandbox_id = create(daemon, template=template)
    try:
        yield sandbox_id
    finally:
        abx(daemon, "kill", sandbox_id, "--yes")


def sandbox_host_pids(sandbox_id: str) -> list[int]:
    """Host pids whose cgroup path names the sandbox (any controller)."""
    pids = []
    for status in Path("/proc").glob("[0-9]*/cgroup"):
        try:
            if sandbox_id in status.read_text():
                pids.append(int(status.parent.name))
        except OSError:
            continue
    return pids


def envd_headers(sb: dict) -> dict[str, str]:
    """Headers that reach the envd plane of sandbox `sb` (a create's JSON) through the
    daemon, as E2B's SDK sends them."""
    headers = {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": "49983",
               "Connect-Protocol-Version": "1"}
    if sb.get("envdAccessToken"):
        headers["X-Access-Token"] = sb["envdAccessToken"]
    return headers


def _port_open_through_proxy(d: Daemon, sandbox_id: str, port: int) -> bool:
    """Whether the port proxy reaches a listener on `port` (any answer but the daemon's
    own "port is not open"; the server need not speak HTTP well)."""
    url = urlparse(d.url)
    try:
        with socket.create_connection((url.hostname, url.port), timeout=5) as s:
            s.sendall(f"GET / HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: {sandbox_id}\r\n"
                      f"E2b-Sandbox-Port: {port}\r\nConnection: close\r\n\r\n".encode())
            return b"port is not open" not in s.recv(65536)
    except OSError:
        return False


@contextmanager
def host_sandbox_serving(state_dir: Path, script: str, port: int = 8000,
                         extra_args: tuple[str, ...] = ()) -> Iterator[tuple[Daemon, str]]:
    """A daemon of its own (`abx serve` with `extra_args`) with a `host` sandbox running the
    Python `script` in the background, once `port` answers through the port proxy: (daemon,
    sandbox id). The daemon is stopped afterwards, also when the server never came up."""
    d = start_daemon(state_dir / "state", shared_templates=False,
                     extra_args=("--warm-pool", "0", *extra_args))
    try:
        with d.api() as api:
            r = api.post("/sandboxes", json={"templateID": "host"})
            assert r.status_code == 201, r.text
        sandbox_id = r.json()["sandboxID"]
        (state_dir / "server.py").write_text(script)
        subprocess.run([str(ABX_BIN), "upload", sandbox_id, str(state_dir / "server.py"),
                        "/tmp/server.py"], env=d.env(), check=True, timeout=60)
        subprocess.run([str(ABX_BIN), "exec", sandbox_id, "--", "sh", "-c",
                        "nohup python3 /tmp/server.py >/dev/null 2>&1 &"],
                       env=d.env(), check=True, timeout=60)
        wait_until(lambda: _port_open_through_proxy(d, sandbox_id, port), timeout=30,
                   what="the server in the sandbox")
        yield d, sandbox_id
    finally:
        stop_daemon(d)


def make_test_ca(work: Path, name: str = "abx test CA") -> tuple[Path, Path]:
    """A throwaway CA (certificate, key) in `work`, made by openssl."""
    cert, key = work / "ca.crt", work / "ca.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", f"/CN={name}",
                    "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def make_server_cert(work: Path, ca: tuple[Path, Path], names: list[str],
                     stem: str = "server") -> tuple[Path, Path]:
    """A server certificate (certificate, key) signed by `ca` for `names` (DNS names, or
    IP:addr entries)."""
    cert, key, csr, ext = (work / f"{stem}.crt", work / f"{stem}.key", work / f"{stem}.csr",
                           work / f"{stem}.ext")
    subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-subj", f"/CN={names[0]}",
                    "-keyout", str(key), "-out", str(csr)],
                   check=True, capture_output=True, timeout=60)
    alt = ",".join(n if n.startswith("IP:") else f"DNS:{n}" for n in names)
    ext.write_text("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                   f"extendedKeyUsage=serverAuth\nsubjectAltName={alt}\n")
    subprocess.run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca[0]), "-CAkey",
                    str(ca[1]), "-set_serial", "0x" + os.urandom(16).hex(), "-days", "2",
                    "-extfile", str(ext), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def cgroup_instance_name(sandboxes_dir: Path) -> str:
    """A runtime's cgroup instance: FNV-1a of its state dir (src/runtime/cgroup.cc)."""
    value = 0xCBF29CE484222325
    for byte in os.path.normpath(str(sandboxes_dir)).encode():
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"[:12]


def veth_prefix(sandboxes_dir: Path) -> str | None:
    """A runtime's veths' names: "ab" + its pool's first two octets in hex
    (src/runtime/net_pool.cc); None before it has a pool."""
    pool_file = sandboxes_dir / "network-pool"
    if not pool_file.exists():
        return None
    pool = ipaddress.ip_network(pool_file.read_text().strip())
    return f"ab{int(pool.network_address) >> 16:04x}-"


def cgroup_dirs() -> list[Path]:
    """Per-sandbox cgroup dirs of every abx runtime on the host (v1 and v2)."""
    root = Path("/sys/fs/cgroup")
    return [p for p in [*root.glob("*/abx/*/*"), *root.glob("abx/*/*")] if p.is_dir()]
