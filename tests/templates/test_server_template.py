"""The smallest useful custom template: a dir holding only a commands.py. `abx template build`
makes it `base` + the in-sandbox server (agent_sandbox.server, the copy abx carries) + those
commands; a sandbox from it serves them on port 9000 as soon as the create returns, through
ProviderSandbox and through plain HTTP via get_host(9000), with a terminal over WebSocket.
Real daemon, the Debian `base`."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
from agent_sandbox import ProviderSandbox, Template, UnsupportedException
from harness import Daemon, private_state_dir, start_daemon, stop_daemon
from helpers import abx

COMMANDS = '''
from agent_sandbox.server import command, start

@command(description="Greets someone")
def hello(name: str = "world") -> dict:
    return {"message": f"Hello, {name}!"}

start(9000)
'''


@pytest.fixture(scope="module")
def server_daemon(built_base: Daemon) -> Daemon:
    state = private_state_dir("abx-server-tpl-")
    d = start_daemon(state / "state", shared_templates=False,
                     extra_args=("--templates-dir", str(built_base.data_dir / "templates"),
                                 "--warm-pool", "0"))
    yield d
    stop_daemon(d)
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def greeter(server_daemon: Daemon, tmp_path_factory) -> str:
    context = tmp_path_factory.mktemp("greeter")
    (context / "commands.py").write_text(COMMANDS)
    r = abx(server_daemon, "template", "build", str(context), "--name", "greeter", timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "in-sandbox server" in r.stderr
    info = json.loads(abx(server_daemon, "template", "inspect", "greeter").stdout)
    assert "agent_sandbox.server" in info["startCmd"], info
    return "greeter"


def test_a_lone_commands_py_is_served_on_port_9000(server_daemon: Daemon, greeter: str):
    async def scenario():
        conn = {"api_key": server_daemon.api_key, "api_url": server_daemon.url}
        sandbox = await ProviderSandbox.create(template=greeter, **conn)
        try:
            # No wait: the create returned once the server answered.
            assert await sandbox.server.call("hello", name="abx") == {"message": "Hello, abx!"}
            capabilities = await sandbox.server.capabilities()
            assert "commands" in json.dumps(capabilities)

            host = sandbox.get_host(9000)
            port = urlparse(server_daemon.url).port
            assert host.startswith("9000-") and host.endswith(f":{port}")
            reply = httpx.post(f"{server_daemon.url}/commands/hello", json={"name": "http"},
                               headers={"Host": host}, timeout=30)
            assert reply.status_code == 200, reply.text
            assert "Hello, http!" in reply.text

            async with sandbox.server.terminal(cmd="/bin/sh") as term:
                await term.send("echo $((6*7)); exit 4\n")
                output = b"".join([chunk async for chunk in term.output()])
            assert b"42" in output and term.exit_code == 4

            # base has no Playwright: the browser group says so instead of failing.
            with pytest.raises(UnsupportedException):
                await sandbox.server.browser.navigate("http://127.0.0.1:9000/")
        finally:
            await sandbox.kill()

    import asyncio
    asyncio.run(scenario())


def test_a_dir_without_sandboxfile_or_commands_py_is_refused(server_daemon: Daemon,
                                                              tmp_path: Path):
    (tmp_path / "notes.txt").write_text("nothing to build")
    r = abx(server_daemon, "template", "build", str(tmp_path), "--name", "nothing")
    assert r.returncode != 0
    assert "no Sandboxfile, Dockerfile or commands.py" in r.stderr


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "templates"


def test_the_shipped_example_templates_build_and_answer(server_daemon: Daemon):
    """examples/templates as the README tells users to build them: `server` (a lone
    commands.py) answers its command, `http-service` (a Sandboxfile with CMD and READY) its
    page, each right after the create returns."""
    for name in ("server", "http-service"):
        r = abx(server_daemon, "template", "build", str(EXAMPLES / name), "--name",
                f"example-{name}", timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]

    async def scenario():
        conn = {"api_key": server_daemon.api_key, "api_url": server_daemon.url}
        sandbox = await ProviderSandbox.create(template="example-server", **conn)
        try:
            assert await sandbox.server.call("hello", name="abx") == {"greeting": "hello, abx"}
        finally:
            await sandbox.kill()
        info = await Template.get("example-http-service", **conn)
        assert "http.server" in info.start_cmd and info.ready_cmd.startswith("curl -sf"), info
        assert "agent_sandbox.server" in (await Template.get("example-server", **conn)).start_cmd
        sandbox = await ProviderSandbox.create(template="example-http-service", **conn)
        try:
            reply = httpx.get(f"{server_daemon.url}/", headers={"Host": sandbox.get_host(9000)},
                              timeout=30)
            expected = (EXAMPLES / "http-service" / "index.html").read_text()
            assert reply.status_code == 200 and reply.text == expected
        finally:
            await sandbox.kill()

    import asyncio
    asyncio.run(scenario())
    for name in ("server", "http-service"):
        abx(server_daemon, "template", "rm", f"example-{name}")

