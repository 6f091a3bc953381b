"""Recipe: a sandbox as the code tool of a LangChain chat model.

The model's Python runs in a disposable sandbox, never on this machine; one sandbox
serves one conversation (variables persist between tool calls) and is destroyed with it.

    pip install langchain-core langchain-openai ./sdk/python
    OPENAI_API_KEY=... python examples/langchain_tool.py "What is the 30th Fibonacci number?"

`ask(question, model)` takes any chat model that supports tool calling (tests pass a
scripted one, see tests/examples/).
"""
from __future__ import annotations

import asyncio
import sys
from typing import Any

from agent_sandbox import Sandbox
from agent_sandbox.models import Execution
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool, tool

INSTRUCTIONS = (
    "Answer questions by running Python with the run_python tool; never guess a number "
    "you can compute. Variables persist between calls."
)
MAX_STEPS = 8  # model turns before giving up


def describe(execution: Execution) -> str:
    """What the model sees of one run: output and value, or the error."""
    if execution.error is not None:
        return f"{execution.stdout}{execution.error.name}: {execution.error.value}"
    return execution.text or "(no output)"


def code_tool(sandbox: Sandbox) -> BaseTool:
    @tool
    async def run_python(code: str) -> str:
        """Run Python code in a sandbox and return what it printed and the value of its
        last expression, or the error it raised."""
        return describe(await sandbox.run_code(code, timeout=60))

    return run_python


async def ask(question: str, model: BaseChatModel, **sandbox_args: Any) -> str:
    async with await Sandbox.create(template="base", **sandbox_args) as sandbox:
        run_python = code_tool(sandbox)
        llm = model.bind_tools([run_python])
        messages: list[BaseMessage] = [SystemMessage(INSTRUCTIONS), HumanMessage(question)]
        for _ in range(MAX_STEPS):
            reply = await llm.ainvoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                return str(reply.content)
            for call in reply.tool_calls:  # each answered with a ToolMessage
                messages.append(await run_python.ainvoke(call))
        raise RuntimeError(f"no answer after {MAX_STEPS} model turns")


if __name__ == "__main__":
    from langchain_openai import ChatOpenAI

    question = " ".join(sys.argv[1:]) or "What is 2**100?"
    print(asyncio.run(ask(question, ChatOpenAI(model="gpt-4.1-mini"))))
