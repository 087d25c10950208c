"""What happens when a step fails for good: record it, send its input to the dead-letter queue,
then its fallback, or `on_error` (fail the run, continue, or pause for an operator)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from switchyard.compile.fragments import Exit, Fragment, State, chain
from switchyard.compile.steps.gating import alive
from switchyard.compile.steps.unit import (
    LAMBDA_CALLBACK,
    LAMBDA_INVOKE,
    LAMBDA_SERVICE_RETRY,
    SQS_SEND,
    Unit,
    function,
)
from switchyard.contract import DEAD_LETTER_QUEUE_URL, FunctionName, GateKind
from switchyard.contract.errors import ALL_ERRORS, StepErrorName
from switchyard.model import OnError

ERROR_PATH = "$.error"
"""Where `Catch` puts `{Error, Cause}`; a scratch key, dropped when Parallel branches merge."""


RUN_FAILS: State = {
    "Type": "Fail",
    "Comment": "a step failed for good and its on_error is fail: the run fails with its error",
    "ErrorPath": f"{ERROR_PATH}.Error",
    "CausePath": f"{ERROR_PATH}.Cause",
}


def catch(names: list[str], target: str) -> dict[str, Any]:
    return {"ErrorEquals": names, "ResultPath": ERROR_PATH, "Next": target}


def failure_entry(task: State) -> str:
    """The first state of the failure path that `task` (a step's Task compiled with an
    `on_error`) catches `States.ALL` into: its last catch, always."""
    rules = task.get("Catch") or []
    if not rules or rules[-1]["ErrorEquals"] != [ALL_ERRORS]:
        raise ValueError("the Task has no failure path")
    return str(rules[-1]["Next"])


def read_error(unit: Unit) -> State:
    """The caught error made readable: the render function's `failure` helper turns the Cause
    (Lambda's error JSON around our functions' JSON, a gate's rejection, a child's failure, plain
    text) into its plain message, and takes the attempt number the function reported. Python
    reads every shape; `States.StringToJson` in a Pass would fail the run on a Cause that is not
    JSON, and a Pass has no Catch."""
    return {
        "Type": "Task",
        "Comment": f"reads why '{unit.step_id}' failed: the plain message, the attempts made",
        "Resource": LAMBDA_INVOKE,
        "Parameters": {
            "FunctionName": function(FunctionName.RENDER),
            "Payload": {"helper": "failure", "error.$": ERROR_PATH},
        },
        "ResultSelector": {
            "Error.$": "$.Payload.Error",
            "Cause.$": "$.Payload.Cause",
            "attempts.$": "$.Payload.attempts",
        },
        "ResultPath": ERROR_PATH,
        "Retry": [LAMBDA_SERVICE_RETRY],
    }


def error_as_is() -> State:
    """When the error cannot be read (the render function itself failed): keep it as caught."""
    return {
        "Type": "Pass",
        "Comment": "the error could not be read: it is recorded as caught",
        "Parameters": {
            "Error.$": f"{ERROR_PATH}.Error",
            "Cause.$": f"{ERROR_PATH}.Cause",
            "attempts": None,
        },
        "ResultPath": ERROR_PATH,
    }


def record_failure(unit: Unit) -> State:
    # Always the DAG step's own record, also when the failing Task is a loop's iteration.
    return {
        "Type": "Pass",
        "Comment": f"'{unit.step_id}' failed for good",
        "Parameters": {
            "status": "failed",
            "output": None,
            "error": {"type.$": f"{ERROR_PATH}.Error", "message.$": f"{ERROR_PATH}.Cause"},
            "attempts.$": f"{ERROR_PATH}.attempts",
        },
        "ResultPath": unit.step_record,
    }


def failed_input(unit: Unit) -> dict[str, Any]:
    """What the step received: the parts of the state its Task reads (the run's inputs, the
    records of the steps its templates read and of its `after` steps, its `scope` inside a
    loop), as the Task's own payload names them; the run travels beside it."""
    context = unit.context(unit.step)
    context.pop("run.$", None)
    return context


def dead_letter(unit: Unit) -> State:
    return {
        "Type": "Task",
        "Comment": f"the failed input of '{unit.step_id}' goes to the dead-letter queue",
        "Resource": SQS_SEND,
        "Parameters": {
            "QueueUrl": DEAD_LETTER_QUEUE_URL,
            "MessageBody": {
                "workflow": unit.workflow.name,
                "version": unit.workflow.version,
                "run.$": "$.run",
                "step_id": unit.step_id,
                "error.$": f"{unit.step_record}.error",
                "input": failed_input(unit),
            },
        },
        "ResultPath": None,
        "Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 2}],
    }


def gate_task(unit: Unit, kind: GateKind, resume: str, *, comment: str) -> State:
    """A task token that waits for an operator; on success the step runs again from `resume`."""
    return {
        "Type": "Task",
        "Comment": comment,
        "Resource": LAMBDA_CALLBACK,
        "Parameters": {
            "FunctionName": function(FunctionName.APPROVAL_NOTIFY),
            "Payload": {
                "kind": kind.value,
                "step_id": unit.step_id,
                "workflow": unit.workflow_info(budget=False),
                "context": {"run.$": "$.run", **({"scope.$": "$.scope"} if unit.scope else {})},
                "error.$": ERROR_PATH,
                "task_token.$": "$$.Task.Token",
                "execution_arn.$": "$$.Execution.Id",
            },
        },
        "ResultPath": None,
        "Next": resume,
    }


@dataclass(frozen=True)
class Fallback:
    """The step that stands in when a step fails for good, compiled on demand in place."""

    step_id: str
    compile: Callable[[], Fragment]


def failure_path(
    unit: Unit, *, resume: str, on_error: OnError, fallback: Fallback | None = None
) -> Fragment:
    """Everything after a step's last failed attempt; its exits continue the workflow."""
    block = unit.block
    read_state = read_error(unit)
    read = block.add(unit.name("error"), read_state)
    as_is_state = error_as_is()
    read_state["Catch"] = [
        {
            "ErrorEquals": ["States.ALL"],
            "ResultPath": None,
            "Next": block.add(unit.name("error as is"), as_is_state),
        }
    ]
    failed_state = record_failure(unit)
    failed = block.add(unit.name("failed"), failed_state)
    read_state["Next"] = as_is_state["Next"] = failed
    letter_state = dead_letter(unit)
    letter = block.add(unit.name("dead letter"), letter_state)
    failed_state["Next"] = letter
    letter_state["Catch"] = [{"ErrorEquals": ["States.ALL"], "ResultPath": None, "Next": ""}]
    head = Fragment(read, [Exit(letter_state), Exit(letter_state, rule=letter_state["Catch"][0])])
    if fallback is not None:
        return _with_fallback(unit, head, fallback.compile(), fallback.step_id)
    if on_error is OnError.CONTINUE:
        return head
    if on_error is OnError.PAUSE:
        paused = block.add(
            unit.name("paused"),
            gate_task(
                unit,
                GateKind.PAUSE,
                resume,
                comment=f"the run is paused at '{unit.step_id}': resume runs it again, cancel "
                "ends the run",
            ),
        )
        for exit_ in head.exits:
            exit_.wire(paused)
        return Fragment(read, [])
    stop = block.shared("fail", RUN_FAILS)
    for exit_ in head.exits:
        exit_.wire(stop)
    return Fragment(read, [])


def _with_fallback(unit: Unit, head: Fragment, fallback: Fragment, fallback_id: str) -> Fragment:
    block = unit.block
    rescued: State = {
        "Type": "Pass",
        "Comment": f"the output of '{fallback_id}' stands in for '{unit.step_id}'",
        "Parameters": {
            "status": "failed",
            "error.$": f"{unit.step_record}.error",
            "output.$": f"$.steps.{fallback_id}.output",
            "fallback": fallback_id,
        },
        "ResultPath": unit.step_record,
    }
    rescued_name = block.add(unit.name("rescued"), rescued)
    stand_in = Unit(unit.workflow, fallback_id, block)
    decide: State = {
        "Type": "Choice",
        "Choices": [{**alive(stand_in, fallback_id), "Next": rescued_name}],
    }
    decide_name = block.add(unit.name("fallback done"), decide)
    after_fallback = Fragment(decide_name, [Exit(rescued), Exit(decide, default=True)])
    joined = chain(head, fallback, after_fallback)
    assert joined is not None
    return joined


def budget_and_human_catches(
    unit: Unit, resume: str, *, can_need_human: bool
) -> list[dict[str, Any]]:
    """Catch rules that park the run for a person: a refused budget, and (when the step can
    raise it) a step needing a human."""
    block = unit.block
    catches: list[dict[str, Any]] = []
    budget = unit.workflow.budget
    if budget is None or budget.on_exceeded == "pause":
        waiting = block.add(
            unit.name("over budget"),
            gate_task(
                unit,
                GateKind.BUDGET,
                resume,
                comment=f"'{unit.step_id}' did not fit the budget: the run is paused until an "
                "operator raises the budget and resumes, or cancels",
            ),
        )
        catches.append(catch([StepErrorName.BUDGET.value], waiting))
    else:
        stop = block.add(
            unit.name("budget exceeded"),
            {
                "Type": "Fail",
                "Error": StepErrorName.BUDGET.value,
                "CausePath": f"{ERROR_PATH}.Cause",
            },
        )
        catches.append(catch([StepErrorName.BUDGET.value], stop))
    if not can_need_human:
        return catches
    human = block.add(
        unit.name("needs a human"),
        gate_task(
            unit,
            GateKind.HUMAN,
            resume,
            comment=f"'{unit.step_id}' needs a person (a tool call to approve, a loop to judge, an "
            "unknown outcome); it runs again with the decision",
        ),
    )
    catches.append(catch([StepErrorName.HUMAN_REQUIRED.value], human))
    return catches
