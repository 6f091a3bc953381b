"""Runs a recipe from examples/ with a scripted model in place of a real one (no network,
no key): the model asks for two tool calls, the second using a variable the first set, then
answers with what the tools returned. Run with the examples venv's Python:

    scripted_models.py agents|langchain

Prints the recipe's final answer. The daemon comes from ABX_SANDBOX_API_URL/_KEY."""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

CALLS = [
    "x = sum(range(10))\nimport socket\nprint(socket.gethostname())",
    "x * 2",
]


# Tags the recipe's sandbox, so the test can check it is gone afterwards.
SANDBOX_ARGS: dict[str, Any] = {"metadata": {"recipe-run": os.environ.get("RECIPE_RUN", "")}}


def answer(outputs: list[str]) -> str:
    return f"hostname={outputs[0].strip()} double={outputs[1].strip()}"


def run_agents_sdk() -> str:
    import agents_sdk_tool
    from agents import Model, ModelResponse, Usage, set_tracing_disabled
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)

    class Scripted(Model):
        async def get_response(self, system_instructions, input, *args: Any, **kwargs: Any):
            items = input if isinstance(input, list) else []
            outputs = [str(i["output"]) for i in items
                       if isinstance(i, dict) and i.get("type") == "function_call_output"]
            if len(outputs) < len(CALLS):
                n = len(outputs)
                out = ResponseFunctionToolCall(type="function_call", call_id=f"call{n}",
                                               name="run_python", id=f"fc{n}", status="completed",
                                               arguments=json.dumps({"code": CALLS[n]}))
            else:
                text = ResponseOutputText(type="output_text", text=answer(outputs), annotations=[])
                out = ResponseOutputMessage(id="msg", type="message", role="assistant",
                                            status="completed", content=[text])
            return ModelResponse(output=[out], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any):
            raise NotImplementedError("the recipe does not stream")

    return asyncio.run(agents_sdk_tool.ask("hostname and double of sum(range(10))?", Scripted(),
                                           **SANDBOX_ARGS))


def run_langchain() -> str:
    import langchain_tool
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Scripted(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
            outputs = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
            if len(outputs) < len(CALLS):
                n = len(outputs)
                reply = AIMessage(content="", tool_calls=[
                    {"name": "run_python", "args": {"code": CALLS[n]}, "id": f"call{n}"}])
            else:
                reply = AIMessage(content=answer(outputs))
            return ChatResult(generations=[ChatGeneration(message=reply)])

    return asyncio.run(langchain_tool.ask("hostname and double of sum(range(10))?", Scripted(),
                                           **SANDBOX_ARGS))


if __name__ == "__main__":
    print({"agents": run_agents_sdk, "langchain": run_langchain}[sys.argv[1]]())
