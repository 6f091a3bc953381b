"""Recipe: a sandbox as the code tool of an OpenAI Agents SDK agent.

The agent's Python runs in a disposable sandbox, never on this machine; one sandbox
serves one conversation (variables persist between tool calls) and is destroyed with it.

    pip install openai-agents ./sdk/python
    OPENAI_API_KEY=... python examples/agents_sdk_tool.py "What is the 30th Fibonacci number?"

`ask(question, model=...)` takes a model name or any `agents.Model` (tests pass a scripted
one, see tests/examples/).
"""
from __future__ import annotations

import asyncio
import sys
from typing import Any

from agent_sandbox import Sandbox
from agent_sandbox.models import Execution
from agents import Agent, FunctionTool, Model, Runner, function_tool

INSTRUCTIONS = (
    "Answer questions by running Python with the run_python tool; never guess a number "
    "you can compute. Variables persist between calls."
)


def describe(execution: Execution) -> str:
    """What the model sees of one run: output and value, or the error."""
    if execution.error is not None:
        return f"{execution.stdout}{execution.error.name}: {execution.error.value}"
    return execution.text or "(no output)"


def code_tool(sandbox: Sandbox) -> FunctionTool:
    @function_tool
    async def run_python(code: str) -> str:
        """Run Python code in a sandbox and return what it printed and the value of its
        last expression, or the error it raised.

        Args:
            code: the Python source to run.
        """
        return describe(await sandbox.run_code(code, timeout=60))

    return run_python


async def ask(question: str, model: str | Model = "gpt-4.1-mini", **sandbox_args: Any) -> str:
    async with await Sandbox.create(template="base", **sandbox_args) as sandbox:
        agent = Agent(name="analyst", instructions=INSTRUCTIONS, tools=[code_tool(sandbox)],
                      model=model)
        result = await Runner.run(agent, question)
        return str(result.final_output)


if __name__ == "__main__":
    print(asyncio.run(ask(" ".join(sys.argv[1:]) or "What is 2**100?")))
