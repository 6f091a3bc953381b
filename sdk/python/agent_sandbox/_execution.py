"""Turns the code interpreter's NDJSON lines into an Execution, shared by both clients."""

from __future__ import annotations

from typing import Any

from .errors import TimeoutException
from .models import Execution, ExecutionError, Result


class ExecutionBuilder:
    """Feeds lines in; `execution` holds what arrived so far."""

    def __init__(self) -> None:
        self.execution = Execution()

    def handle(self, line: dict[str, Any]) -> tuple[str, Any] | None:
        """Records a line; returns (callback name, value) for lines users may watch."""
        kind = line.get("type")
        if kind in ("stdout", "stderr"):
            text = str(line.get("text", ""))
            getattr(self.execution.logs, kind).append(text)
            return (kind, text)
        if kind == "result":
            result = Result.from_json(line)
            self.execution.results.append(result)
            return ("result", result)
        if kind == "error":
            error = ExecutionError(name=str(line.get("name", "")), value=str(line.get("value", "")),
                                   traceback=_traceback_text(line.get("traceback", "")))
            self.execution.error = error
            return ("error", error)
        if kind == "number_of_executions":
            self.execution.execution_count = line.get("execution_count")
        return None


def _traceback_text(traceback: Any) -> str:
    return "\n".join(traceback) if isinstance(traceback, list) else str(traceback)


def code_timeout_error(timeout: float | None) -> TimeoutException:
    """The error raised when run_code passes its timeout (the code is interrupted)."""
    return TimeoutException(f"run_code: the code ran past its {timeout} s timeout and was "
                            "interrupted; the context keeps its state. Pass a larger timeout=")
