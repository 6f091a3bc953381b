"""The `server` example: this file alone is the template.

    abx template build examples/templates/server --name server

With no Sandboxfile, abx makes it `base` + the in-sandbox server (agent_sandbox.server) + this
file, started at every create on port 9000. Then, from Python:

    sandbox = await ProviderSandbox.create(template="server")
    await sandbox.server.call("hello", name="abx")     # {"greeting": "hello, abx"}
"""
from agent_sandbox.server import command, start


@command(description="Greets someone")
def hello(name: str = "world") -> dict:
    return {"greeting": f"hello, {name}"}


start(9000)
