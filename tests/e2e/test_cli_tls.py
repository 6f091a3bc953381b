"""The CLI over https: a daemon behind a TLS front (what a team runs on a shared host) is
reached with `sandbox_api_url = https://...`, its certificate and name verified against the
CAs OpenSSL trusts (SSL_CERT_FILE here: a throwaway CA of the test's own). The whole flow works
through it, streaming included; a certificate nobody trusts, or one for another name, is
refused with one line that says what to do."""
from __future__ import annotations

import hashlib
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from harness import Daemon
from helpers import abx, make_server_cert, make_test_ca, stop_listening


class TlsFront:
    """Terminates TLS on 127.0.0.1 and splices each connection to the daemon's port."""

    def __init__(self, backend: tuple[str, int], cert: Path, key: Path):
        self.backend = backend
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.handshakes_failed = 0
        self.closing = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.closing:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.relay, args=(raw,), daemon=True).start()

    def relay(self, raw: socket.socket) -> None:
        try:
            client = self.context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            self.handshakes_failed += 1
            raw.close()
            return
        upstream = socket.create_connection(self.backend)
        threading.Thread(target=self.pump, args=(upstream, client), daemon=True).start()
        self.pump(client, upstream)

    @staticmethod
    def pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (sink, source):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.closing = True
        stop_listening(self.listener, self.thread)


@pytest.fixture(scope="module")
def tls_material(tmp_path_factory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("tls")
    ca = make_test_ca(work)
    good = make_server_cert(work, ca, ["localhost", "IP:127.0.0.1"])
    wrong = make_server_cert(work, ca, ["elsewhere.test"], stem="wrong")
    return {"ca": ca[0], "cert": good[0], "key": good[1], "wrong_cert": wrong[0],
            "wrong_key": wrong[1]}


@pytest.fixture(scope="module")
def front(daemon: Daemon, tls_material) -> Iterator[TlsFront]:
    backend = urlparse(daemon.url)
    f = TlsFront((backend.hostname, backend.port), tls_material["cert"], tls_material["key"])
    yield f
    f.close()


def over_tls(daemon: Daemon, url: str, ca: Path | None, *args: str, **kw):
    env = {"ABX_SANDBOX_API_URL": url}
    if ca is not None:
        env["SSL_CERT_FILE"] = str(ca)
    return abx(daemon, *args, env=env, **kw)


def test_the_whole_flow_works_through_a_tls_front(daemon, front, tls_material, tmp_path):
    url = f"https://localhost:{front.port}"
    ca = tls_material["ca"]
    r = over_tls(daemon, url, ca, "create", "--template", "base")
    assert r.returncode == 0, r.stderr
    sandbox_id = r.stdout.strip()
    try:
        r = over_tls(daemon, url, ca, "list", "-q")
        assert r.returncode == 0 and sandbox_id in r.stdout.split(), r.stderr
        payload = bytes(range(256)) * 4096  # 1 MiB: many TLS records each way
        (tmp_path / "up.bin").write_bytes(payload)
        r = over_tls(daemon, url, ca, "upload", sandbox_id, str(tmp_path / "up.bin"),
                     "/home/user/up.bin")
        assert r.returncode == 0, r.stderr
        r = over_tls(daemon, url, ca, "exec", sandbox_id, "--", "sh", "-c",
                     "sha256sum /home/user/up.bin; for i in 1 2 3; do echo line $i; done; exit 7")
        assert r.returncode == 7, r.stderr
        assert hashlib.sha256(payload).hexdigest() in r.stdout
        assert r.stdout.splitlines()[-3:] == ["line 1", "line 2", "line 3"]
        r = over_tls(daemon, url, ca, "download", sandbox_id, "/home/user/up.bin",
                     str(tmp_path / "down.bin"))
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "down.bin").read_bytes() == payload
    finally:
        r = over_tls(daemon, url, ca, "kill", sandbox_id, "--yes")
    assert r.returncode == 0, r.stderr
    r = abx(daemon, "list", "-q")
    assert sandbox_id not in r.stdout.split()


def test_an_ip_url_is_checked_against_the_certificates_addresses(daemon, front, tls_material):
    r = over_tls(daemon, f"https://127.0.0.1:{front.port}", tls_material["ca"], "list")
    assert r.returncode == 0, r.stderr


def test_an_untrusted_certificate_is_refused_with_what_to_do(daemon, front):
    # The system's bundle does not have the test's CA.
    r = over_tls(daemon, f"https://localhost:{front.port}", None, "list")
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "not trusted" in last and "SSL_CERT_FILE" in last, r.stderr


def test_a_certificate_for_another_name_is_refused(daemon, tls_material):
    backend = urlparse(daemon.url)
    wrong = TlsFront((backend.hostname, backend.port), tls_material["wrong_cert"],
                     tls_material["wrong_key"])
    try:
        r = over_tls(daemon, f"https://localhost:{wrong.port}", tls_material["ca"], "list")
        assert r.returncode != 0
        assert "not trusted" in r.stderr and "hostname mismatch" in r.stderr, r.stderr
    finally:
        wrong.close()


def test_plain_http_to_a_tls_port_fails_cleanly(daemon, front):
    r = over_tls(daemon, f"http://localhost:{front.port}", None, "list", timeout=30)
    assert r.returncode != 0 and r.stderr.strip(), r.stderr


def serve_once(handler) -> tuple[socket.socket, threading.Thread]:
    listener = socket.create_server(("127.0.0.1", 0))

    def accept_one() -> None:
        try:
            raw, _ = listener.accept()
        except OSError:  # stop_listening before anyone connected
            return
        handler(raw)

    thread = threading.Thread(target=accept_one, daemon=True)
    thread.start()
    return listener, thread


def test_a_tls_record_that_stops_halfway_ends_at_the_calls_deadline(daemon, tls_material):
    """`abx version` asks with a 5 s deadline; a server that sends part of its answer's TLS
    record and stalls must not hold it past that (a TLS read waits for a whole record)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls_material["cert"], tls_material["key"])
    release = threading.Event()

    def half_a_record(raw: socket.socket) -> None:
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = context.wrap_bio(incoming, outgoing, server_side=True)

        def pump(step):  # TLS over the socket by hand, so that we choose what is sent
            while True:
                try:
                    return step()
                except ssl.SSLWantReadError:
                    raw.sendall(outgoing.read())
                    incoming.write(raw.recv(65536))

        pump(tls.do_handshake)
        request = b""
        while b"\r\n\r\n" not in request:
            request += pump(lambda: tls.read(65536))
        raw.sendall(outgoing.read())
        tls.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        raw.sendall(outgoing.read()[:10])
        release.wait(60)
        raw.close()

    listener, thread = serve_once(half_a_record)
    try:
        r = over_tls(daemon, f"https://127.0.0.1:{listener.getsockname()[1]}",
                     tls_material["ca"], "version", timeout=40)
        assert r.returncode != 0 and "in time" in r.stderr, r.stderr
    finally:
        release.set()
        stop_listening(listener, thread)


def test_a_server_that_never_answers_the_handshake_is_given_up_on(daemon, tls_material):
    """No deadline on the call (`abx list` has none): the handshake still has one."""
    release = threading.Event()

    def silent(raw: socket.socket) -> None:
        release.wait(90)
        raw.close()

    listener, thread = serve_once(silent)
    try:
        r = over_tls(daemon, f"https://127.0.0.1:{listener.getsockname()[1]}",
                     tls_material["ca"], "list", timeout=80)
        assert r.returncode != 0 and "no TLS handshake" in r.stderr, r.stderr
    finally:
        release.set()
        stop_listening(listener, thread)


def test_an_address_that_never_takes_the_connection_is_given_up_on(daemon):
    """A listener whose accept queue is full drops new SYNs (Linux), as a black-holed
    address does: the TCP connect must end at the call's deadline (`abx version`: 5 s)
    with a clear error, not after the kernel's two minutes of SYN retries."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    port = listener.getsockname()[1]
    queued = []
    try:
        for _ in range(4):  # fills the accept queue; later SYNs are dropped
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            queued.append(s)
        r = abx(daemon, "version", env={"ABX_SANDBOX_API_URL": f"http://127.0.0.1:{port}"},
                timeout=60)
        assert "in time" in r.stderr, r.stderr
    finally:
        for s in queued:
            s.close()
        listener.close()


def test_template_deploy_reaches_another_daemon_over_https(daemon, front, tls_material):
    """`deploy --to https://...` speaks TLS to the other daemon: its key is checked there
    (through the front), then the unknown local template is what stops it; without the CA
    the certificate is refused, as for ABX_SANDBOX_API_URL."""
    to = f"https://localhost:{front.port}"
    args = ("template", "deploy", "no-such-template", "--to", to, "--api-key")
    r = abx(daemon, *args, "wrong-key", env={"SSL_CERT_FILE": str(tls_material["ca"])})
    assert r.returncode == 1 and "refused the key" in r.stderr, r.stderr
    r = abx(daemon, *args, daemon.api_key, env={"SSL_CERT_FILE": str(tls_material["ca"])})
    assert r.returncode == 1 and "no-such-template" in r.stderr, r.stderr
    assert "refused" not in r.stderr and "TLS" not in r.stderr, r.stderr
    r = abx(daemon, *args, daemon.api_key)
    assert r.returncode == 1 and "not trusted" in r.stderr, r.stderr
