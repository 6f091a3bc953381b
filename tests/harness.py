"""A real `abx serve` daemon in a private data dir, for tests and benchmarks."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
ABX_BIN = Path(os.environ.get("ABX_BIN", REPO / "build" / "abx"))
# Every test daemon shares one templates dir, so `base` and
# `code-interpreter-v1` are built once per machine (template builds take a
# file lock) instead of once per daemon. The template tests use their own.
SHARED_TEMPLATES = Path(os.environ.get("ABX_TEST_TEMPLATES", REPO / "build" / "test-templates"))
# The mmdebstrap tars, keyed by spec hash, survive `make clean` of templates.
os.environ.setdefault("ABX_CACHE_DIR", str(REPO / "build" / "template-cache"))
os.environ.setdefault("ABX_TEMPLATE_SPECS", str(REPO / "templates"))


@dataclass
class Daemon:
    url: str
    api_key: str
    data_dir: Path
    proc: subprocess.Popen

    def api(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"X-API-KEY": self.api_key}, timeout=30)

    def env(self) -> dict[str, str]:
        """Environment for running `abx` against this daemon."""
        env = dict(os.environ)
        env.update(
            ABX_SANDBOX_API_URL=self.url,
            ABX_SANDBOX_API_KEY=self.api_key,
            ABX_STATE_DIR=str(self.data_dir),
            ABX_CONFIG_DIR=str(self.data_dir / "config"),
        )
        return env


def start_daemon(data_dir: Path, timeout: float = 15.0, shared_templates: bool = True,
                 extra_args: tuple[str, ...] = (), env: dict[str, str] | None = None,
                 open_files: int | None = None, binary: Path | None = None,
                 wrap: tuple[str, ...] = (), listen: str = "127.0.0.1:0") -> Daemon:
    """`env` is added to the daemon's environment; `open_files` sets its soft and hard
    RLIMIT_NOFILE (the daemon raises soft to hard, so both); `binary` runs another abx
    (the bench's baseline); `wrap` is a command that execs the daemon's command line
    given after it (so proc.pid stays the daemon's), e.g. into another network namespace."""
    data_dir.mkdir(parents=True, exist_ok=True)
    addr_file = data_dir / "daemon.addr"
    addr_file.unlink(missing_ok=True)
    log = open(data_dir / "daemon.log", "ab")
    templates = ["--templates-dir", str(SHARED_TEMPLATES)] if shared_templates else []
    # prlimit(1) execs the daemon: proc.pid stays the daemon's pid.
    limit = ["prlimit", f"--nofile={open_files}:{open_files}"] if open_files else []
    proc = subprocess.Popen(
        [*wrap, *limit, str(binary or ABX_BIN), "serve", "--listen", listen, "--data-dir", str(data_dir),
         "--address-file", str(addr_file), "--log-level", "debug", *templates, *extra_args],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, **env} if env else None)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"daemon exited with {proc.returncode}; see {data_dir / 'daemon.log'}")
        if addr_file.exists() and addr_file.read_text().endswith("\n"):
            url = addr_file.read_text().strip()
            key = (data_dir / "api_key").read_text().strip()
            return Daemon(url=url, api_key=key, data_dir=data_dir, proc=proc)
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("daemon did not start in time")


def kill_every_teams_sandboxes(d: Daemon, teams: tuple[str, ...] = ()) -> None:
    """A key sees only its team's sandboxes, and a test may have revoked the key that made
    some: the admin key makes a short-lived key per team (those with keys, and `teams`,
    whose last key a test may have revoked) to find and kill them all."""
    with d.api() as admin:
        keys = admin.get("/abx/v1/keys")
        known = {k["team"] for k in keys.json()["keys"]} if keys.status_code == 200 else set()
        for team in known | {"default", *teams}:
            made = admin.post("/abx/v1/keys", json={"team": team, "name": "harness cleanup"})
            if made.status_code != 201:
                continue
            with httpx.Client(base_url=d.url, headers={"X-API-KEY": made.json()["key"]},
                              timeout=30) as api:
                # A page at a time (E2B's list pages at 100): kill the page, then list again.
                for _ in range(100):
                    page = api.get("/v2/sandboxes", params={"limit": 100}).json()
                    if not page:
                        break
                    for sb in page:
                        api.delete(f"/sandboxes/{sb['sandboxID']}")
            admin.delete(f"/abx/v1/keys/{made.json()['id']}")


def stop_daemon(d: Daemon, kill_sandboxes: bool = True, teams: tuple[str, ...] = ()) -> None:
    if kill_sandboxes and d.proc.poll() is None:
        kill_every_teams_sandboxes(d, teams)
    if d.proc.poll() is None:
        d.proc.send_signal(signal.SIGTERM)
        try:
            d.proc.wait(10)
        except subprocess.TimeoutExpired:
            d.proc.kill()
            d.proc.wait()


def private_state_dir(prefix: str = "abx-test-") -> Path:
    """A short dir under /tmp: the sandboxes' control sockets live under it
    and must fit in a unix socket path (108 bytes)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    path.chmod(0o755)
    return path


def open_loopback_registries(data_dir: Path) -> None:
    """Lets the daemon at `data_dir` reach registries on 127.0.0.0/8 (the tests' own
    docker-registry): its config's registries.openPrivate, written before it starts."""
    data_dir.mkdir(parents=True, exist_ok=True)
    config_file = data_dir / "config.json"
    config = json.loads(config_file.read_text()) if config_file.exists() else {}
    config.setdefault("registries", {})["openPrivate"] = ["127.0.0.0/8"]
    config_file.write_text(json.dumps(config))
