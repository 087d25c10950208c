"""Agent, tool and LLM-router steps: a Lambda Task, its retries, and its failure handling."""

from __future__ import annotations

from typing import Any

from switchyard.compile.fragments import Exit, Fragment, State
from switchyard.compile.retry import retriers
from switchyard.compile.steps.failure import (
    Fallback,
    budget_and_human_catches,
    caught_into,
    compact,
    failure_path,
    into_tail,
    out_of_retries,
)
from switchyard.compile.steps.linear_retry import (
    attempts_counter,
    give_up,
    loop_catches,
    wait_loop,
)
from switchyard.compile.steps.unit import (
    ITEM_RESULT,
    LAMBDA_INVOKE,
    LOOP_RESULT,
    Unit,
    function,
    step_config,
)
from switchyard.contract import FunctionName
from switchyard.model import AgentBody, LlmRouter, OnError, SideEffect, ToolBody
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
    if unit.output_limit is not None:
        payload["output_limit"] = unit.output_limit
    parent_budget = getattr(parent, "budget", None)
    if parent_budget is not None:  # a map's or loop's budget, shared by its items or iterations
        payload["parent_budget"] = parent_budget.model_dump(mode="json", exclude_none=True)
    segmented = in_segments(body)
    if segmented:  # its budget is the parent's, shared by its segments (it is its own parent)
        config.pop("budget", None)
    selector: dict[str, Any] = {
        "status": "completed",
        "output.$": "$.Payload.output",
        "attempts.$": "$.Payload.attempts",
        "cost_usd.$": "$.Payload.cost_usd",
        "usage.$": "$.Payload.usage",
    }
    if unit.record_path == LOOP_RESULT:
        selector["loop_output.$"] = "$.Payload.loop_output"
    if segmented:
        selector["continued.$"] = "$.Payload.continued"
    state: State = {
        "Type": "Task",
        "Comment": _describe(unit, body),
        "Resource": LAMBDA_INVOKE,
        "Parameters": {"FunctionName": function(function_of(body)), "Payload": payload},
        "ResultSelector": selector,
        "ResultPath": unit.record_path,
    }
    timeout = unit.timeout(body)
    if timeout:
        state["TimeoutSeconds"] = timeout
    return state


def in_segments(body: Body) -> bool:
    """An agent whose tool loop continues as new (compiled by steps/agent_segments.py)."""
    return isinstance(body, AgentBody) and body.continue_as_new is not None


def _describe(unit: Unit, body: Body) -> str:
    where = ""
    if in_segments(body):
        where = ", once per segment of the run"
    elif unit.record_path == ITEM_RESULT:
        where = ", once per item of the map"
    elif unit.record_path == LOOP_RESULT:
        where = ", once per iteration of the loop"
    if isinstance(body, AgentBody):
        tools = f" and the tools {', '.join(body.tools)}" if body.tools else ""
        return f"'{unit.step_id}': asks the model{tools} (agent_step){where}"
    if isinstance(body, ToolBody):
        return f"'{unit.step_id}': calls the tool {body.tool} (tool_step){where}"
    return f"'{unit.step_id}': asks the model which route to take (router_step){where}"


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
        start = attempts_counter(unit, task_name)
    task["Retry"] = retriers(policy, side_effect)
    catches = budget_and_human_catches(unit, start, can_need_human=can_need_human(body))
    if on_error is None:  # inside a map or loop: a failure fails the item (the give-up)
        if linear:
            stop = give_up(unit)
            loop_start, decide = wait_loop(unit, policy, task_name)
            decide["Default"] = stop
            catches += loop_catches(policy, loop_start, stop)[0]
        task["Catch"] = catches
        return Fragment(start, [Exit(task)])
    failure = failure_path(unit, resume=start, on_error=on_error, fallback=fallback)
    caught_all = False
    if linear:
        loop_start, decide = wait_loop(unit, policy, task_name)
        decide["Default"] = out_of_retries(unit, failure.start)
        looping, caught_all = loop_catches(policy, loop_start, failure.start)
        catches += into_tail(looping, unit, failure.start)
    if not caught_all:
        catches.append(caught_into(unit, ["States.ALL"], failure.start))
    task["Catch"] = compact(catches)
    return Fragment(start, [unit.completed(task), *failure.exits])
