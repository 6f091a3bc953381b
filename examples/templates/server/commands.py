"""Commands the in-sandbox server offers (POST them through sandbox.get_host(9000))."""
from agent_sandbox.server import command


@command(description="Greets someone")
def hello(name: str = "world") -> dict:
    return {"greeting": f"hello, {name}"}
