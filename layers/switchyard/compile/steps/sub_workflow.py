"""Sub-workflows: the child's state machine runs as an execution of its own
(`states:startExecution.sync:2`).

The child's name is a hash of the parent run, the step, the map index or loop iteration, and the
attempt (`$$.State.EnteredTime` and `$$.State.RetryCount`): each attempt, resume or redrive starts
a new child, while the same attempt always names the same child, so a start that is repeated (a
recovered engine re-dispatching it) finds the child instead of starting a second one.

The child's input carries a `ParentLink` under `PARENT_LINK_KEY`: the parent's run, the parent
workflow's budget and the step's budget, so that the child's spend also counts toward them."""

from __future__ import annotations

from typing import Any

from switchyard.compile.fragments import Exit, Fragment, State
from switchyard.compile.retry import retriers
from switchyard.compile.steps.failure import (
    Fallback,
    caught_into,
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
from switchyard.compile.steps.unit import START_CHILD_SYNC, Unit
from switchyard.compile.template_paths import parameters_for, render_task
from switchyard.contract import PARENT_LINK_KEY, state_machine_placeholder
from switchyard.model import OnError, StepBudget, SubWorkflowBody, WorkflowBudget

PARENT_KEY = "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID"
RENDERED = "$.rendered"


def _item(unit: Unit) -> str | None:
    """The path of the map index or loop iteration the step runs for, if any."""
    if unit.scope and unit.record_path == "$.result":
        return "$.scope.index"
    if unit.scope and unit.record_path == "$.scope.result":
        return "$.scope.iteration"
    return None


def child_name(unit: Unit) -> str:
    """The child's execution name, one per attempt (Step Functions allows 80 characters of
    [0-9A-Za-z_-]: a SHA-1 in hex)."""
    parts = ["$.run.id", f"'{unit.step_id}'"]
    item = _item(unit)
    if item:
        parts.append(item)
    parts += ["$$.State.EnteredTime", "$$.State.RetryCount"]
    pattern = ":".join("{}" for _ in parts)
    return f"States.Hash(States.Format('{pattern}', {', '.join(parts)}), 'SHA-1')"


def _limits(budget: WorkflowBudget | StepBudget | None) -> dict[str, Any]:
    if budget is None:
        return {}
    return budget.model_dump(mode="json", include={"max_cost_usd", "max_tokens"}, exclude_none=True)


def parent_link(unit: Unit, body: SubWorkflowBody) -> dict[str, Any]:
    """The `ParentLink` parameters: the run from the state, the budgets known at compile time."""
    link: dict[str, Any] = {"run.$": "$.run", "step": unit.step_id}
    item = _item(unit)
    if item:
        link["item.$"] = f"States.Format(':{{}}', {item})"
    composite = getattr(unit.step, "budget", None) if unit.scope else None
    for key, budget in (
        ("budget", unit.workflow.budget),
        ("composite_budget", composite),  # a map's or loop's, shared by all its child runs
        ("step_budget", body.budget),
    ):
        limits = _limits(budget)
        if limits:
            link[key] = limits
    if unit.output_limit is not None:  # the child's outputs' share of this state
        link["output_limit"] = unit.output_limit
    return link


def sub_workflow(
    unit: Unit,
    body: SubWorkflowBody,
    *,
    on_error: OnError | None,
    fallback: Fallback | None = None,
) -> Fragment:
    block = unit.block
    parent_input = getattr(unit.step, "input", None) if unit.scope else None
    child_input = {**(parent_input or {}), **body.input}
    pure, parameters = parameters_for(child_input, unit.workflow)
    task: State = {
        "Type": "Task",
        "Comment": f"runs workflow {body.workflow} as a child execution",
        "Resource": START_CHILD_SYNC,
        "Parameters": {
            "StateMachineArn": state_machine_placeholder(body.workflow_name, body.workflow_version),
            "Name.$": child_name(unit),
        },
        "ResultSelector": {"status": "completed", "output.$": "$.Output"},
        "ResultPath": unit.record_path,
    }
    link = parent_link(unit, body)
    if pure:
        task["Parameters"]["Input"] = {
            **parameters,
            f"{PARENT_KEY}.$": "$$.Execution.Id",
            PARENT_LINK_KEY: link,
        }
    else:
        task["Parameters"]["Input.$"] = f"{RENDERED}.value"
    timeout = unit.timeout(body)
    if timeout:
        task["TimeoutSeconds"] = timeout
    policy = unit.retry_policy(body)
    linear = policy.backoff == "linear" and policy.max_attempts > 1
    task["Retry"] = retriers(policy)  # none for linear: the wait loop below retries
    task_name = block.add(unit.name(), task)
    start = task_name
    if not pure:
        render = render_task(
            child_input,
            unit.context(body),
            step_id=unit.step_id,
            result_path=RENDERED,
            extra={f"{PARENT_KEY}.$": "$$.Execution.Id", PARENT_LINK_KEY: link},
            after=list(getattr(unit.step, "after", [])),
            merge=getattr(unit.step, "merge", "by_step"),
        )
        render["Comment"] = f"renders the input of '{unit.step_id}' for its child run"
        render["Next"] = task_name
        start = block.add(unit.name("input"), render)
    rendering = start if not pure else None
    if linear:
        start = attempts_counter(unit, start)
    if on_error is None:  # inside a map or loop: a failure fails the item (the give-up)
        if linear:
            stop = give_up(unit)
            loop_start, decide = wait_loop(unit, policy, task_name)
            decide["Default"] = stop
            task["Catch"] = loop_catches(policy, loop_start, stop)[0]
        return Fragment(start, [Exit(task)])
    failure = failure_path(unit, resume=start, on_error=on_error, fallback=fallback)
    catches: list[dict[str, Any]] = []
    caught_all = False
    if linear:
        loop_start, decide = wait_loop(unit, policy, task_name)
        decide["Default"] = out_of_retries(unit, failure.start)
        catches, caught_all = loop_catches(policy, loop_start, failure.start)
        into_tail(catches, unit, failure.start)
    if not caught_all:
        catches.append(caught_into(unit, ["States.ALL"], failure.start))
    task["Catch"] = catches
    if rendering is not None:
        block.states[rendering]["Catch"] = [caught_into(unit, ["States.ALL"], failure.start)]
    return Fragment(start, [unit.completed(task), *failure.exits])
