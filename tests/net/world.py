"""The networking tests' private internet (world.sh) and a real daemon running inside it.

The daemon runs in the world's "daemon" namespace, whose only route leads to the world's
"internet" namespace; the test process reaches its API through a bridge of two socat
processes and a unix socket (host 127.0.0.1:P → unix socket → 127.0.0.1:P inside the
daemon namespace), so the host never sends a packet into the world, nor the world out."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from harness import Daemon, private_state_dir, start_daemon, stop_daemon
from helpers import sandbox_host_pids

WORLD_SH = Path(__file__).resolve().with_name("world.sh")
TOOLS = ("ip", "nsenter", "unshare", "openssl", "dnsmasq", "microsocks", "iperf3", "socat",
         "nft", "curl")

# The addresses world.sh serves (see its header).
DAEMON_ADDR = "192.0.2.2"
GATEWAY_ADDR = "192.0.2.1"
WWW = "203.0.113.10"     # www.example.test, example.test; echo on 7, iperf3 on 5201
API = "203.0.113.11"     # api.example.test, *.wild.example.test
SOCKS = "203.0.113.20"   # :1080 open, :1081 abx/secret
PRIVATE = "10.99.0.1"    # private.example.test
METADATA = "169.254.169.254"
CGNAT = "100.64.0.1"
IETF = "192.0.0.8"           # IETF protocol assignments (RFC 6890)
BENCHMARK = "198.18.0.1"     # benchmarking; proxies' fake-IP DNS answers
DNS_SERVERS = ("8.8.8.8", "1.1.1.1")
SERVED = (*DNS_SERVERS, WWW, API, SOCKS, PRIVATE, METADATA, CGNAT, IETF, BENCHMARK)
SOCKS_USER, SOCKS_PASSWORD = "abx", "secret"


def missing() -> str | None:
    """Why the world cannot be made here, or None."""
    if os.geteuid() != 0:
        return "the test world needs root (network namespaces)"
    absent = [t for t in TOOLS if shutil.which(t) is None and not Path("/usr/sbin", t).exists()]
    if absent:
        return f"the test world needs {', '.join(absent)} (make deps)"
    probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"`ip netns` does not work here: {probe.stderr.strip()}"
    return None


@dataclass
class World:
    name: str
    state: Path

    @property
    def daemon_ns(self) -> str:
        return f"{self.name}-d"

    @property
    def internet_ns(self) -> str:
        return f"{self.name}-i"

    @property
    def ca_file(self) -> Path:
        """The CA that signed every HTTPS server of the world."""
        return self.state / "ca.crt"

    def netns_inode(self, ns: str) -> int:
        return os.stat(f"/run/netns/{ns}").st_ino

    def in_daemon_ns(self, *cmd: str) -> list[str]:
        """CMD as it runs in the daemon namespace (its own /sys, the world's resolv.conf)."""
        return [str(WORLD_SH), "exec", self.name, "--", *cmd]

    def run_in(self, ns: str, *cmd: str, timeout: float = 15) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def log(self, server: str) -> str:
        """What a world server logged: http, dnsmasq, socks, socks-auth, iperf3."""
        return (self.state / f"{server}.log").read_text(errors="replace")

    def requests(self) -> list[dict]:
        """Every request the world's web servers answered, as they saw it (world_server.py)."""
        return [json.loads(line) for line in self.log("http").splitlines()
                if line.startswith("{") and '"method"' in line]

    def server_pids(self) -> dict[str, int]:
        pids = {}
        for line in (self.state / "pids").read_text().splitlines():
            pid, name = line.split()
            pids[name] = int(pid)
        return pids


def world_up(name: str | None = None) -> World:
    name = name or f"abxw{os.getpid()}"
    r = subprocess.run([str(WORLD_SH), "up", name], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise RuntimeError(f"world.sh up {name} failed:\n{r.stderr}")
    return World(name=name, state=Path(r.stdout.strip().splitlines()[-1]))


def world_down(world: World) -> None:
    r = subprocess.run([str(WORLD_SH), "down", world.name], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise RuntimeError(f"world.sh down {world.name} failed:\n{r.stderr}")


@dataclass
class WorldDaemon(Daemon):
    """A harness Daemon whose url is the host end of the bridge into the world."""
    world: World | None = None
    bridge: list[subprocess.Popen] = field(default_factory=list)
    netns_before: frozenset[str] = frozenset()
    sandbox_ids: list[str] = field(default_factory=list)  # every sandbox a test made


def free_host_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening_on(port: int) -> bool:
    """Whether something listens on 127.0.0.1:port of the test's own namespace (no connect:
    /proc/net/tcp lists the listening sockets)."""
    want = f"0100007F:{port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == want and fields[3] == "0A":
            return True
    return False


def start_bridge(world: World, sock: Path) -> tuple[int, list[subprocess.Popen]]:
    """Host 127.0.0.1:P → unix socket → 127.0.0.1:P in the daemon namespace, P the same on
    both sides so that the address the daemon knows itself by is the one tests use."""
    for _ in range(10):
        port = free_host_port()
        host = subprocess.Popen(
            ["socat", f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork", f"UNIX-CONNECT:{sock}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        deadline = time.monotonic() + 5
        while host.poll() is None and not listening_on(port) and time.monotonic() < deadline:
            time.sleep(0.02)
        if host.poll() is None and listening_on(port):
            break
        stop_process(host)  # another process took the port first: another one
    else:
        raise RuntimeError("no free port for the host end of the bridge")
    inside = subprocess.Popen(
        ["nsenter", f"--net=/run/netns/{world.daemon_ns}", "socat",
         f"UNIX-LISTEN:{sock},fork,unlink-early,mode=600", f"TCP:127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    deadline = time.monotonic() + 5
    while not sock.exists() and inside.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if not sock.exists():
        stop_process(host)
        stop_process(inside)
        raise RuntimeError("the bridge's socat in the daemon namespace did not start")
    return port, [host, inside]


def stop_process(proc: subprocess.Popen) -> None:
    """Stops a process this module started, and the connection children a socat forked
    (its own session, started for the bridge alone)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def start_daemon_in_world(world: World, data_dir: Path, extra_args: tuple[str, ...] = (),
                          env: dict[str, str] | None = None,
                          wrap_after: tuple[str, ...] = (),
                          shared_templates: bool = False) -> WorldDaemon:
    """`abx serve` inside the world's daemon namespace, told to trust the world's CA for
    upstream TLS (ABX_UPSTREAM_CA_FILE); its API reached through the bridge. `wrap_after`
    execs the daemon once in the namespace (setpriv: a daemon without root). With
    `shared_templates`, the templates the tests built outside the world (the world has no
    Debian mirror to build from)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    netns_before = frozenset(os.listdir("/run/netns"))
    port, bridge = start_bridge(world, data_dir.parent / "api.sock")
    try:
        d = start_daemon(data_dir, shared_templates=shared_templates,
                         extra_args=("--warm-pool", "0", *extra_args),
                         env={"ABX_UPSTREAM_CA_FILE": str(world.ca_file), **(env or {})},
                         wrap=(*world.in_daemon_ns(), *wrap_after), listen=f"127.0.0.1:{port}")
    except BaseException:
        for proc in bridge:
            stop_process(proc)
        raise
    url = f"http://127.0.0.1:{port}"
    return WorldDaemon(url=url, api_key=d.api_key, data_dir=d.data_dir, proc=d.proc, world=world,
                       bridge=bridge, netns_before=netns_before)


def stop_daemon_in_world(d: WorldDaemon) -> None:
    try:
        stop_daemon(d)
    finally:
        for proc in d.bridge:
            stop_process(proc)
        (d.data_dir.parent / "api.sock").unlink(missing_ok=True)


@contextlib.contextmanager
def daemon_in_world(world: World, prefix: str = "abx-net-", config: dict | None = None,
                    prepare: Callable[[Path], None] | None = None,
                    more_leftovers: Callable[[], list[str]] = list,
                    **start: Any) -> Iterator[WorldDaemon]:
    """A daemon in the world's daemon namespace (its data dir's config.json: `config`;
    `prepare` gets the data dir first); stopping it must leave nothing in the world
    (links, nftables, namespaces, processes, and `more_leftovers`)."""
    home = private_state_dir(prefix)
    state = home / "state"
    state.mkdir()
    if config is not None:
        (state / "config.json").write_text(json.dumps(config))
    if prepare:
        prepare(home)
    d = start_daemon_in_world(world, state, **start)
    try:
        yield d
    finally:
        stop_daemon_in_world(d)
        left = leftovers(d) + more_leftovers()
        if not left:
            shutil.rmtree(home, ignore_errors=True)
        assert not left, f"the stopped daemon left (see {home}):\n" + "\n".join(left)


def healthy(d: Daemon) -> bool:
    return d.proc.poll() is None and httpx.get(d.url + "/health", timeout=10).is_success


def leftovers(d: WorldDaemon, timeout: float = 10) -> list[str]:
    """What a stopped daemon left in its world: links other than the world's own in the
    daemon namespace, any nftables ruleset there, network namespaces, processes in the
    daemon namespace, processes of its sandboxes. The kernel frees a dead sandbox's network
    namespace (and so its veth) in the background: what is left is asked again until
    `timeout` before it counts."""
    deadline = time.monotonic() + timeout
    while (found := leftovers_now(d)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def is_zombie(pid: str) -> bool:
    """Dead, waiting for this machine's init to reap it (a container's init may be slow)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2:].startswith("Z")


def leftovers_now(d: WorldDaemon) -> list[str]:
    assert d.world is not None and d.proc.poll() is not None, "the daemon still runs"
    world, found = d.world, []
    links = world.run_in(world.daemon_ns, "ip", "-o", "link", "show")
    names = {line.split(":")[1].strip().split("@")[0] for line in links.stdout.splitlines()}
    if extra := names - {"lo", "wan0"}:
        found.append(f"links in the daemon namespace: {sorted(extra)}")
    rules = world.run_in(world.daemon_ns, "nft", "list", "ruleset")
    if rules.stdout.strip():
        found.append(f"nftables rules in the daemon namespace:\n{rules.stdout}")
    # Other test runs' worlds (abxw<pid>-*) come and go on a shared machine: not this daemon's.
    if netns := {n for n in frozenset(os.listdir("/run/netns")) - d.netns_before
                 if not n.startswith("abxw")}:
        found.append(f"network namespaces: {sorted(netns)}")
    pids = [pid for pid in subprocess.run(["ip", "netns", "pids", world.daemon_ns],
                                          capture_output=True, text=True).stdout.split()
            if not is_zombie(pid)]
    if pids:
        found.append(f"processes in the daemon namespace: {pids}")
    for sandbox_id in d.sandbox_ids:
        if sandbox_pids := sandbox_host_pids(sandbox_id):
            found.append(f"processes of sandbox {sandbox_id}: {sandbox_pids}")
    return found
