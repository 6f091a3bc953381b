"""The test world's web servers (run by world.sh inside the "internet" namespace): HTTP on
port 80 and HTTPS on 443 of every address given, answering like httpbin, and a TCP echo.

  GET /headers      {"headers": {name: value}}: the request's headers as received
  GET /stream       a line every 0.2 s for 60 s (?seconds=N), to see a live connection cut
  GET / on Host 1.1.1.1 (8.8.8.8): 301 (302), as those hosts answer E2B's own network tests
  /status/CODE      that status, no body (to send a request whose answer shows nothing)
  /cors             204 with Access-Control-Allow-Origin: the request's Origin, as servers
                    that reflect it do (the body shows nothing)
  /generate_204     204, no body (connectivitycheck.gstatic.com, as E2B's internet access
                    tests expect)
  GET /bytes?mib=N  N MiB of zeros (the networking bench's bulk download)
  PUT/POST /sink    reads the body and throws it away; answers {"received": bytes} (the
                    bench's bulk upload; the body is not logged)
  anything else     {"method", "path", "host", "headers", "body", "client", "server", "scheme"}:
                    `client` is the peer address the server saw, `server` the address:port the
                    request reached
Repeated headers are joined with ", ". Every request is logged to stderr as one JSON line
(what the fallback answer holds), so a test can see what reached the server without the
answer showing it to the client.
"""
from __future__ import annotations

import argparse
import json
import socketserver
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

REDIRECTS = {"1.1.1.1": (301, "https://one.one.one.one/"), "8.8.8.8": (302, "https://dns.google/")}
STREAM_INTERVAL = 0.2


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "abx-test-world"

    def setup(self) -> None:
        tls = getattr(self.server, "tls", None)
        if tls is not None:  # the handshake happens here, in the connection's own thread
            self.request = tls.wrap_socket(self.request, server_side=True)
        super().setup()

    def log_message(self, format: str, *args: object) -> None:
        pass  # each request is logged as JSON by handle_any

    def seen(self, body: bytes) -> dict[str, object]:
        server = self.connection.getsockname()
        return {"method": self.command, "path": self.path, "host": self.headers.get("Host"),
                "headers": self.headers_seen(), "body": body.decode(errors="replace"),
                "client": self.client_address[0], "server": f"{server[0]}:{server[1]}",
                "scheme": "https" if getattr(self.server, "tls", None) else "http"}

    def headers_seen(self) -> dict[str, str]:
        seen: dict[str, str] = {}
        for name, value in self.headers.items():
            seen[name] = f"{seen[name]}, {value}" if name in seen else value
        return seen

    def reply(self, status: int, body: bytes, content_type: str = "application/json",
              extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def reply_json(self, value: object, status: int = 200) -> None:
        self.reply(status, json.dumps(value, indent=2).encode() + b"\n")

    def stream(self, seconds: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        deadline = time.monotonic() + seconds
        tick = 0
        while time.monotonic() < deadline:
            self.wfile.write(f"tick {tick}\n".encode())
            self.wfile.flush()
            tick += 1
            time.sleep(STREAM_INTERVAL)

    def bulk_download(self, mib: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(mib << 20))
        self.end_headers()
        chunk = bytes(1 << 20)
        for _ in range(mib):
            self.wfile.write(chunk)

    def bulk_upload(self, length: int) -> None:
        received = 0
        while received < length and (data := self.rfile.read(min(1 << 20, length - received))):
            received += len(data)
        self.reply_json({"received": received})

    def handle_any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if urlsplit(self.path).path == "/sink":
            sys.stderr.write(json.dumps(self.seen(b"")) + "\n")
            return self.bulk_upload(length)
        body = self.rfile.read(length) if length > 0 else b""
        url = urlsplit(self.path)
        seen = self.seen(body)
        sys.stderr.write(json.dumps(seen) + "\n")
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        if url.path == "/" and host in REDIRECTS:
            status, location = REDIRECTS[host]
            self.reply(status, b"", "text/html", {"Location": location})
        elif url.path == "/headers":
            self.reply_json({"headers": self.headers_seen()})
        elif url.path.startswith("/status/") and url.path[8:].isdigit():
            self.reply(int(url.path[8:]), b"", "text/plain")
        elif url.path == "/cors":
            self.reply(204, b"", "text/plain",
                       {"Access-Control-Allow-Origin": self.headers.get("Origin") or "*"})
        elif url.path == "/generate_204":
            self.reply(204, b"", "text/plain")
        elif url.path == "/bytes":
            self.bulk_download(int(parse_qs(url.query).get("mib", ["1"])[0]))
        elif url.path == "/stream":
            seconds = float(parse_qs(url.query).get("seconds", ["60"])[0])
            self.stream(seconds)
        else:
            self.reply_json(seen)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    tls: ssl.SSLContext | None = None

    def handle_error(self, request: object, client_address: tuple[str, int]) -> None:
        error = sys.exc_info()[1]
        sys.stderr.write(json.dumps({"server": self.server_address[0], "client": client_address[0],
                                     "error": repr(error)}) + "\n")


class Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


class EchoServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--echo", action="append", default=[], help="ADDR:PORT of a TCP echo")
    parser.add_argument("addresses", nargs="+")
    args = parser.parse_args()
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(args.cert, args.key)
    servers: list[socketserver.BaseServer] = []
    for address in args.addresses:
        servers.append(Server((address, 80), Handler))
        secure = Server((address, 443), Handler)
        secure.tls = tls
        servers.append(secure)
    for echo in args.echo:
        host, port = echo.rsplit(":", 1)
        servers.append(EchoServer((host, int(port)), Echo))
    for server in servers[1:]:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    servers[0].serve_forever()


if __name__ == "__main__":
    main()
