"""Offline tests of the SDK's shared protocol code: framing, parsing, config, error mapping."""
from __future__ import annotations

import base64
import builtins
import json
import struct

import httpx
import pytest
from agent_sandbox import (
    AuthenticationError,
    CommandExitException,
    InvalidArgumentError,
    NotFoundError,
    RateLimitError,
    SandboxException,
    SandboxNotFound,
    TimeoutException,
    UnsupportedError,
    _config,
    _ops,
)
from agent_sandbox._connect import EnvelopeDecoder, encode_envelope
from agent_sandbox._execution import ExecutionBuilder
from agent_sandbox._http import Call, error_from_response, retry_delay
from agent_sandbox._process import ProcessOutput
from agent_sandbox._streams import ConnectMessages, NdjsonMessages, SseMessages

# Parsing and error mapping against fakes of the wire: no daemon, no sandbox.
pytestmark = pytest.mark.offline


def frame(message: dict, flags: int = 0) -> bytes:
    payload = json.dumps(message).encode()
    return struct.pack(">BI", flags, len(payload)) + payload


def envd_call() -> Call:
    return Call("POST", "http://x/process.Process/Start", "envd", "command 'x'")


def test_envelope_roundtrip_split_at_every_byte():
    data = frame({"a": 1}) + frame({"b": 2}) + frame({}, flags=2)
    decoder = EnvelopeDecoder()
    got = []
    for i in range(len(data)):
        got += decoder.feed(data[i:i + 1])
    assert got == [{"a": 1}, {"b": 2}]
    assert decoder.ended and decoder.end_error is None
    assert encode_envelope({"a": 1}) == frame({"a": 1})


def test_connect_end_frame_error_is_typed():
    messages = ConnectMessages(envd_call())
    failure = frame({"error": {"code": "not_found", "message": "no"}}, 2)
    assert messages.feed(frame({"x": 1}) + failure) == [{"x": 1}]
    with pytest.raises(NotFoundError):
        messages.finish()
    cut = ConnectMessages(envd_call())
    cut.feed(frame({"x": 1}))
    with pytest.raises(SandboxException, match="mid-stream"):
        cut.finish()


def test_ndjson_lines_across_chunks():
    lines = NdjsonMessages(envd_call())
    assert lines.feed(b'{"type":"stdout","te') == []
    assert lines.feed(b'xt":"a"}\n{"type":"end_of_execution"}\n') == [
        {"type": "stdout", "text": "a"}, {"type": "end_of_execution"}]
    lines.finish()


def test_server_sent_events_split_at_every_byte():
    wire = (b': keepalive\n\nid: 1\nevent: lifecycle\ndata: {"seq":1}\n\n'
            b'id: 2\r\nevent: commands\r\ndata: {"seq":2,\r\ndata: "x":"a"}\r\n\r\n')
    for cut in range(len(wire) + 1):
        events = SseMessages(envd_call())
        got = events.feed(wire[:cut]) + events.feed(wire[cut:])
        assert got == [{"seq": 1}, {"seq": 2, "x": "a"}], cut
        events.finish()
    cut_short = SseMessages(envd_call())
    cut_short.feed(b'id: 3\ndata: {"seq"')
    with pytest.raises(SandboxException, match="mid-event"):
        cut_short.finish()


def test_process_output_decodes_split_utf8_and_exit_codes():
    output = ProcessOutput(envd_call())
    assert output.expect_start({"event": {"start": {"pid": 7}}}) == 7
    snow = "☃".encode()
    for part in (b"a" + snow[:1], snow[1:] + b"\n"):
        output.handle({"event": {"data": {"stdout": base64.b64encode(part).decode()}}})
    output.handle({"event": {"data": {"stderr": base64.b64encode(b"oops\n").decode()}}})
    output.handle({"event": {"end": {"exitCode": 3, "exited": True, "status": "exit status 3"}}})
    assert output.result(check=False).stdout == "a☃\n"
    with pytest.raises(CommandExitException) as raised:
        output.result(check=True)
    assert raised.value.exit_code == 3 and raised.value.stderr == "oops\n"
    with pytest.raises(SandboxException, match="start event"):
        ProcessOutput(envd_call()).expect_start({"event": {"keepalive": {}}})


def test_execution_text_exit_code_and_results():
    builder = ExecutionBuilder()
    for line in ({"type": "stdout", "text": "table\n"},
                 {"type": "result", "text": "2", "html": "<b>2</b>", "is_main_result": True,
                  "image/x": "y"},
                 {"type": "number_of_executions", "execution_count": 4}):
        builder.handle(line)
    execution = builder.execution
    assert execution.text == "table\n2" and execution.exit_code == 0
    assert execution.results[0].formats() == ["text", "html", "image/x"]
    assert execution.execution_count == 4
    builder.handle({"type": "error", "name": "SystemExit", "value": "3", "traceback": "tb"})
    assert execution.exit_code == 3
    builder.handle({"type": "error", "name": "ZeroDivisionError", "value": "x", "traceback": "tb"})
    assert execution.exit_code == 1


@pytest.mark.parametrize("status,body,error", [
    (401, b'{"code":401,"message":"bad key"}', AuthenticationError),
    (404, b'{"code":404,"message":"nope"}', SandboxNotFound),
    (400, b'{"code":400,"message":"bad"}', InvalidArgumentError),
    (429, b'{"code":429,"message":"slow"}', RateLimitError),
    (504, b'{"code":504,"message":"slow"}', TimeoutException),
])
def test_control_plane_errors(status, body, error):
    call = Call("GET", "http://x/sandboxes/i1", "control", "sandbox i1", sandbox_id="i1")
    assert isinstance(error_from_response(call, status, body), error)


@pytest.mark.parametrize("status,body,error", [
    (404, b'{"code":"not_found","message":"no file"}', NotFoundError),
    (400, b'{"code":"invalid_argument","message":"x"}', InvalidArgumentError),
    (502, b'{"code":502,"message":"The sandbox was not found"}', SandboxNotFound),
    (502, b'{"code":502,"message":"sandbox timeout"}', TimeoutException),
    (501, b'{"code":"unimplemented","message":"x"}', UnsupportedError),
    (408, b'{"code":"deadline_exceeded","message":"x"}', TimeoutException),
])
def test_sandbox_plane_errors(status, body, error):
    assert isinstance(error_from_response(envd_call(), status, body), error)


def test_timeout_error_is_builtin_timeout_error():
    assert issubclass(TimeoutException, builtins.TimeoutError)


def test_retry_after_is_bounded():
    assert retry_delay(429, {"retry-after": "1"}, 0) == 1.0
    assert retry_delay(429, {"retry-after": "999"}, 0) == 10.0
    assert retry_delay(429, {"retry-after": "1"}, 9) is None
    assert retry_delay(429, {}, 0) is None, "no Retry-After: waiting does not help"
    assert retry_delay(500, {}, 0) is None


def test_routing_header_and_host():
    local = _config.resolve("local", "k", "http://127.0.0.1:1", None, None)
    target = _ops.Target(local, "iabc", "tok")
    assert target.url(49983, "/files") == "http://127.0.0.1:1/files"
    assert _ops.Target(local, "iabc", domain="d.com").url(49983, "/x") == "http://127.0.0.1:1/x"
    assert target.headers(49999, "root")["E2b-Sandbox-Port"] == "49999"
    assert target.headers(49983, "root")["Authorization"] == "Basic " + base64.b64encode(b"root:").decode()
    remote = _config.resolve("alicloud-express", "k", "https://api.example.com", "example.com", None)
    assert _ops.Target(remote, "iabc").url(49983, "/x") == "https://49983-iabc.example.com/x"
    assert _ops.Target(remote, "iabc", domain="o.com").url(1, "") == "https://1-iabc.o.com"
    e2b = _config.resolve("e2b", "k", None, None, None)
    assert e2b.api_url == "https://api.e2b.app"


def test_unknown_provider_lists_known_ones():
    with pytest.raises(ValueError, match="local, e2b, alicloud-express"):
        _config.resolve("nope", None, None, None, None)


def test_local_discovery_order(tmp_path, monkeypatch):
    state, config = tmp_path / "state", tmp_path / "config"
    state.mkdir(), config.mkdir()
    monkeypatch.setenv("ABX_STATE_DIR", str(state))
    monkeypatch.setenv("ABX_CONFIG_DIR", str(config))
    monkeypatch.delenv("ABX_SANDBOX_API_URL", raising=False)
    monkeypatch.delenv("ABX_SANDBOX_API_KEY", raising=False)
    (state / "daemon.addr").write_text("http://127.0.0.1:5\n")
    (state / "api_key").write_text("e2b_state\n")
    found = _config.resolve(None, None, None, None, None)
    assert (found.api_url, found.api_key, found.discovered) == ("http://127.0.0.1:5", "e2b_state", True)
    (config / "config.toml").write_text(
        'sandbox_api_url = "http://127.0.0.1:6"\nsandbox_api_key = "e2b_cfg"\n')
    found = _config.resolve(None, None, None, None, None)
    assert (found.api_url, found.api_key) == ("http://127.0.0.1:6", "e2b_cfg")
    monkeypatch.setenv("ABX_SANDBOX_API_URL", "http://127.0.0.1:7")
    monkeypatch.setenv("ABX_SANDBOX_API_KEY", "e2b_env")
    found = _config.resolve(None, None, None, None, None)
    assert (found.api_url, found.api_key) == ("http://127.0.0.1:7", "e2b_env")
    found = _config.resolve(None, "e2b_arg", "http://127.0.0.1:8", None, None)
    assert (found.api_url, found.api_key) == ("http://127.0.0.1:8", "e2b_arg")


def test_missing_abx_says_how_to_install(tmp_path, monkeypatch):
    from agent_sandbox.sync import Sandbox
    monkeypatch.setenv("ABX_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("ABX_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("ABX_BIN", str(tmp_path / "no-abx"))
    monkeypatch.delenv("ABX_SANDBOX_API_URL", raising=False)
    with pytest.raises(SandboxException, match="abx daemon start"):
        Sandbox.create()


def test_relative_paths_resolve_to_home():
    assert _ops.absolute_path("a/b.txt") == "/home/user/a/b.txt"
    assert _ops.absolute_path("x", "root") == "/root/x"
    assert _ops.absolute_path("/etc/hosts") == "/etc/hosts"


def test_times_keep_their_offset_and_lose_only_sub_microseconds():
    utc = _ops.parse_time("2026-01-01T00:00:00.123456789Z")
    assert utc.isoformat() == "2026-01-01T00:00:00.123456+00:00"
    east = _ops.parse_time("2026-01-01T02:00:00.5+02:00")
    assert east == utc.replace(microsecond=500000)
    assert _ops.parse_time("2026-01-01T00:00:00") == utc.replace(microsecond=0)
    assert _ops.parse_time(None) is None


def test_list_follows_next_token():
    pages = {None: (["a", "b"], "t1"), "t1": (["c"], None)}

    def handler(request: httpx.Request) -> httpx.Response:
        ids, token = pages[request.url.params.get("nextToken")]
        body = [{"sandboxID": i, "templateID": "base", "state": "running",
                 "startedAt": "2026-01-01T00:00:00.123456789Z"} for i in ids]
        return httpx.Response(200, json=body, headers={"X-Next-Token": token} if token else {})

    config = _config.resolve("local", "k", "http://d", None, None)
    op = _ops.list_sandboxes(config, None, None)
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        call = next(op)
        try:
            while True:
                call = op.send(client.request(call.method, call.url, params=call.params))
        except StopIteration as done:
            found = done.value
    assert [s.sandbox_id for s in found] == ["a", "b", "c"]
    assert found[0].started_at.microsecond == 123456


async def test_rate_limit_is_retried_then_raised():
    from agent_sandbox._async_transport import AsyncTransport

    answers = iter([429, 429, 200] + [429] * 10)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(next(answers), headers={"Retry-After": "0"}, json=[])

    transport = AsyncTransport(_config.resolve("local", "k", "http://d", None, None),
                               httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    try:
        assert await transport.run(_ops.list_sandboxes(transport.config, None, None)) == []
        with pytest.raises(RateLimitError):
            await transport.run(_ops.list_sandboxes(transport.config, None, None))
    finally:
        await transport.aclose()
