"""A tool step: render its arguments, call its tool through the gateway, return the output."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from switchyard.contract import StepInvocation, StepResult
from switchyard.model import ToolBody
from switchyard.runtime.budgets import BudgetGuard
from switchyard.runtime.clock import Deadline
from switchyard.runtime.rendering import render
from switchyard.runtime.services import StepServices
from switchyard.runtime.settings import LLM_SCRIPT_ENV
from switchyard.runtime.step_io import (
    budgeted,
    check_output,
    context_for,
    deadline_for,
    finish,
    run_script,
    step_fields,
    tool_definitions,
)
from switchyard.runtime.tools import CallScope, ToolGateway, ToolRegistry, ToolRequest
from switchyard.runtime.tools.scripted import ScriptedToolRegistry


def scripted_tool_answer(invocation: StepInvocation) -> Callable[[], Any] | None:
    """What this attempt of the step answers from the script instead of calling its tool (its
    output, or its scripted error raised), or None when the script has no entries for it.

    The script is the run's own (the local engine stores it with the run), else the file
    `SWITCHYARD_LLM_SCRIPT` names, as for agent and router steps: a script answers the same
    steps on Lambda as on the local engine."""
    from switchyard.runtime.providers.base import CallKey
    from switchyard.runtime.providers.scripted import load_script, position, scripted_error

    script = run_script(invocation) or os.environ.get(LLM_SCRIPT_ENV)
    if not script:
        return None
    entries = load_script(script).get(invocation.step_id)
    if not entries:
        return None
    scope = invocation.context.scope or {}
    key = CallKey(
        invocation.context.run.id,
        invocation.step_id,
        scope.get("index"),
        scope.get("iteration"),
        invocation.attempt,
    )
    entry = entries[min(position(key), len(entries) - 1)]
    if "output" not in entry and "error" not in entry:
        return None  # an entry with neither: this attempt calls the tool

    def answer() -> Any:
        if "error" in entry:
            raise scripted_error(entry, invocation.step_id)
        return entry.get("output")

    return answer


def run_tool_step(
    invocation: StepInvocation,
    services: StepServices,
    *,
    deadline: Deadline | None = None,
    lambda_context: Any = None,
) -> StepResult:
    """Run one attempt of a tool step; raises a `StepError` on failure.

    When the script (`--llm-script`, `SWITCHYARD_LLM_SCRIPT`) has entries for this step, its
    answer stands in for the tool at the moment the tool would run: an offline run of a workflow
    whose tools need the network. Everything around the call is the real thing: budget, rendered
    arguments, allow-list, `input_schema`, policy, loop detection, idempotency, audit and the
    output's `output_schema`."""
    scripted = scripted_tool_answer(invocation)
    step = ToolBody.model_validate(
        {k: v for k, v in step_fields(invocation).items() if k in ToolBody.model_fields}
    )
    guard = BudgetGuard(
        budgeted(invocation),
        services.ledger,
        services.catalog,
        services.clock,
        step_budget=step.budget,
    )
    guard.start_attempt()
    context = context_for(invocation, services)
    args = render(step.args, context)
    registry = ToolRegistry(tool_definitions(invocation))
    if scripted is not None:
        registry = ScriptedToolRegistry(registry, step.tool, scripted)
    gateway = ToolGateway(
        registry,
        stores=services.tools,
        env=services.tool_env,
        rate_limits=services.gate,
    )
    scope = CallScope(
        run=invocation.context.run,
        step_id=invocation.step_id,
        idempotency_key=invocation.idempotency_key,
        inputs=invocation.context.inputs,
        side_effect=step.side_effect,
        deadline=deadline_for(invocation, services, deadline, lambda_context),
        lambda_context=lambda_context,
    )
    output = gateway.call(ToolRequest(step.tool, args), scope)
    check_output(output, step.output_schema)
    return finish(invocation, services, output)
