"""Continue-as-new: a loop that goes on in a new execution every `after` iterations.

An agent in segments (steps/agent_segments.py) hands on the same way: it is compiled as a loop of
one call per segment, whose `previous` is the summary the call before returned.

Step Functions stops an execution at 25,000 history events, so a long loop hands its run on:
after `after` iterations of one execution (a *segment*), instead of its next iteration the loop
renders its `summary`, starts a new execution of its own state machine
(`states:startExecution`, fire-and-forget) with the run, the step records and the loop's next
iteration under `CONTINUE_KEY`, and its execution succeeds with `{CONTINUED_KEY: ...}`. The new
execution's run_start hands back that state, and the machine's `resume?` Choice jumps straight to
the loop's next iteration.

Fire-and-forget, not `.sync`: with `.sync` every segment would stay running until the last one
ended, a chain of open executions as long as the run (each counting toward the account's open
executions, and a segment failing would fail every one before it); handed on, each segment ends
as soon as the next has started, which is the pattern AWS documents for continuing as new.
The new execution's name is `<run id>-<segment>`, so starting it again (a retry, a redrive)
finds the same execution rather than starting a second one.
"""

from __future__ import annotations

from typing import Any

from switchyard.compile.context import context_parameters, referenced_steps, template_strings
from switchyard.compile.fragments import State
from switchyard.compile.steps.composite import DEADLINE
from switchyard.compile.steps.failure import caught_into
from switchyard.compile.steps.unit import LOOP_RESULT, Unit
from switchyard.compile.template_paths import render_task
from switchyard.contract import CONTINUE_KEY, CONTINUED_KEY
from switchyard.model import AgentStep, LoopStep, Workflow
from switchyard.model.base import Template

START_EXECUTION = "arn:aws:states:::states:startExecution"
RESUME_PATH = "$.resume"
"""Where run_start puts what a continued segment picks up: `{loop, scope[, deadline]}`."""
START_SERVICE_RETRY: dict[str, Any] = {
    "ErrorEquals": [
        "StepFunctions.ExecutionLimitExceededException",
        "StepFunctions.SdkClientException",
        "StepFunctions.AWSStepFunctionsException",
    ],
    "IntervalSeconds": 1,
    "MaxAttempts": 5,
    "BackoffRate": 2.0,
    "JitterStrategy": "FULL",
}


def continuable_steps(workflow: Workflow) -> list[str]:
    """The steps that continue as new (loops, agents), in file order."""
    return [
        step_id
        for step_id, step in workflow.steps.items()
        if isinstance(step, LoopStep | AgentStep) and step.continue_as_new is not None
    ]


def segment_scope(after: int, iteration: str) -> dict[str, Any]:
    """The `segment_end` a segment's first iteration sets: the last iteration it runs."""
    if after == 1:
        return {"segment_end.$": iteration}
    return {"segment_end.$": f"States.MathAdd({iteration}, {after - 1})"}


def resume_state(unit: Unit, after: int, first_iteration: str, *, deadline: bool) -> str:
    """The state a continued segment enters the loop by: the state rebuilt from what run_start
    handed back, then the loop's next iteration."""
    scope: dict[str, Any] = {
        "iteration.$": f"{RESUME_PATH}.scope.iteration",
        "previous.$": f"{RESUME_PATH}.scope.previous",
        "meta.$": f"{RESUME_PATH}.scope.meta",
        **segment_scope(after, f"{RESUME_PATH}.scope.iteration"),
    }
    parameters: dict[str, Any] = {
        "inputs.$": "$.inputs",
        "run.$": "$.run",
        "steps.$": "$.steps",
        "scope": scope,
    }
    if deadline:
        parameters["deadline.$"] = f"{RESUME_PATH}.deadline"
    state: State = {
        "Type": "Pass",
        "Comment": f"a continued segment: '{unit.step_id}' goes on at the iteration the segment "
        "before handed over",
        "Parameters": parameters,
        "Next": first_iteration,
    }
    return unit.block.add(unit.name("resume"), state)


def hand_on(
    unit: Unit,
    *,
    summary: dict[str, Template] | Template | None,
    deadline: bool,
    failure: str,
    why: str,
) -> str:
    """The states that end a segment: the next iteration prepared (its `previous` the rendered
    `summary`, else the last output), the next segment started, this one's output saying so.
    `deadline`: the step keeps a deadline in `$.deadline`, which the next segment goes on with.
    Returns the first state's name."""
    block = unit.block
    carry: State = {
        "Type": "Pass",
        "Comment": f"{why}: it goes on in a new execution",
        "Parameters": {
            "iteration.$": "States.MathAdd($.scope.iteration, 1)",
            "previous.$": f"{LOOP_RESULT}.output",
            "meta": {"iterations.$": "States.MathAdd($.scope.iteration, 1)"},
            "segment.$": "States.MathAdd($.run.segment, 1)",
        },
        "ResultPath": "$.scope",
    }
    carry_name = block.add(unit.name("carry on"), carry)
    previous = "$.scope.previous"
    last: State = carry
    if summary is not None:
        steps = referenced_steps(template_strings(summary))
        render = render_task(
            summary,
            context_parameters(steps, scope=True),
            step_id=unit.step_id,
            result_path="$.summary",
        )
        render["Comment"] = f"renders '{unit.step_id}''s summary, the next segment's previous"
        render["Catch"] = [caught_into(unit, ["States.ALL"], failure)]
        last["Next"] = block.add(unit.name("summary"), render)
        last = render
        previous = "$.summary.value"
    carried: dict[str, Any] = {
        "loop": unit.step_id,
        "segment.$": "$.scope.segment",
        "continued_from.$": "$$.Execution.Name",
        "run.$": "$.run",
        "inputs.$": "$.inputs",
        "steps.$": "$.steps",
        "scope": {
            "iteration.$": "$.scope.iteration",
            "previous.$": previous,
            "meta.$": "$.scope.meta",
        },
    }
    if deadline:
        carried["deadline.$"] = DEADLINE
    start: State = {
        "Type": "Task",
        "Comment": f"starts the run's next segment, where '{unit.step_id}' goes on",
        "Resource": START_EXECUTION,
        "Parameters": {
            "StateMachineArn.$": "$$.StateMachine.Id",
            "Name.$": "States.Format('{}-{}', $.run.id, $.scope.segment)",
            "Input": {CONTINUE_KEY: carried},
        },
        "ResultSelector": {"execution_arn.$": "$.ExecutionArn"},
        "ResultPath": "$.continued",
        "Retry": [START_SERVICE_RETRY],
        "Catch": [caught_into(unit, ["States.ALL"], failure)],
    }
    last["Next"] = block.add(unit.name("next segment"), start)
    ended: State = {
        "Type": "Pass",
        "Comment": "this segment is done: the run goes on in the next",
        "Parameters": {
            CONTINUED_KEY: {
                "run_id.$": "$.run.id",
                "segment.$": "$.scope.segment",
                "execution_arn.$": "$.continued.execution_arn",
            }
        },
        "End": True,
    }
    start["Next"] = block.add(unit.name("continued"), ended)
    return carry_name
