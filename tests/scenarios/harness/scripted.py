"""In-process stand-ins for the step functions, playing a scenario's script.

Only agent_step, tool_step and router_step are scripted (they would call models and tools);
run_start and render are switchyard's real functions.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from switchyard.contract import GateRequest, StepInvocation, StepResult, Usage, loop_output
from switchyard.contract.errors import lambda_error
from switchyard.platform import render as render_function
from switchyard.platform import run_start as run_start_function


@dataclass
class OpenGate:
    request: GateRequest
    token: str
    handled: bool = False


@dataclass
class ScriptedFunctions:
    """The functions a compiled machine calls, by name (`agent_step`, `run_start`, ...)."""

    script: dict[str, list[dict[str, Any]]]
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    gates: list[OpenGate] = field(default_factory=list)
    _attempts: dict[tuple[str, Any, Any], int] = field(default_factory=lambda: defaultdict(int))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def invoke(self, function: str, payload: dict[str, Any]) -> Any:
        """Call a function; failures raise exceptions named by their error type, as Lambda does."""
        if function == "run_start":
            return run_start_function.handle(payload)
        if function == "render":
            return render_function.handle(payload)
        if function == "approval_notify":
            return self._gate(payload)
        if function in ("agent_step", "tool_step", "router_step"):
            return self._step(StepInvocation.model_validate(payload))
        raise ValueError(f"no function {function}")

    def _gate(self, payload: dict[str, Any]) -> dict[str, Any]:
        request = GateRequest.model_validate(payload)
        with self._lock:
            self.gates.append(OpenGate(request, request.task_token))
        return {"notified": True}

    def _step(self, invocation: StepInvocation) -> dict[str, Any]:
        scope = invocation.context.scope or {}
        key = (invocation.step_id, scope.get("index"), scope.get("iteration"))
        with self._lock:
            self.calls[invocation.step_id] += 1
            attempt = self._attempts[key]
            self._attempts[key] += 1
        entries = self.script.get(invocation.step_id)
        if not entries:
            raise lambda_error(
                "permanent", f"the scenario has no script for step {invocation.step_id}"
            )
        # As the scripted provider reads a script: one entry per attempt, per map item, per loop
        # iteration (runtime.providers.scripted.position), counting attempts here because a
        # resumed step starts its Task afresh.
        position = attempt + (scope.get("index") or 0) + ((scope.get("iteration") or 1) - 1)
        entry = entries[min(position, len(entries) - 1)]
        time.sleep(float(entry.get("sleep", 0)))  # a slow step: real time, as interpreters see it
        if "error" in entry:
            raise lambda_error(entry["error"], json.dumps(_cause(entry, invocation.attempt)))
        if "output" in entry:
            output = entry["output"]
        elif "route" in entry:
            output = {"route": entry["route"], "reason": entry.get("reason", "")}
        else:
            output = {"text": entry.get("text", "")}
        result = StepResult(
            output=output,
            attempts=invocation.attempt,
            cost_usd=float(entry.get("cost_usd", 0.001)),
            usage=Usage(
                input_tokens=int(entry.get("input_tokens", 10)),
                output_tokens=int(entry.get("output_tokens", 5)),
                model=invocation.step.get("model"),
                provider="scripted",
            ),
            loop_output=loop_output(output, scope["iteration"]) if "iteration" in scope else None,
        )
        return result.model_dump(mode="json")


def _cause(entry: dict[str, Any], attempt: int) -> dict[str, Any]:
    """The error's cause as the step runtime writes it (`StepError.as_lambda_exception`): the
    type, the message and the attempt; a `human_required` cause is the `HumanRequest` itself."""
    message = entry.get("message", "scripted failure")
    if entry["error"] == "human_required":
        return {**json.loads(message), "attempts": attempt}
    cause: dict[str, Any] = {"type": entry["error"], "message": message, "attempts": attempt}
    if "retry_after" in entry:
        cause["retry_after"] = entry["retry_after"]
    return cause
