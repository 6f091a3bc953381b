"""Malformed or late HTTP framing gets a 4xx (or 505) with a one-line JSON
message and a closed connection; the daemon keeps serving afterwards.

These tests speak raw sockets: an HTTP client library would refuse to send
most of these requests."""
from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Iterator
from urllib.parse import urlparse

import httpx
import pytest

from harness import Daemon, private_state_dir, start_daemon, stop_daemon

# Short header/body timeouts so the 408 tests do not wait the defaults (30 s, 60 s).
SHORT_TIMEOUTS = {"ABX_HTTP_HEADER_TIMEOUT_S": "2", "ABX_HTTP_BODY_TIMEOUT_S": "2"}


@pytest.fixture(scope="module")
def prebuilt_templates() -> None:
    """No test here creates a sandbox: skip the session's template build."""


@pytest.fixture(scope="module")
def http_daemon() -> Iterator[Daemon]:
    state = private_state_dir()
    d = start_daemon(state / "state", extra_args=("--warm-pool", "0"), env=SHORT_TIMEOUTS)
    yield d
    stop_daemon(d)
    shutil.rmtree(state, ignore_errors=True)


def exchange(d: Daemon, raw: bytes) -> tuple[str, dict]:
    """Sends `raw`, reads until the daemon closes the connection; returns the
    status line and the JSON body."""
    url = urlparse(d.url)
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        sock.sendall(raw)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].decode()
    return status_line, json.loads(body) if body else {}


def request(d: Daemon, first_line: str, headers: list[str], body: bytes = b"") -> bytes:
    lines = [first_line, "Host: 127.0.0.1", f"X-API-KEY: {d.api_key}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def assert_refused(d: Daemon, raw: bytes, status: int | tuple[int, ...]) -> dict:
    statuses = status if isinstance(status, tuple) else (status,)
    status_line, body = exchange(d, raw)
    assert any(status_line.startswith(f"HTTP/1.1 {s} ") for s in statuses), status_line
    assert body["code"] in statuses and body["message"], body
    assert httpx.get(f"{d.url}/health", timeout=10).status_code == 204
    return body


def test_malformed_chunk_size_on_create_is_400(http_daemon):
    raw = request(http_daemon, "POST /sandboxes HTTP/1.1",
                  ["Content-Type: application/json", "Transfer-Encoding: chunked"],
                  b"zz\r\n{}\r\n0\r\n\r\n")
    assert_refused(http_daemon, raw, 400)


def test_the_answer_survives_a_large_unread_remainder(http_daemon):
    raw = request(http_daemon, "POST /sandboxes HTTP/1.1",
                  ["Content-Type: application/json", "Transfer-Encoding: chunked"],
                  b"zz\r\n" + b"x" * 500_000)
    assert_refused(http_daemon, raw, 400)


def test_two_different_content_lengths_are_400(http_daemon):
    raw = request(http_daemon, "POST /sandboxes HTTP/1.1",
                  ["Content-Length: 2", "Content-Length: 3"], b"{}")
    assert_refused(http_daemon, raw, 400)


def test_a_repeated_content_length_is_400(http_daemon):
    raw = request(http_daemon, "POST /sandboxes HTTP/1.1",
                  ["Content-Length: 2", "Content-Length: 2"], b"{}")
    assert_refused(http_daemon, raw, 400)


def test_transfer_encoding_with_content_length_is_400(http_daemon):
    raw = request(http_daemon, "POST /sandboxes HTTP/1.1",
                  ["Content-Length: 7", "Transfer-Encoding: chunked"], b"2\r\n{}\r\n0\r\n\r\n")
    assert_refused(http_daemon, raw, 400)


def test_transfer_encoding_not_ending_in_chunked_is_400(http_daemon):
    raw = request(http_daemon, "POST /sandboxes HTTP/1.1", ["Transfer-Encoding: gzip"], b"{}")
    assert_refused(http_daemon, raw, 400)


def test_unknown_http_version_is_505(http_daemon):
    assert_refused(http_daemon, request(http_daemon, "GET /health HTTP/9.9", []), 505)


def test_garbage_request_line_is_400(http_daemon):
    assert_refused(http_daemon, b"HELLO\r\n\r\n", 400)


def test_100kb_target_is_414_or_431(http_daemon):
    # 414 when the request line is read alone, 431 when the first read already holds more
    # than the whole header limit: which one depends on how the bytes arrive.
    raw = request(http_daemon, "GET /" + "a" * 100_000 + " HTTP/1.1", [])
    assert_refused(http_daemon, raw, (414, 431))


def test_100kb_of_headers_is_431(http_daemon):
    headers = [f"X-Filler-{i}: {'b' * 1000}" for i in range(100)]
    assert_refused(http_daemon, request(http_daemon, "GET /health HTTP/1.1", headers), 431)


def test_a_header_that_never_ends_is_408(http_daemon):
    assert_refused(http_daemon, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n", 408)


def test_a_body_that_stops_arriving_is_408(http_daemon):
    raw = request(http_daemon, "POST /sandboxes HTTP/1.1",
                  ["Content-Type: application/json", "Content-Length: 100"], b'{"templ')
    assert_refused(http_daemon, raw, 408)


def test_keep_alive_still_serves_several_requests(http_daemon):
    one = request(http_daemon, "GET /health HTTP/1.1", [])
    url = urlparse(http_daemon.url)
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        sock.sendall(one + one)
        received = b""
        while received.count(b"HTTP/1.1 204") < 2:
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk
