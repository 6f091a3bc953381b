"""20 000 generated requests, most of them malformed, against one daemon and one
sandbox: every route of every plane, with bodies of the wrong shape or type, huge or
negative numbers, unknown enum values, long and odd path components, missing
credentials and broken framing (duplicate Content-Length, TE+CL, bad chunk sizes,
HTTP/9.9, a 100 KB target, oversized headers). None may get a 500; every refusal
says what is wrong; the daemon never closes a connection it could answer, stays the
same process and answers /health, and the sandbox still works afterwards.

How such requests got 500s or silent closes before (issue 10, item 3); the cases
found then have tests of their own (test_http_framing.py, test_envd_errors.py).
ABX_FUZZ_REQUESTS sets how many (default 20 000), ABX_FUZZ_SEED the seed."""
from __future__ import annotations

import json
import os
import random
import shutil
import socket
import struct
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import quote, urlparse

import httpx
import pytest
from harness import Daemon, private_state_dir, start_daemon, stop_daemon

pytestmark = [pytest.mark.offline, pytest.mark.slow]  # the `host` template; about a minute

REQUESTS = int(os.environ.get("ABX_FUZZ_REQUESTS", "20000"))
SEED = int(os.environ.get("ABX_FUZZ_SEED", "10"))
WORKERS = 4
ENVD, INTERPRETER = 49983, 49999
# Short framing timeouts, so a request the fuzzer cut short is answered (408) in
# seconds, not after the 30/60 s defaults.
SHORT_TIMEOUTS = {"ABX_HTTP_HEADER_TIMEOUT_S": "3", "ABX_HTTP_BODY_TIMEOUT_S": "3"}
# 5xx statuses that are answers, not failures: Connect's unimplemented, E2B's
# "sandbox not found" (502), the connection limit, timeouts, HTTP version, a full disk.
SERVER_ANSWERS = {501, 502, 503, 504, 505, 507}


@dataclass
class Target:
    url: str
    api_key: str
    sandbox_id: str
    access_token: str


@dataclass
class Request:
    method: str
    path: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    version: str = "HTTP/1.1"
    framing: str = "length"  # "length", "chunked" or "raw" (framing headers set by hand)

    def encode(self, host: str) -> bytes:
        head = [f"{self.method} {self.path} {self.version}", f"Host: {host}",
                "Connection: close"]
        head += [f"{name}: {value}" for name, value in self.headers]
        body = self.body
        if self.framing == "length" and (body or self.method in ("POST", "PUT")):
            head.append(f"Content-Length: {len(body)}")
        elif self.framing == "chunked":
            head.append("Transfer-Encoding: chunked")
            body = (b"%x\r\n" % len(body) + body + b"\r\n" if body else b"") + b"0\r\n\r\n"
        return ("\r\n".join(head) + "\r\n\r\n").encode("utf-8", "surrogateescape") + body

    def describe(self) -> str:
        return (f"{self.method} {self.path[:120]} {self.version} {self.framing} "
                f"{self.headers[:6]} body={self.body[:160]!r}")


# ---------------------------------------------------------------- the seeds

WEIRD_VALUES: list[object] = [
    None, 0, -1, 2 ** 31, 2 ** 63, -(2 ** 63) - 1, 1.5, 1e308, "", "x" * 5000, "\u0000",
    "../../../etc/passwd", "/", "~", [], {}, [1, [2]], {"a": {}}, True, "SIGNAL_SIGSTOP",
    "SIGNAL_UNSPECIFIED", "relative/dir", "/no/such/dir", "é" * 100,
]
WEIRD_SEGMENTS = ["", ".", "..", "%00", "%2e%2e", "%zz", "x" * 5000, "a%2Fb", "é", "{id}",
                  "*", "%", "ba%20d", "i" + "z" * 20]


def fake_id(rng: random.Random) -> str:
    return rng.choice(["izzzzzzzzzzzzzzzzzzzz", "nope", "x" * 300, "", "..", "i%00x"])


def fuzz_name(rng: random.Random) -> str:
    return rng.choice(["fuzz-none", "fuzz_" + "n" * 200, "FUZZ", "fuzz..x", "%2e%2e"])


def control_seeds(rng: random.Random) -> list[tuple[str, str, object]]:
    """(method, path, JSON body or bytes) of every control-plane route. A sandbox the
    request names is never the fuzzer's own, a template never one that exists: nothing
    here may end the sandbox or start a real build."""
    sid, name = fake_id(rng), fuzz_name(rng)
    return [
        ("GET", "/health", None),
        ("GET", "/sandboxes", None),
        ("GET", "/v2/sandboxes?state=running&limit=5&metadata=a%3Db", None),
        ("GET", "/v2/sandboxes?startedAfter=2026-13-01T00:00:00Z&order=sideways", None),
        ("POST", "/sandboxes", {"templateID": "fuzz-none", "timeout": 10,
                                "metadata": {"k": "v"}, "envVars": {"A": "1"}}),
        ("POST", "/v2/sandboxes", {"templateID": "fuzz-none", "autoPause": False}),
        ("GET", "/sandboxes/metrics?sandbox_ids=" + sid, None),
        ("GET", f"/sandboxes/{sid}", None),
        ("DELETE", f"/sandboxes/{sid}", None),
        ("POST", f"/sandboxes/{sid}/timeout", {"timeout": 30}),
        ("POST", f"/sandboxes/{sid}/connect", {"timeout": 30}),
        ("POST", f"/v2/sandboxes/{sid}/connect", {"timeout": 30}),
        ("GET", f"/sandboxes/{sid}/metrics?start=1&end=2", None),
        ("PUT", f"/sandboxes/{sid}/network", {"allowOut": ["1.1.1.1"], "denyOut": []}),
        ("GET", f"/templates/aliases/{name}", None),
        ("GET", "/abx/v1/templates", None),
        ("GET", f"/abx/v1/templates/{name}", None),
        ("DELETE", f"/abx/v1/templates/{name}", None),
        ("POST", f"/abx/v1/templates/{name}/build", {"noCache": True}),
        ("POST", f"/abx/v1/templates/{name}/import?origin=upload", b"not a tar" * 10),
        ("GET", "/abx/v1/keys", None),
        ("POST", "/abx/v1/keys", {"team": "fuzz", "name": "fuzz key"}),
        ("DELETE", f"/abx/v1/keys/{sid}", None),
        ("GET", "/abx/v1/teams/fuzz/quota", None),
        ("PUT", "/abx/v1/teams/fuzz/quota", {"maxSandboxes": 3, "memoryMb": 512}),
        ("GET", "/abx/v1/usage?since=2026-01-01", None),
        ("GET", "/abx/v1/secrets", None),
        ("PUT", f"/abx/v1/secrets/{name}", {"value": "s3cret"}),
        ("DELETE", f"/abx/v1/secrets/{name}", None),
        ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "fuzz", "version": "1"}}}),
        ("POST", "/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        ("POST", "/mcp", {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                          "params": {"name": "no_such_tool", "arguments": {}}}),
        ("DELETE", "/mcp", None),
    ]


def fuzz_path(rng: random.Random) -> str:
    return "/tmp/fuzz/" + rng.choice(["a", "b/c", "d.txt", "x" * 300, "é"])


def envd_seeds(rng: random.Random) -> list[tuple[str, str, object]]:
    """envd's endpoints. Files are made and removed under /tmp/fuzz only; processes
    started are short (true, echo); signals name pids the fuzzer never started."""
    p, q = fuzz_path(rng), fuzz_path(rng)
    pid = {"pid": rng.choice([1, 7, 99999])}
    return [
        ("GET", "/health", None),
        ("GET", "/envs", None),
        ("GET", "/metrics", None),
        ("GET", "/files?path=" + quote(p), None),
        ("GET", "/files?path=" + quote(p) + "&username=root", None),
        ("POST", "/files?path=" + quote(p), b"fuzz data"),
        ("POST", "/files", "multipart"),
        ("POST", "/filesystem.Filesystem/Stat", {"path": p}),
        ("POST", "/filesystem.Filesystem/MakeDir", {"path": p}),
        ("POST", "/filesystem.Filesystem/Move", {"source": p, "destination": q}),
        ("POST", "/filesystem.Filesystem/ListDir", {"path": "/tmp/fuzz", "depth": 2}),
        ("POST", "/filesystem.Filesystem/Remove", {"path": p}),
        ("POST", "/filesystem.Filesystem/CreateWatcher", {"path": "/tmp", "recursive": False}),
        ("POST", "/filesystem.Filesystem/GetWatcherEvents", {"watcherId": "nope"}),
        ("POST", "/filesystem.Filesystem/RemoveWatcher", {"watcherId": "nope"}),
        ("POST", "/process.Process/List", {}),
        ("POST", "/process.Process/Start", "stream"),
        ("POST", "/process.Process/SendInput", {"process": pid, "input": {"stdin": "aGk="}}),
        ("POST", "/process.Process/Update",
         {"process": pid, "pty": {"size": {"cols": 80, "rows": 24}}}),
        ("POST", "/process.Process/SendSignal", {"process": pid, "signal": "SIGNAL_SIGTERM"}),
        ("POST", "/process.Process/CloseStdin", {"process": pid}),
        ("POST", "/process.Process/Connect", {"process": {"pid": 99999}}),
    ]


def interpreter_seeds(rng: random.Random) -> list[tuple[str, str, object]]:
    """The code interpreter. A context the fuzzer would make always has a bad field,
    so no context process is left running per request."""
    ctx = rng.choice(["nope", "", "x" * 300])
    return [
        ("GET", "/health", None),
        ("GET", "/contexts", None),
        ("POST", "/contexts", {"language": "python", "cwd": rng.choice(
            ["relative/dir", "/no/such/dir", "/etc/hostname", 42])}),
        ("POST", "/contexts", {"language": rng.choice(["cobol", 7, ["python"]])}),
        ("DELETE", f"/contexts/{ctx}", None),
        ("DELETE", "/contexts", None),
        ("POST", f"/contexts/{ctx}/restart", None),
        ("POST", "/execute", {"code": "1", "context_id": "nope"}),
        ("POST", "/execute", {"code": rng.choice([5, None, ["1"]]), "language": "python"}),
        ("POST", "/execute", {"code": "1", "language": "python", "timeout": 1e300}),
    ]


# ---------------------------------------------------------------- the mutations

def mutate_json(rng: random.Random, value: object) -> object:
    """One change somewhere in `value`: a leaf replaced, a key dropped or added."""
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(list(value))
        out = dict(value)
        roll = rng.random()
        if roll < 0.25:
            del out[key]
        elif roll < 0.35:
            out["unknownField"] = rng.choice(WEIRD_VALUES)
        else:
            out[key] = mutate_json(rng, value[key])
        return out
    if isinstance(value, list) and value and rng.random() < 0.5:
        out_list = list(value)
        index = rng.randrange(len(out_list))
        out_list[index] = mutate_json(rng, out_list[index])
        return out_list
    return rng.choice(WEIRD_VALUES)


def json_body(rng: random.Random, value: object) -> bytes:
    roll = rng.random()
    if roll < 0.55:
        value = mutate_json(rng, value)
    text = json.dumps(value)
    if roll > 0.97:
        return b"[" * 100_000
    if roll > 0.94:
        return text[: rng.randrange(len(text) + 1)].encode()  # truncated JSON
    if roll > 0.91:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    if roll > 0.89:
        return b""
    return text.encode()


def connect_envelope(message: bytes, flags: int = 0) -> bytes:
    return struct.pack(">BI", flags, len(message)) + message


def mutate_path(rng: random.Random, path: str) -> str:
    base, _, query = path.partition("?")
    segments = base.split("/")
    roll = rng.random()
    if roll < 0.3 and len(segments) > 1:
        segments[rng.randrange(1, len(segments))] = rng.choice(WEIRD_SEGMENTS)
    elif roll < 0.45:
        segments.append(rng.choice(WEIRD_SEGMENTS))
    elif roll < 0.55 and len(segments) > 2:
        segments.pop()
    elif roll < 0.65:
        query = rng.choice(["path=", "path=" + "/" + "c" * 5000, "path=%zz", "username=nobody",
                            "a=1&a=2", "=", "&&&", "signature=x&signature_expiration=1"])
    elif roll < 0.7:
        return "/" + "a" * 100_000
    elif roll < 0.75:
        return rng.choice(["*", "health", "http://evil/health", "/%", "//", "/\x7f"])
    base = "/".join(segments) or "/"
    return base + ("?" + query if query else "")


def mutate_framing(rng: random.Random, request: Request) -> None:
    """Breaks the HTTP framing; the daemon answers 400/408/414/431/505 and closes."""
    roll = rng.random()
    if roll < 0.15:
        request.version = rng.choice(["HTTP/9.9", "HTTP/2.0", "HTTP/1.x", "HTTP/1.0", "FOO"])
    elif roll < 0.3:
        request.framing = "raw"
        request.headers += [("Content-Length", str(len(request.body)))] * 2
        request.headers[-1] = ("Content-Length", str(len(request.body) + 1))
    elif roll < 0.45:
        request.framing = "raw"
        request.headers += [("Content-Length", str(len(request.body) + 5)),
                            ("Transfer-Encoding", "chunked")]
        request.body = b"%x\r\n" % len(request.body) + request.body + b"\r\n0\r\n\r\n"
    elif roll < 0.55:
        request.framing = "raw"
        request.headers.append(("Transfer-Encoding", rng.choice(["gzip", "chunked, gzip", "x"])))
    elif roll < 0.7:
        request.framing = "raw"
        request.headers.append(("Transfer-Encoding", "chunked"))
        request.body = rng.choice([b"zz\r\n{}\r\n0\r\n\r\n", b"-1\r\n\r\n",
                                   b"ffffffffffffffffff\r\nx\r\n0\r\n\r\n",
                                   b"2;" + b"e" * 70_000 + b"\r\n{}\r\n0\r\n\r\n",
                                   b"2\r\n{}\r\n0\r\nX-T: " + b"t" * 70_000 + b"\r\n\r\n"])
    elif roll < 0.8:
        request.headers += [(f"X-Filler-{i}", "f" * 1000) for i in range(80)]
    elif roll < 0.99:
        request.framing = "raw"
        request.headers.append(rng.choice([("X-Bad Name", "v"), ("X-Empty", ""),
                                           ("Content-Length", "-3"),
                                           ("Content-Length", "99999999999999999999"),
                                           ("Content-Length", "abc")]))
    else:
        # The body stops short and the connection stays open: 408 after the body timeout.
        request.framing = "raw"
        request.headers.append(("Content-Length", str(len(request.body) + 100)))


# ---------------------------------------------------------------- one request

def make_request(rng: random.Random, target: Target) -> Request:
    plane = rng.choices(["control", "envd", "interpreter"], weights=[4, 4, 2])[0]
    seeds = {"control": control_seeds, "envd": envd_seeds,
             "interpreter": interpreter_seeds}[plane](rng)
    method, path, body = rng.choice(seeds)
    request = Request(method, path)
    if plane == "control":
        request.headers.append(("X-API-KEY", target.api_key))
    else:
        port = ENVD if plane == "envd" else INTERPRETER
        request.headers += [("E2b-Sandbox-Id", target.sandbox_id),
                            ("E2b-Sandbox-Port", str(port)),
                            ("X-Access-Token", target.access_token)]
    if body == "multipart":
        name = rng.choice([fuzz_path(rng), "/tmp/fuzz/" + "n" * 5000, "", "../../x"])
        boundary = "fuzzboundary"
        request.headers.append(("Content-Type", f"multipart/form-data; boundary={boundary}"))
        request.body = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                        f'filename="{name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
                        f"data\r\n--{boundary}--\r\n").encode()
        if rng.random() < 0.3:
            request.body = request.body[: rng.randrange(len(request.body))]
    elif body == "stream":
        start = {"process": {"cmd": rng.choice(["/bin/true", "/bin/echo", "", "/no/such"]),
                             "args": ["fuzz"], "envs": {"A": "1"}, "cwd": "/tmp"}}
        request.headers += [("Content-Type", "application/connect+json"),
                            ("Connect-Protocol-Version", "1")]
        message = json_body(rng, start)
        envelope = connect_envelope(message, rng.choice([0, 0, 0, 1, 2, 255]))
        if rng.random() < 0.1:
            envelope = envelope[: rng.randrange(len(envelope) + 1)]
        request.body = envelope
    elif isinstance(body, bytes):
        request.headers.append(("Content-Type", "application/octet-stream"))
        request.body = body
    elif body is not None:
        request.headers.append(("Content-Type", "application/json"))
        if plane == "envd":
            request.headers.append(("Connect-Protocol-Version", "1"))
        request.body = json_body(rng, body)

    roll = rng.random()
    if roll < 0.05:
        request.method = rng.choice(["GET", "PUT", "PATCH", "OPTIONS", "HEAD", "FOO", "get"])
    elif roll < 0.3:
        request.path = mutate_path(rng, request.path)
    elif roll < 0.37:
        request.headers = [(n, v) for n, v in request.headers
                           if n not in ("X-API-KEY", "X-Access-Token")]
        if rng.random() < 0.5:
            request.headers.append((rng.choice(["X-API-KEY", "X-Access-Token"]), "wrong"))
    elif roll < 0.45:
        request.framing = "chunked"
    elif roll < 0.6:
        mutate_framing(rng, request)
    return request


@dataclass
class Answer:
    status: int | None  # None: closed with no status line
    body: bytes
    error: str = ""  # a socket error or timeout


def send(url: str, request: Request) -> Answer:
    """Sends `request` on a connection of its own; reads the status line and, for an
    error, the body (the connection closes after it: Connection: close)."""
    parsed = urlparse(url)
    host = f"{parsed.hostname}:{parsed.port}"
    received = b""
    try:
        with socket.create_connection((parsed.hostname, parsed.port), timeout=30) as sock:
            try:
                sock.sendall(request.encode(host))
            except OSError:
                pass  # the daemon may refuse before it has read everything: read its answer
            while b"\r\n\r\n" not in received:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
            status = status_of(received)
            if status is not None and status >= 400 and request.method != "HEAD":
                while chunk := sock.recv(65536):
                    received += chunk
                    if len(received) > 1 << 20:
                        break
    except OSError as e:
        if not received:
            return Answer(None, b"", type(e).__name__)
    body = received.partition(b"\r\n\r\n")[2]
    return Answer(status_of(received), body)


def status_of(received: bytes) -> int | None:
    line = received.split(b"\r\n", 1)[0].split(b" ")
    if len(line) < 2 or not line[0].startswith(b"HTTP/") or not line[1].isdigit():
        return None
    return int(line[1])


def says_why(body: bytes) -> bool:
    """A refusal's body names what is wrong: a JSON message, a Connect error, or text."""
    if b"\r\n" in body[:12] and body[:1] in b"0123456789abcdef":
        body = body.split(b"\r\n", 1)[1]  # one chunk's size line
    text = body.strip()
    if not text:
        return False
    try:
        doc = json.loads(text.split(b"\r\n", 1)[0])
    except ValueError:
        return True  # plain text
    if isinstance(doc, dict):
        return bool(doc.get("message") or doc.get("error"))
    return True


def judge(request: Request, answer: Answer) -> str:
    """'' when the answer is one the daemon may give, else what is wrong."""
    if answer.status is None:
        return f"no answer ({answer.error or 'closed'})"
    if answer.status >= 500 and answer.status not in SERVER_ANSWERS:
        return f"status {answer.status}: {answer.body[:300]!r}"
    if answer.status >= 400 and request.method != "HEAD" and not says_why(answer.body):
        return f"status {answer.status} without a message: {answer.body[:300]!r}"
    return ""


# ---------------------------------------------------------------- the test

@pytest.fixture(scope="module")
def fuzz_daemon() -> Iterator[tuple[Daemon, Target]]:
    state = private_state_dir()
    d = start_daemon(state / "state", extra_args=("--warm-pool", "0"), env=SHORT_TIMEOUTS)
    try:
        with d.api() as api:
            r = api.post("/sandboxes", json={"templateID": "host", "timeout": 3600})
            assert r.status_code == 201, r.text
            sb = r.json()
        target = Target(d.url, d.api_key, sb["sandboxID"], sb.get("envdAccessToken") or "")
        yield d, target
    finally:
        stop_daemon(d)
        shutil.rmtree(state, ignore_errors=True)


def still_serving(d: Daemon, target: Target) -> None:
    assert d.proc.poll() is None, "the daemon died"
    assert httpx.get(f"{d.url}/health", timeout=10).status_code == 204
    headers = {"E2b-Sandbox-Id": target.sandbox_id, "E2b-Sandbox-Port": str(ENVD),
               "X-Access-Token": target.access_token}
    stat = httpx.post(f"{d.url}/filesystem.Filesystem/Stat", json={"path": "/tmp"},
                      headers=headers, timeout=30)
    assert stat.status_code == 200, stat.text


def run_batch(target: Target, requests: list[Request],
              on_failure: Callable[[Request, str], None]) -> None:
    def one(request: Request) -> None:
        verdict = judge(request, send(target.url, request))
        if verdict:
            on_failure(request, verdict)

    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(one, requests))


def test_generated_requests_get_answers_never_500s(fuzz_daemon):
    d, target = fuzz_daemon
    rng = random.Random(SEED)
    failures: dict[str, str] = {}  # one example of each kind of wrong answer
    count = 0

    def on_failure(request: Request, verdict: str) -> None:
        nonlocal count
        count += 1
        kind = f"{verdict[:60]} {request.method} {request.path[:40]}"
        failures.setdefault(kind, f"{verdict}\n    for {request.describe()}")

    done = 0
    while done < REQUESTS:
        batch = [make_request(rng, target) for _ in range(min(1000, REQUESTS - done))]
        run_batch(target, batch, on_failure)
        done += len(batch)
        still_serving(d, target)
    assert not failures, (f"{count} of {REQUESTS} requests (seed {SEED}) got a wrong answer; "
                          "one of each kind:\n" + "\n".join(list(failures.values())[:20]))
