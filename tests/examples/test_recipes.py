"""The README's recipes (examples/agents_sdk_tool.py, examples/langchain_tool.py) run
against the real daemon with a scripted model: the model's code runs in a sandbox (not
on this host), a variable set by one tool call is there for the next, the tool output
reaches the model's answer, and the sandbox is gone when the conversation ends."""
from __future__ import annotations

import os
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("ABX_EXAMPLES_VENV", REPO / "build" / "examples-venv"))
VENV_PYTHON = VENV / "bin" / "python"

pytestmark = pytest.mark.skipif(
    not VENV_PYTHON.exists(),
    reason=f"{VENV_PYTHON} is missing: `make deps` installs the recipes' packages there",
)


# The package each recipe's framework comes from (tests/examples/requirements.txt).
FRAMEWORKS = {"agents": ("agents", "openai-agents"), "langchain": ("langchain_core",
                                                                   "langchain-core")}


def skip_without_framework(recipe: str) -> None:
    module, package = FRAMEWORKS[recipe]
    found = subprocess.run([str(VENV_PYTHON), "-c", f"import {module}, agent_sandbox"],
                           capture_output=True, text=True, timeout=60)
    if found.returncode != 0:
        why = (found.stderr.strip().splitlines() or ["no error text"])[-1]
        pytest.skip(f"{VENV_PYTHON} cannot import {module} (pip package {package}) or "
                    f"agent_sandbox ({why}): `make deps` installs tests/examples/requirements.txt")


@pytest.mark.parametrize("recipe", list(FRAMEWORKS))
def test_recipe_runs_the_models_code_in_a_sandbox(daemon, recipe):
    skip_without_framework(recipe)
    run = uuid.uuid4().hex
    env = daemon.env() | {"RECIPE_RUN": run}
    done = subprocess.run([str(VENV_PYTHON), str(Path(__file__).with_name("scripted_models.py")),
                           recipe], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    answer = done.stdout.strip().splitlines()[-1]
    hostname, double = (part.split("=", 1)[1] for part in answer.split())
    assert double == "90"  # x = sum(range(10)) from the first call, doubled in the second
    assert hostname and hostname != socket.gethostname()
    with daemon.api() as api:
        left = api.get("/v2/sandboxes", params={"metadata": f"recipe-run={run}"}).json()
    assert left == []
