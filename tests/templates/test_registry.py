"""Templates through OCI registries: Debian's docker-registry (distribution 2.8) on a
loopback port, with and without htpasswd auth (2.8 takes basic auth over plain HTTP),
and skopeo to check that what `abx template push` sends is an image other tools read and
that `abx template pull` takes images other tools pushed. Nothing leaves the machine."""
from __future__ import annotations

import base64
import crypt  # deprecated, still in 3.11: bcrypt for htpasswd without a package
import http.server
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from harness import Daemon, open_loopback_registries, private_state_dir, start_daemon, stop_daemon
from helpers import abx, make_server_cert, make_test_ca, sandbox, stop_listening
from test_import import (
    TAG,
    add_layer,
    assert_is_the_image,
    lower_layer,
    probe,
    umoci,
    upper_layer,
)

REGISTRY_BIN = "/usr/bin/docker-registry"
TIMEOUT = 300
USER, PASSWORD = "alice", "s3cret-pw"
IDENTITY_TOKEN = "refresh-me-0123"

pytestmark = pytest.mark.skipif(
    not (Path(REGISTRY_BIN).exists() and shutil.which("skopeo")),
    reason="docker-registry and skopeo are needed: run scripts/install-deps.sh")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Registry:
    host: str  # 127.0.0.1:PORT
    storage: Path
    proc: subprocess.Popen


def start_registry(work: Path, auth: bool, auth_config: str | None = None,
                   tls: tuple[Path, Path] | None = None) -> Registry:
    """`auth`: htpasswd basic auth; `auth_config`: another `auth:` section (token auth);
    `tls`: (certificate, key) it serves HTTPS with."""
    port = free_port()
    work.mkdir(parents=True, exist_ok=True)
    config = [
        "version: 0.1",
        "log:\n  level: warn",
        f"storage:\n  filesystem:\n    rootdirectory: {work / 'data'}\n  delete:\n    enabled: true",
        f"http:\n  addr: 127.0.0.1:{port}\n  secret: test-only-secret" +
        (f"\n  tls:\n    certificate: {tls[0]}\n    key: {tls[1]}" if tls else ""),
    ]
    if auth:
        hashed = crypt.crypt(PASSWORD, crypt.mksalt(crypt.METHOD_BLOWFISH))
        (work / "htpasswd").write_text(f"{USER}:{hashed}\n")
        config.append(f"auth:\n  htpasswd:\n    realm: abx-test\n    path: {work / 'htpasswd'}")
    if auth_config:
        config.append(auth_config)
    (work / "config.yml").write_text("\n".join(config) + "\n")
    with open(work / "registry.log", "ab") as log:
        proc = subprocess.Popen([REGISTRY_BIN, "serve", str(work / "config.yml")], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        assert proc.poll() is None, (work / "registry.log").read_text()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return Registry(f"127.0.0.1:{port}", work / "data", proc)
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("docker-registry did not start")


def stop_registry(registry: Registry) -> None:
    registry.proc.terminate()
    try:
        registry.proc.wait(10)
    except subprocess.TimeoutExpired:
        registry.proc.kill()
        registry.proc.wait()


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Iterator[Registry]:
    r = start_registry(tmp_path_factory.mktemp("registry"), auth=False)
    yield r
    stop_registry(r)


@pytest.fixture(scope="module")
def auth_registry(tmp_path_factory) -> Iterator[Registry]:
    r = start_registry(tmp_path_factory.mktemp("auth-registry"), auth=True)
    yield r
    stop_registry(r)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


class TokenServer:
    """The registry's OCI bearer-token service (distribution's `auth: token`): a GET of the
    realm with basic auth answers a JWT granting the scopes asked for, signed RS256 with a
    self-signed certificate the registry trusts (openssl makes and signs: no package)."""

    SERVICE, ISSUER = "abx-test-registry", "abx-test-issuer"

    def __init__(self, work: Path):
        self.key, self.cert = work / "token.key", work / "token.crt"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=abx-test-token", "-keyout", self.key, "-out", self.cert],
                       check=True, capture_output=True, timeout=60)
        der = subprocess.run(["openssl", "x509", "-in", self.cert, "-outform", "DER"],
                             check=True, capture_output=True, timeout=60).stdout
        self.x5c = base64.b64encode(der).decode()
        self.requests: list[tuple[str | None, list[str]]] = []  # (user, scopes) asked
        token_server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                self.answer(token_server.user(self.headers.get("Authorization", "")), query)

            def do_POST(self) -> None:  # OAuth2: an identity token as the refresh token
                length = int(self.headers.get("Content-Length", "0"))
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                known = form.get("refresh_token") == [IDENTITY_TOKEN]
                self.answer(USER if known and form.get("grant_type") == ["refresh_token"]
                            else None, form)

            def answer(self, user: str | None, query: dict[str, list[str]]) -> None:
                scopes = [s for value in query.get("scope", []) for s in value.split(" ")]
                token_server.requests.append((user, scopes))
                if user is None:
                    self.send_response(401)
                    self.end_headers()
                    return
                body = json.dumps({"token": token_server.token(user, scopes),
                                   "expires_in": 300}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.realm = f"http://127.0.0.1:{self.server.server_address[1]}/token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def user(authorization: str) -> str | None:
        if not authorization.startswith("Basic "):
            return None
        user, _, password = base64.b64decode(authorization[6:]).decode().partition(":")
        return user if (user, password) == (USER, PASSWORD) else None

    def token(self, user: str, scopes: list[str]) -> str:
        access = []
        for scope in scopes:  # type:name:actions, e.g. repository:private/src:pull,push
            kind, rest = scope.split(":", 1)
            name, actions = rest.rsplit(":", 1)
            access.append({"type": kind, "name": name, "actions": actions.split(",")})
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self.x5c]}
        claims = {"iss": self.ISSUER, "sub": user, "aud": self.SERVICE, "iat": now,
                  "nbf": now - 10, "exp": now + 300, "jti": str(time.monotonic_ns()),
                  "access": access}
        signed = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key],
                                   input=signed.encode(), check=True, capture_output=True,
                                   timeout=60).stdout
        return f"{signed}.{b64url(signature)}"

    def auth_config(self) -> str:
        return (f"auth:\n  token:\n    realm: {self.realm}\n    service: {self.SERVICE}\n"
                f"    issuer: {self.ISSUER}\n    rootcertbundle: {self.cert}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def token_registry(tmp_path_factory) -> Iterator[tuple[Registry, TokenServer]]:
    work = tmp_path_factory.mktemp("token-registry")
    tokens = TokenServer(work)
    r = start_registry(work, auth=False, auth_config=tokens.auth_config())
    yield r, tokens
    stop_registry(r)
    tokens.close()


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    """test_import's two-layer busybox image (a whiteout in the second) as an OCI layout."""
    work = tmp_path_factory.mktemp("image")
    out = work / "layout"
    umoci("init", "--layout", out)
    umoci("new", "--image", f"{out}:{TAG}")
    add_layer(out, work / "bundle", lower_layer)
    add_layer(out, work / "bundle", upper_layer)
    umoci("config", "--image", f"{out}:{TAG}", "--config.env", "FOO=bar",
          "--config.workingdir", "/data", "--config.user", "0")
    return out


@pytest.fixture(scope="module")
def second_daemon() -> Iterator[Daemon]:
    """A daemon with an empty templates dir of its own: what it has came from a registry."""
    state = private_state_dir("abx-reg2-")
    open_loopback_registries(state / "state")
    d = start_daemon(state / "state", shared_templates=False)
    yield d
    stop_daemon(d)
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def source_template(template_daemon: Daemon, layout: Path) -> Iterator[str]:
    """The umoci image imported, then a Sandboxfile layer that deletes one of its files
    (an overlay whiteout in the layer, an OCI .wh. entry once pushed) and adds one, with a
    start command and its ready check (image labels once pushed)."""
    name = "reg-src-import"
    r = abx(template_daemon, "template", "import", str(layout), "--name", name,
            timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    context = template_daemon.data_dir / "reg-ctx"
    context.mkdir(exist_ok=True)
    (context / "Sandboxfile").write_text(
        f"FROM {name}\nRUN rm /etc/layer1.txt && echo built > /etc/built.txt\nENV BAR=baz\n"
        f"CMD echo up > /tmp/up; exec sleep 100000\nREADY {READY}\n")
    r = abx(template_daemon, "template", "build", str(context), "--name", "reg-src",
            timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    yield "reg-src"
    abx(template_daemon, "template", "rm", "reg-src")
    abx(template_daemon, "template", "rm", name)


READY = "test -f /tmp/up"


def skopeo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["skopeo", *args], check=False, capture_output=True, text=True, timeout=120)


def push(daemon: Daemon, name: str, ref: str, *extra: str) -> subprocess.CompletedProcess:
    return abx(daemon, "template", "push", name, ref, *extra, timeout=TIMEOUT)


def pull(daemon: Daemon, ref: str, name: str, *extra: str) -> subprocess.CompletedProcess:
    return abx(daemon, "template", "pull", ref, "--name", name, *extra, timeout=TIMEOUT)


def templates_dir(daemon: Daemon) -> Path:
    return daemon.data_dir / "templates"


def leftovers(daemon: Daemon) -> list[str]:
    """What a failed pull must not leave: upload or staging dirs."""
    return sorted(p.name for p in templates_dir(daemon).iterdir() if p.name.startswith(".building"))


def layer_ids(daemon: Daemon) -> set[str]:
    layers = templates_dir(daemon) / ".layers"
    return {p.name for p in layers.iterdir()} if layers.exists() else set()


def listed(daemon: Daemon) -> set[str]:
    r = abx(daemon, "template", "list", "--json")
    return {t["name"] for t in json.loads(r.stdout)}


def daemon_alive(daemon: Daemon) -> None:
    assert daemon.proc.poll() is None
    with daemon.api() as api:
        assert api.get("/health").status_code in (200, 204)


def test_pushed_template_is_an_image_skopeo_and_umoci_read(template_daemon, registry,
                                                          source_template, tmp_path):
    ref = f"{registry.host}/abx/src:1"
    r = push(template_daemon, source_template, ref, "--insecure")
    assert r.returncode == 0, r.stderr
    assert f"pushed {source_template}" in r.stdout

    inspected = skopeo("inspect", "--tls-verify=false", f"docker://{ref}")
    assert inspected.returncode == 0, inspected.stderr
    info = json.loads(inspected.stdout)
    assert "FOO=bar" in info["Env"] and "BAR=baz" in info["Env"]
    assert len(info["Layers"]) == 2, "the imported layer and the RUN step's layer"
    assert info["Labels"]["org.agent-sandbox.ready-cmd"] == READY
    assert "exec sleep" in info["Labels"]["org.agent-sandbox.start-cmd"]

    layout = tmp_path / "copied"
    copied = skopeo("copy", "--src-tls-verify=false", f"docker://{ref}", f"oci:{layout}:{TAG}")
    assert copied.returncode == 0, copied.stderr
    bundle = tmp_path / "bundle"
    umoci("unpack", "--rootless", "--image", f"{layout}:{TAG}", bundle)
    etc = bundle / "rootfs" / "etc"
    assert (etc / "built.txt").read_text() == "built\n"
    assert (etc / "layer2.txt").exists()
    assert not (etc / "layer1.txt").exists(), "the RUN's rm must travel as a whiteout"
    assert not any(p.name.startswith(".wh.") for p in etc.iterdir())
    config = json.loads((bundle / "config.json").read_text())
    assert config["process"]["cwd"] == "/data"
    daemon_alive(template_daemon)


def test_pull_on_a_daemon_with_no_templates_runs_the_image(template_daemon, second_daemon,
                                                            registry, source_template):
    ref = f"{registry.host}/abx/src:2"
    assert push(template_daemon, source_template, ref, "--insecure").returncode == 0
    assert "pulled-src" not in listed(second_daemon)
    r = pull(second_daemon, ref, "pulled-src", "--insecure")
    assert r.returncode == 0, r.stderr
    with sandbox(second_daemon, "pulled-src") as sandbox_id:
        r = abx(second_daemon, "exec", sandbox_id, "--", "sh", "-c",
                'cat /etc/built.txt; echo "$FOO $BAR"; pwd; cat /tmp/up; ls /etc')
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:4] == ["built", "bar baz", "/data", "up"], "the start command came along"

    assert "layer1.txt" not in lines and "layer2.txt" in lines
    info = json.loads(abx(second_daemon, "template", "inspect", "pulled-src").stdout)
    assert ref in info["source"]
    assert info["readyCmd"] == READY and "exec sleep" in info["startCmd"]
    abx(second_daemon, "template", "rm", "pulled-src")
    daemon_alive(second_daemon)


def test_pull_takes_an_image_skopeo_pushed(second_daemon, registry, layout):
    ref = f"{registry.host}/other/busybox:{TAG}"
    pushed = skopeo("copy", "--dest-tls-verify=false", f"oci:{layout}:{TAG}", f"docker://{ref}")
    assert pushed.returncode == 0, pushed.stderr
    r = pull(second_daemon, ref, "from-skopeo", "--insecure")
    assert r.returncode == 0, r.stderr
    try:
        assert_is_the_image(probe(second_daemon, "from-skopeo"))
    finally:
        abx(second_daemon, "template", "rm", "from-skopeo")


def test_sandboxfile_from_a_registry_image(second_daemon, registry, layout, tmp_path):
    ref = f"{registry.host}/other/busybox:{TAG}"
    assert skopeo("copy", "--dest-tls-verify=false", f"oci:{layout}:{TAG}",
                  f"docker://{ref}").returncode == 0
    (tmp_path / "Sandboxfile").write_text(f"FROM {ref}\nRUN echo on-top > /etc/top.txt\n")
    r = abx(second_daemon, "template", "build", str(tmp_path), "--name", "from-reg",
            "--insecure-registry", timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    try:
        seen = probe(second_daemon, "from-reg")
        assert_is_the_image(seen)
        assert "top.txt" in seen["etc"].split()
    finally:
        abx(second_daemon, "template", "rm", "from-reg")


def test_plain_http_needs_insecure(template_daemon, registry, source_template):
    r = push(template_daemon, source_template, f"{registry.host}/abx/no-tls:1")
    assert r.returncode != 0
    assert "--insecure" in r.stderr.strip().splitlines()[-1], r.stderr


def test_bad_reference_is_a_one_line_error(template_daemon, source_template):
    r = push(template_daemon, source_template, "not-a-registry-ref")
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) <= 2, r.stderr
    assert "HOST[:PORT]/REPO[:TAG]" in r.stderr


def auth_file(daemon: Daemon) -> Path:
    return daemon.data_dir / "config" / "registry-auth.json"


def test_auth_registry_login_push_pull_logout(template_daemon, second_daemon, auth_registry,
                                              source_template):
    ref = f"{auth_registry.host}/private/src:1"
    r = push(template_daemon, source_template, ref, "--insecure")
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert f"abx registry login {auth_registry.host}" in last, r.stderr

    r = abx(template_daemon, "registry", "login", auth_registry.host, "-u", USER, "-p", "wrong")
    assert r.returncode == 0, r.stderr
    r = push(template_daemon, source_template, ref, "--insecure")
    assert r.returncode != 0
    assert f"abx registry login {auth_registry.host}" in r.stderr.strip().splitlines()[-1]

    r = abx(template_daemon, "registry", "login", auth_registry.host, "-u", USER,
            "--password-stdin", input=PASSWORD + "\n")
    assert r.returncode == 0, r.stderr
    saved = auth_file(template_daemon)
    assert saved.stat().st_mode & 0o777 == 0o600
    entry = json.loads(saved.read_text())["auths"][auth_registry.host]
    assert base64.b64decode(entry["auth"]).decode() == f"{USER}:{PASSWORD}"
    r = push(template_daemon, source_template, ref, "--insecure")
    assert r.returncode == 0, r.stderr
    log = (template_daemon.data_dir / "daemon.log").read_text(errors="replace")
    assert PASSWORD not in log and entry["auth"] not in log, "credentials must never be logged"

    # The second daemon's CLI has its own config dir: anonymous until it logs in.
    r = pull(second_daemon, ref, "private-src", "--insecure")
    assert r.returncode != 0 and "abx registry login" in r.stderr
    r = abx(second_daemon, "registry", "login", auth_registry.host, "-u", USER, "-p", PASSWORD)
    assert r.returncode == 0, r.stderr
    r = pull(second_daemon, ref, "private-src", "--insecure")
    assert r.returncode == 0, r.stderr
    abx(second_daemon, "template", "rm", "private-src")
    assert leftovers(second_daemon) == []

    # A build's FROM sends the saved entry of the registry its Sandboxfile names.
    context = template_daemon.data_dir / "auth-from-ctx"
    context.mkdir(exist_ok=True)
    (context / "Sandboxfile").write_text(f"FROM {ref}\nRUN echo private > /etc/private.txt\n")
    r = abx(template_daemon, "template", "build", str(context), "--name", "from-private",
            "--insecure-registry", timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    abx(template_daemon, "template", "rm", "from-private")
    r = abx(template_daemon, "template", "search", auth_registry.host, "--insecure")
    assert r.returncode == 0, r.stderr
    assert f"{auth_registry.host}/private/src" in r.stdout.splitlines()

    r = abx(template_daemon, "registry", "logout", auth_registry.host)
    assert r.returncode == 0, r.stderr
    assert auth_registry.host not in json.loads(saved.read_text())["auths"]
    daemon_alive(template_daemon)
    daemon_alive(second_daemon)


def test_search_lists_the_catalog(template_daemon, registry, source_template):
    assert push(template_daemon, source_template, f"{registry.host}/abx/searchable:1",
                "--insecure").returncode == 0
    r = abx(template_daemon, "template", "search", registry.host, "search", "--insecure")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"{registry.host}/abx/searchable"]
    r = abx(template_daemon, "template", "search", registry.host)  # TLS to a plain port
    assert r.returncode != 0 and r.stderr.strip()


def test_search_speaks_verified_tls(template_daemon, layout, tmp_path):
    ca = make_test_ca(tmp_path)
    tls_registry = start_registry(tmp_path / "registry", auth=False,
                                  tls=make_server_cert(tmp_path, ca, ["IP:127.0.0.1"]))
    try:
        ref = f"{tls_registry.host}/tls/busybox:{TAG}"
        pushed = skopeo("copy", "--dest-tls-verify=false", f"oci:{layout}:{TAG}",
                        f"docker://{ref}")
        assert pushed.returncode == 0, pushed.stderr
        r = abx(template_daemon, "template", "search", tls_registry.host,
                env={"SSL_CERT_FILE": str(ca[0])})
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines() == [f"{tls_registry.host}/tls/busybox"]
        r = abx(template_daemon, "template", "search", tls_registry.host)  # the system's CAs
        assert r.returncode != 0
        assert "not trusted" in r.stderr and "SSL_CERT_FILE" in r.stderr, r.stderr
    finally:
        stop_registry(tls_registry)


def layer_blobs(registry: Registry, ref: str) -> list[Path]:
    inspected = skopeo("inspect", "--tls-verify=false", f"docker://{ref}")
    assert inspected.returncode == 0, inspected.stderr
    blobs = registry.storage / "docker" / "registry" / "v2" / "blobs" / "sha256"
    return [blobs / d.split(":")[1][:2] / d.split(":")[1] / "data"
            for d in json.loads(inspected.stdout)["Layers"]]


def test_digest_mismatch_is_refused_and_leaves_nothing(template_daemon, second_daemon, registry,
                                                       source_template):
    ref = f"{registry.host}/abx/tampered:1"
    assert push(template_daemon, source_template, ref, "--insecure").returncode == 0
    data = layer_blobs(registry, ref)[0]
    original = data.read_bytes()
    tampered = bytearray(original)
    tampered[len(tampered) // 2] ^= 0xFF  # same size: only the digest can tell
    data.write_bytes(bytes(tampered))
    layers_before = layer_ids(second_daemon)
    try:
        r = pull(second_daemon, ref, "tampered", "--insecure")
    finally:
        data.write_bytes(original)  # blobs are shared by every repo of the registry
    assert r.returncode != 0
    assert "digest" in r.stderr.strip().splitlines()[-1], r.stderr
    assert "tampered" not in listed(second_daemon)
    assert leftovers(second_daemon) == []
    assert layer_ids(second_daemon) == layers_before
    daemon_alive(second_daemon)


class CuttingProxy:
    """Forwards a loopback port to the registry, but cuts every blob download after
    `cut_after` bytes of its answer: a pull interrupted mid-layer."""

    def __init__(self, upstream: str, cut_after: int):
        self.upstream = upstream
        self.cut_after = cut_after
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.host = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.stopping = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.stopping:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.relay, args=(client,), daemon=True).start()

    def relay(self, client: socket.socket) -> None:
        host, port = self.upstream.split(":")
        try:
            server = socket.create_connection((host, int(port)))
        except OSError:
            client.close()
            return
        cutting = threading.Event()

        def upstream_to_client() -> None:
            sent = 0
            try:
                while data := server.recv(65536):
                    if cutting.is_set() and sent + len(data) > self.cut_after:
                        client.sendall(data[: max(0, self.cut_after - sent)])
                        # shutdown, not just close: the other thread's recv keeps the
                        # socket open, and the client must see the connection end.
                        client.shutdown(socket.SHUT_RDWR)
                        break
                    client.sendall(data)
                    sent += len(data)
            except OSError:
                pass
            client.close()
            server.close()

        threading.Thread(target=upstream_to_client, daemon=True).start()
        try:
            while data := client.recv(65536):
                if b"GET /v2/" in data and b"/blobs/sha256:" in data:
                    cutting.set()
                server.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self.stopping = True
        stop_listening(self.listener, self.thread)


def test_interrupted_pull_leaves_nothing(template_daemon, second_daemon, registry,
                                         source_template):
    ref = "/abx/interrupted:1"
    assert push(template_daemon, source_template, registry.host + ref, "--insecure").returncode == 0
    proxy = CuttingProxy(registry.host, cut_after=4096)
    try:
        layers_before = layer_ids(second_daemon)
        r = pull(second_daemon, proxy.host + ref, "interrupted", "--insecure")
    finally:
        proxy.close()
    assert r.returncode != 0, r.stdout
    last = r.stderr.strip().splitlines()[-1]
    assert "template pull failed" in last and "EOF" in last, r.stderr
    assert "interrupted" not in listed(second_daemon)
    assert leftovers(second_daemon) == []
    assert layer_ids(second_daemon) == layers_before
    daemon_alive(second_daemon)


def test_another_teams_template_is_not_pushed_nor_replaced_by_a_pull(template_daemon, registry,
                                                                     source_template):
    """Tenancy as for import: another team's template is unknown to push (404) and its name
    is the other team's own for pull; nothing of the owner's reaches the registry."""
    with template_daemon.api() as admin:
        made = admin.post("/abx/v1/keys", json={"team": "other-team", "name": "registry test"})
        assert made.status_code == 201, made.text
    try:
        headers = {"X-API-KEY": made.json()["key"]}
        body = {"ref": f"{registry.host}/stolen/src:1", "insecure": True}
        with template_daemon.api() as api:
            r = api.post(f"/abx/v1/templates/{source_template}/push", json=body, headers=headers)
            assert r.status_code == 404, r.text
            # Names are per team: a pull under the name is the other team's own template
            # (here it fails: the push was refused, so the registry has no such image),
            # and the owner's template is untouched.
            r = api.post(f"/abx/v1/templates/{source_template}/pull", json=body, headers=headers)
            assert r.status_code == 200 and "no such image" in r.text, r.text
            owned = api.get(f"/abx/v1/templates/{source_template}").json()
            assert owned["owner"] == "default" and owned["resolved"] == source_template, owned
            r = api.post(f"/abx/v1/templates/{source_template}/push", json=body,
                         headers={"X-Registry-Auth": "%%%"})
            assert r.status_code == 400, r.text
            # The export (what deploy downloads) as well: unknown to another team, refused
            # without a key, and no name reaches outside the templates dir or the host view.
            r = api.get(f"/abx/v1/templates/{source_template}/export", headers=headers)
            assert r.status_code == 404, r.text
            r = httpx.get(f"{template_daemon.url}/abx/v1/templates/{source_template}/export")
            assert r.status_code == 401, r.text
            for name in ("..", "%2e%2e%2f%2e%2e%2fetc", "host", "x" * 5000):
                r = api.get(f"/abx/v1/templates/{name}/export")
                assert r.status_code in (400, 404, 414, 431), (name[:20], r.status_code, r.text)
    finally:
        with template_daemon.api() as admin:
            admin.delete(f"/abx/v1/keys/{made.json()['id']}")
    missing = skopeo("inspect", "--tls-verify=false", f"docker://{registry.host}/stolen/src:1")
    assert missing.returncode != 0
    daemon_alive(template_daemon)


def test_deploy_copies_a_template_to_another_daemon(template_daemon, second_daemon,
                                                    source_template):
    assert "deployed-src" not in listed(second_daemon)
    r = abx(template_daemon, "template", "deploy", source_template, "--to", second_daemon.url,
            "--api-key", second_daemon.api_key, "--as", "deployed-src", timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert "deployed" in r.stdout
    with sandbox(second_daemon, "deployed-src") as sandbox_id:
        r = abx(second_daemon, "exec", sandbox_id, "--", "sh", "-c",
                'cat /etc/built.txt; echo "$FOO $BAR"; cat /tmp/up; ls /etc')
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:3] == ["built", "bar baz", "up"]
    assert "layer1.txt" not in r.stdout, "the deletion came along"
    info = json.loads(abx(second_daemon, "template", "inspect", "deployed-src").stdout)
    assert "deployed from" in info["source"] and info["readyCmd"] == READY
    assert leftovers(template_daemon) == [], "the export's temp dir must go"
    abx(second_daemon, "template", "rm", "deployed-src")
    daemon_alive(template_daemon)
    daemon_alive(second_daemon)


def test_deploy_errors_are_one_line(template_daemon, second_daemon, source_template):
    r = abx(template_daemon, "template", "deploy", source_template, "--to", second_daemon.url,
            env={"ABX_DEPLOY_API_KEY": ""})
    assert r.returncode != 0 and "--api-key" in r.stderr
    r = abx(template_daemon, "template", "deploy", source_template, "--to", second_daemon.url,
            "--api-key", "not-a-key")
    assert r.returncode != 0 and "refused the key" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, "refused before any export"
    r = abx(template_daemon, "template", "deploy", source_template, "--to",
            "http://127.0.0.1:9", "--api-key", "k")
    assert r.returncode != 0 and "no abx daemon answers at" in r.stderr, r.stderr
    r = abx(template_daemon, "template", "deploy", "no-such-template", "--to", second_daemon.url,
            "--api-key", second_daemon.api_key)
    assert r.returncode != 0 and "no-such-template" in r.stderr
    assert "deployed-src" not in listed(second_daemon)
    daemon_alive(template_daemon)


def test_bearer_token_registry_push_pull(template_daemon, second_daemon, token_registry,
                                         source_template):
    """The OCI bearer-token flow: the registry answers 401 with a Bearer challenge, the
    saved login buys a token at its realm, the token opens the repository."""
    registry, tokens = token_registry
    ref = f"{registry.host}/tokened/src:1"
    abx(template_daemon, "registry", "logout", registry.host)
    r = push(template_daemon, source_template, ref, "--insecure")
    assert r.returncode != 0
    assert f"abx registry login {registry.host}" in r.stderr.strip().splitlines()[-1], r.stderr

    r = abx(template_daemon, "registry", "login", registry.host, "-u", USER, "-p", PASSWORD)
    assert r.returncode == 0, r.stderr
    r = push(template_daemon, source_template, ref, "--insecure")
    assert r.returncode == 0, r.stderr
    assert (USER, ["repository:tokened/src:pull,push"]) in tokens.requests, tokens.requests

    r = abx(second_daemon, "registry", "login", registry.host, "-u", USER, "-p", PASSWORD)
    assert r.returncode == 0, r.stderr
    r = pull(second_daemon, ref, "tokened-src", "--insecure")
    assert r.returncode == 0, r.stderr
    with sandbox(second_daemon, "tokened-src") as sandbox_id:
        r = abx(second_daemon, "exec", sandbox_id, "--", "cat", "/etc/built.txt")
    assert r.stdout == "built\n", r.stderr
    abx(second_daemon, "template", "rm", "tokened-src")
    assert leftovers(second_daemon) == []

    # search: the catalog's own challenge, a token for registry:catalog:* bought with the
    # saved password, then with a saved identity token (OAuth2 refresh), else refused.
    r = abx(template_daemon, "template", "search", registry.host, "tokened", "--insecure")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"{registry.host}/tokened/src"]
    assert (USER, ["registry:catalog:*"]) in tokens.requests, tokens.requests
    r = abx(template_daemon, "registry", "login", registry.host, "--token", IDENTITY_TOKEN)
    assert r.returncode == 0, r.stderr
    r = abx(template_daemon, "template", "search", registry.host, "--insecure")
    assert r.returncode == 0 and f"{registry.host}/tokened/src" in r.stdout.splitlines(), r.stderr
    r = abx(template_daemon, "registry", "login", registry.host, "--token", "stale")
    assert r.returncode == 0, r.stderr
    r = abx(template_daemon, "template", "search", registry.host, "--insecure")
    assert r.returncode != 0
    assert f"abx registry login {registry.host}" in r.stderr.strip().splitlines()[-1], r.stderr
    abx(template_daemon, "registry", "logout", registry.host)
    daemon_alive(template_daemon)
    daemon_alive(second_daemon)
