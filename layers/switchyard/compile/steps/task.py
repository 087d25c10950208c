"""Agent, tool and LLM-router steps: a Lambda Task, its retries, and its failure handling."""

from __future__ import annotations

from typing import Any

from switchyard.compile.fragments import Exit, Fragment, State
from switchyard.compile.retry import linear_delays, retried_error_names, retriers
from switchyard.compile.steps.failure import (
    ERROR_PATH,
    Fallback,
    budget_and_human_catches,
    catch,
    failure_path,
)
from switchyard.compile.steps.unit import LAMBDA_INVOKE, LOOP_RESULT, Unit, function, step_config
from switchyard.contract import FunctionName
from switchyard.model import AgentBody, LlmRouter, OnError, RetryPolicy, SideEffect, ToolBody
from switchyard.model.builtin_tools import BUILTIN_TOOLS

Body = AgentBody | ToolBody | LlmRouter


def function_of(body: Body) -> FunctionName:
    if isinstance(body, AgentBody):
        return FunctionName.AGENT_STEP
    if isinstance(body, ToolBody):
        return FunctionName.TOOL_STEP
    return FunctionName.ROUTER_STEP


def side_effect_of(unit: Unit, body: Body) -> SideEffect | None:
    if not isinstance(body, ToolBody):
        return None
    if body.side_effect is not None:
        return body.side_effect
    declared = unit.workflow.tools.get(body.tool)
    if declared is not None:
        return declared.effective_side_effect()
    builtin = BUILTIN_TOOLS.get(body.tool)
    return builtin.default_side_effect(body.args) if builtin is not None else None


def can_need_human(body: Body) -> bool:
    """Whether the step can raise human_required: every tool call is checked for loops (the
    same tool with the same arguments a third time in a run), so every tool step and every agent
    with tools can; a tool's approval policy and a non-idempotent tool's unknown outcome also
    raise it. Routers and agents without tools call no tool."""
    if isinstance(body, AgentBody):
        return bool(body.tools)
    return isinstance(body, ToolBody)


def invocation(unit: Unit, body: Body, *, loop_retries: bool) -> State:
    """The Task that calls the step's function with a `StepInvocation` payload."""
    parent = unit.step if unit.scope else None
    config = step_config(unit.workflow, body, parent_input=getattr(parent, "input", None))
    if parent is not None and parent.after:  # a map's or loop's step joins its parent's `after`
        config["after"] = list(parent.after)
        config["merge"] = parent.merge
    payload: dict[str, Any] = {
        "step_id": unit.step_id,
        "step": config,
        "workflow": unit.workflow_info(),
        "context": unit.context(body),
        "retry_count.$": "$$.State.RetryCount",
    }
    if loop_retries:
        payload["loop_retries.$"] = f"{unit.record_path}.retries"
    parent_budget = getattr(parent, "budget", None)
    if parent_budget is not None:  # a map's or loop's budget, shared by its items or iterations
        payload["parent_budget"] = parent_budget.model_dump(mode="json", exclude_none=True)
    selector: dict[str, Any] = {
        "status": "completed",
        "output.$": "$.Payload.output",
        "attempts.$": "$.Payload.attempts",
        "cost_usd.$": "$.Payload.cost_usd",
        "usage.$": "$.Payload.usage",
    }
    if unit.record_path == LOOP_RESULT:
        selector["loop_output.$"] = "$.Payload.loop_output"
    state: State = {
        "Type": "Task",
        "Resource": LAMBDA_INVOKE,
        "Parameters": {"FunctionName": function(function_of(body)), "Payload": payload},
        "ResultSelector": selector,
        "ResultPath": unit.record_path,
    }
    timeout = unit.timeout(body)
    if timeout:
        state["TimeoutSeconds"] = timeout
    return state


def lambda_step(
    unit: Unit, body: Body, *, on_error: OnError | None, fallback: Fallback | None = None
) -> Fragment:
    """The Task with retries; its failures handled by the failure path (or propagated when
    `on_error` is None: an item of a map or an iteration of a loop fails its whole step)."""
    block = unit.block
    policy = unit.retry_policy(body)
    side_effect = side_effect_of(unit, body)
    linear = (
        policy.backoff == "linear"
        and policy.max_attempts > 1
        and side_effect is not SideEffect.NON_IDEMPOTENT
    )
    task = invocation(unit, body, loop_retries=linear)
    task_name = block.add(unit.name(), task)
    start = task_name
    if linear:
        counter: State = {
            "Type": "Pass",
            "Result": {"status": "running", "retries": 0},
            "ResultPath": unit.record_path,
            "Next": task_name,
        }
        start = block.add(unit.name("attempts"), counter)
    task["Retry"] = retriers(policy, side_effect)
    catches = budget_and_human_catches(unit, start, can_need_human=can_need_human(body))
    decide: State | None = None
    if linear:
        loop_start, decide = _wait_loop(unit, policy, task_name)
        catches.append(catch(retried_error_names(policy), loop_start))
    if on_error is None:
        task["Catch"] = catches
        if decide is not None:
            decide["Default"] = block.add(
                unit.name("give up"),
                {
                    "Type": "Fail",
                    "ErrorPath": f"{ERROR_PATH}.Error",
                    "CausePath": f"{ERROR_PATH}.Cause",
                },
            )
        return Fragment(start, [Exit(task)])
    failure = failure_path(unit, resume=start, on_error=on_error, fallback=fallback)
    catches.append(catch(["States.ALL"], failure.start))
    task["Catch"] = catches
    if decide is not None:
        decide["Default"] = failure.start
    return Fragment(start, [Exit(task), *failure.exits])


def _wait_loop(unit: Unit, policy: RetryPolicy, task_name: str) -> tuple[str, State]:
    """Linear backoff: count the retry, wait min(base * (n+1), max) (jittered), try again.

    Returns the loop's first state and its Choice, whose Default (retries exhausted) the caller
    sets."""
    block = unit.block
    delays = linear_delays(policy)
    ceilings = ", ".join(str(d + 1 if policy.jitter == "full" else d) for d in delays)
    pick = f"States.ArrayGetItem(States.Array({ceilings}), {unit.record_path}.retries)"
    delay = f"States.MathRandom(0, {pick})" if policy.jitter == "full" else pick
    wait: State = {"Type": "Wait", "SecondsPath": f"{unit.record_path}.delay", "Next": task_name}
    wait_name = block.add(unit.name("backoff"), wait)
    count: State = {
        "Type": "Pass",
        "Parameters": {
            "status": "running",
            "retries.$": f"States.MathAdd({unit.record_path}.retries, 1)",
            "delay.$": delay,
        },
        "ResultPath": unit.record_path,
        "Next": wait_name,
    }
    count_name = block.add(unit.name("count retry"), count)
    decide: State = {
        "Type": "Choice",
        "Choices": [
            {
                "Variable": f"{unit.record_path}.retries",
                "NumericLessThan": policy.max_attempts - 1,
                "Next": count_name,
            }
        ],
    }
    return block.add(unit.name("retry?"), decide), decide
