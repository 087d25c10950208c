"""Sub-workflows: the child's state machine runs as an execution of its own
(`states:startExecution.sync:2`), named from the parent run and step so that a retry, a redrive
or a recovered engine finds the same child instead of starting a second one."""

from __future__ import annotations

from typing import Any

from switchyard.compile.fragments import Exit, Fragment, State
from switchyard.compile.retry import retriers
from switchyard.compile.steps.failure import Fallback, catch, failure_path
from switchyard.compile.steps.unit import START_CHILD_SYNC, Unit
from switchyard.compile.template_paths import parameters_for, render_task
from switchyard.contract import state_machine_placeholder
from switchyard.model import OnError, SubWorkflowBody

PARENT_KEY = "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID"
RENDERED = "$.rendered"


def child_name(unit: Unit) -> str:
    """A deterministic execution name (Step Functions allows 80 characters of [0-9A-Za-z_-])."""
    parts = ["$.run.id", f"'{unit.step_id}'"]
    if unit.scope and unit.record_path == "$.result":
        parts.append("$.scope.index")
    if unit.scope and unit.record_path == "$.scope.result":
        parts.append("$.scope.iteration")
    pattern = ":".join("{}" for _ in parts)
    return f"States.Hash(States.Format('{pattern}', {', '.join(parts)}), 'SHA-1')"


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
    if pure:
        task["Parameters"]["Input"] = {**parameters, f"{PARENT_KEY}.$": "$$.Execution.Id"}
    else:
        task["Parameters"]["Input.$"] = f"{RENDERED}.value"
    timeout = unit.timeout(body)
    if timeout:
        task["TimeoutSeconds"] = timeout
    task["Retry"] = retriers(unit.retry_policy(body))
    task_name = block.add(unit.name(), task)
    start = task_name
    if not pure:
        render = render_task(
            child_input,
            unit.context(body),
            step_id=unit.step_id,
            result_path=RENDERED,
            extra={f"{PARENT_KEY}.$": "$$.Execution.Id"},
            after=list(getattr(unit.step, "after", [])),
            merge=getattr(unit.step, "merge", "by_step"),
        )
        render["Next"] = task_name
        start = block.add(unit.name("input"), render)
    if on_error is None:
        return Fragment(start, [Exit(task)])
    failure = failure_path(unit, resume=start, on_error=on_error, fallback=fallback)
    catches: list[dict[str, Any]] = [catch(["States.ALL"], failure.start)]
    task["Catch"] = catches
    if not pure:
        block.states[start]["Catch"] = [catch(["States.ALL"], failure.start)]
    return Fragment(start, [Exit(task), *failure.exits])
