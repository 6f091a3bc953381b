"""Long work never holds up short work: while ten run_code calls sleep,
creating and killing a sandbox still completes (it used to wait until the
executions freed the blocking threads they all sat on), and a sandbox whose
timeout passes is ended; input to a process that never reads it does not
hold a thread either."""
from __future__ import annotations

import base64
import json
import struct
import threading

import httpx

from helpers import envd_headers, wait_until

INTERPRETER_PORT = 49999
EXECUTIONS = 10
SLEEP_SECONDS = 60


def interpreter(daemon, sb: dict) -> httpx.Client:
    headers = {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": str(INTERPRETER_PORT)}
    if sb.get("envdAccessToken"):
        headers["X-Access-Token"] = sb["envdAccessToken"]
    return httpx.Client(base_url=daemon.url, headers=headers, timeout=httpx.Timeout(60, read=None))


class Execution(threading.Thread):
    """One run_code call in its own context (so all run at once), streamed."""

    def __init__(self, client: httpx.Client, context_id: str):
        super().__init__(daemon=True)
        self.client, self.context_id = client, context_id
        self.started = threading.Event()
        self.finished = threading.Event()

    def run(self) -> None:
        code = f"import time\nprint('sleeping', flush=True)\ntime.sleep({SLEEP_SECONDS})"
        body = {"code": code, "context_id": self.context_id}
        try:
            with self.client.stream("POST", "/execute", json=body) as r:
                for line in r.iter_lines():
                    if line and json.loads(line).get("type") == "stdout":
                        self.started.set()
        except httpx.HTTPError:
            pass  # the sandbox was killed under it: that is how the test ends it
        finally:
            self.finished.set()


def test_create_and_kill_complete_while_long_executions_run(daemon):
    with daemon.api() as api:
        r = api.post("/sandboxes", json={"templateID": "code-interpreter-v1"})
        assert r.status_code == 201, r.text
        busy = r.json()
        client = interpreter(daemon, busy)
        executions: list[Execution] = []
        try:
            for _ in range(EXECUTIONS):
                context = client.post("/contexts", json={"language": "python"})
                assert context.status_code == 200, context.text
                executions.append(Execution(client, context.json()["id"]))
            for execution in executions:
                execution.start()
            for execution in executions:
                assert execution.started.wait(120), "an execution never started"

            expiring = api.post("/sandboxes", json={"templateID": "base", "timeout": 1},
                                timeout=120)
            assert expiring.status_code == 201, expiring.text
            created = api.post("/sandboxes", json={"templateID": "base"}, timeout=120)
            assert created.status_code == 201, created.text
            killed = api.delete(f"/sandboxes/{created.json()['sandboxID']}", timeout=120)
            assert killed.status_code == 204, killed.text
            expired = f"/sandboxes/{expiring.json()['sandboxID']}"
            wait_until(lambda: api.get(expired).status_code == 404, timeout=30,
                       what="the sandbox with a 1 s timeout to be ended")

            still_running = [e for e in executions if not e.finished.is_set()]
            assert len(still_running) == EXECUTIONS, \
                "the create and kill must not wait for the executions to end"
        finally:
            api.delete(f"/sandboxes/{busy['sandboxID']}")
            for execution in executions:
                execution.join(60)
            client.close()


def test_input_to_a_process_that_never_reads_it_ends_with_an_error(daemon):
    """SendInput waits a bounded time for room in the pipe, then says why,
    instead of holding a blocking thread for as long as the process lives."""
    with daemon.api() as api:
        r = api.post("/sandboxes", json={"templateID": "base"})
        assert r.status_code == 201, r.text
        sb = r.json()
        headers = envd_headers(sb)
        start = json.dumps({"process": {"cmd": "/bin/sleep", "args": ["600"]}, "tag": "deaf",
                            "stdin": True}).encode()
        envelope = struct.pack(">BI", 0, len(start)) + start
        try:
            with httpx.Client(base_url=daemon.url, timeout=60) as client, client.stream(
                    "POST", "/process.Process/Start", content=envelope,
                    headers={**headers, "Content-Type": "application/connect+json"}) as stream:
                assert stream.status_code == 200
                next(stream.iter_bytes())  # the start event: the process runs
                unary = {**headers, "Content-Type": "application/json"}
                data = base64.b64encode(b"x" * (1 << 20)).decode()
                sent = client.post("/process.Process/SendInput", headers=unary, json={
                    "process": {"tag": "deaf"}, "input": {"stdin": data}})
                assert sent.status_code == 504, sent.text
                assert "has not read its input" in sent.json()["message"]
                killed = client.post("/process.Process/SendSignal", headers=unary, json={
                    "process": {"tag": "deaf"}, "signal": "SIGNAL_SIGKILL"})
                assert killed.status_code == 200, killed.text
        finally:
            api.delete(f"/sandboxes/{sb['sandboxID']}")
