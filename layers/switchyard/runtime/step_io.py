"""What every step runner shares: reading the invocation, and shaping the result.

The result's output is checked against the step's `output_schema` (`invalid_output`), large
parts of it are moved to the output store (so the state stays under Step Functions' limits), and
inside a loop `loop_output` carries the output with the iteration count.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import jsonschema_rs

from switchyard.contract import (
    LARGE_OUTPUT_BYTES,
    EnclosingBudget,
    StepContext,
    StepInvocation,
    StepResult,
    Usage,
    loop_output,
)
from switchyard.contract.step_errors import InvalidOutputError
from switchyard.model import parse_duration
from switchyard.runtime.clock import Deadline
from switchyard.runtime.large_outputs import offload, resolve
from switchyard.runtime.rendering import template_context
from switchyard.runtime.services import StepServices

DEFAULT_ATTEMPT_SECONDS = 900.0
LAMBDA_MARGIN_SECONDS = 2.0
"""Kept free at the end of a Lambda invocation: the attempt settles its budget, writes its
journal and returns (or fails with `timeout`) before Lambda would stop it."""


def step_fields(invocation: StepInvocation) -> dict[str, Any]:
    """The step as the model types read it (without the runtime-only `tool_defs`)."""
    return {key: value for key, value in invocation.step.items() if key != "tool_defs"}


def tool_definitions(invocation: StepInvocation) -> dict[str, Any]:
    defs = invocation.step.get("tool_defs") or {}
    return dict(defs)


def budgeted(invocation: StepInvocation) -> StepInvocation:
    """The invocation as its budget guard sees it. Inside a map or loop with a `budget` (the
    payload's `parent_budget`), that budget is one more budget enclosing the step: the ledger
    scope `step:<run id>:<map or loop id>`, without the item's index or the iteration, so every
    item and iteration reserves against the same limit."""
    limits = invocation.parent_budget
    scope = invocation.context.scope or {}
    if limits is None or not ("index" in scope or "iteration" in scope):
        return invocation
    run = invocation.context.run
    parent = EnclosingBudget(
        kind="step",
        id=f"{run.id}:{invocation.step_id}",
        max_cost_usd=limits.max_cost_usd,
        max_tokens=limits.max_tokens,
    )
    enclosed = run.model_copy(update={"enclosing_budgets": [*run.enclosing_budgets, parent]})
    context = invocation.context.model_copy(update={"run": enclosed})
    return invocation.model_copy(update={"context": context})


def deadline_for(
    invocation: StepInvocation,
    services: StepServices,
    deadline: Deadline | None,
    lambda_context: Any = None,
) -> Deadline:
    """The caller's deadline; else the step's `timeout` (else 15 minutes, Lambda's most), or the
    time the function has left (`get_remaining_time_in_millis()` of its Lambda context, less
    `LAMBDA_MARGIN_SECONDS`) when that is sooner, so that no wait outlasts the function."""
    if deadline is not None:
        return deadline
    timeout = invocation.step.get("timeout")
    seconds = float(parse_duration(timeout)) if timeout is not None else DEFAULT_ATTEMPT_SECONDS
    remaining = getattr(lambda_context, "get_remaining_time_in_millis", None)
    if callable(remaining):
        seconds = min(seconds, int(remaining()) / 1000.0 - LAMBDA_MARGIN_SECONDS)
    return Deadline(services.clock.now() + seconds, services.clock)


def context_for(invocation: StepInvocation, services: StepServices) -> dict[str, Any]:
    """The template context of the step, with large-output references resolved."""
    store = services.output_store
    step = invocation.step
    return template_context(
        replayed_context(invocation),
        after=list(step.get("after") or []),
        merge=str(step.get("merge") or "by_step"),
        step_input=step.get("input") or None,
        resolver=(lambda value: resolve(value, store)) if store is not None else None,
    )


def replayed_context(invocation: StepInvocation) -> StepContext:
    """The step's context; for a step that replays another run's records (a reset,
    `ResetFrom.reuse`), with `run.id` that run's, so it renders the arguments it was recorded
    with and its calls find their results."""
    reset = invocation.context.run.reset
    replays = reset.reuse.get(invocation.step_id) if reset is not None else None
    if replays is None:
        return invocation.context
    run = invocation.context.run.model_copy(update={"id": replays})
    return invocation.context.model_copy(update={"run": run})


def check_output(output: Any, schema: dict[str, Any] | None) -> None:
    if schema is None:
        return
    validator = jsonschema_rs.validator_for(schema)
    errors = [
        f"{'/'.join(map(str, error.instance_path)) or '(top)'}: {error.message}"
        for error in validator.iter_errors(output)
    ]
    if errors:
        raise InvalidOutputError(
            f"the output does not match the step's output_schema: {'; '.join(errors[:5])}",
            errors=errors,
        )


def finish(
    invocation: StepInvocation,
    services: StepServices,
    output: Any,
    *,
    cost: Decimal = Decimal(0),
    usage: Usage | None = None,
    continued: bool = False,
) -> StepResult:
    """The StepResult: output offloaded if large, `loop_output` inside a loop."""
    output = json.loads(json.dumps(output, default=str))
    if services.output_store is not None:
        prefix = f"{invocation.context.run.id}/{invocation.idempotency_key.replace(':', '/')}"
        limit = invocation.output_limit or LARGE_OUTPUT_BYTES
        output = offload(output, services.output_store, prefix, limit=limit)
    scope = invocation.context.scope or {}
    return StepResult(
        output=output,
        attempts=invocation.attempt,
        cost_usd=float(cost),
        usage=usage,
        loop_output=loop_output(output, scope["iteration"]) if "iteration" in scope else None,
        continued=continued,
    )


def run_script(invocation: StepInvocation) -> Any:
    """The model script stored with the run (the local engine passes it as `llm_script`)."""
    extra = invocation.model_extra or {}
    return extra.get("llm_script")
